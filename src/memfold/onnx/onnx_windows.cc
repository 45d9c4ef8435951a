// ONNX window operators (Conv, ConvTranspose, pools, batch norm, Resize) as memfold's NHWC
// window ops: ONNX's pads resolved, weights transposed at import, QDQ forms onto int8 kernels.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "memfold/onnx/onnx_converters.h"

namespace memfold::onnx_import {

// --- windows

namespace {

struct Window {
  Ints kernel, strides, dilations;
  Ints pads;  // memfold's order: top, bottom, left, right
};

// ONNX's pads [top, left, bottom, right] or auto_pad, resolved to explicit pads.
Result<Window> ReadWindow(Importer& im, const Shape& in, Ints kernel) {
  Window w;
  w.kernel = std::move(kernel);
  w.strides = im.Ints("strides", {1, 1});
  w.dilations = im.Ints("dilations", {1, 1});
  if (w.kernel.size() != 2 || w.strides.size() != 2 || w.dilations.size() != 2)
    return im.Error("needs 2-D kernel_shape, strides and dilations");
  for (size_t d = 0; d < 2; ++d) {
    if (w.strides[d] < 1 || w.dilations[d] < 1 || w.kernel[d] < 1)
      return im.Error("has a kernel size, stride or dilation below 1");
  }
  const std::string auto_pad = im.Str("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    const Ints p = im.Ints("pads", {0, 0, 0, 0});
    if (p.size() != 4) return im.Error("needs 4 pads");
    w.pads = {p[0], p[2], p[1], p[3]};
  } else if (auto_pad == "VALID") {
    w.pads = {0, 0, 0, 0};
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t d = 0; d < 2; ++d) {
      const int64_t out = (in[d + 2] + w.strides[d] - 1) / w.strides[d];
      const int64_t span = (w.kernel[d] - 1) * w.dilations[d] + 1;
      const int64_t total = std::max<int64_t>((out - 1) * w.strides[d] + span - in[d + 2], 0);
      const int64_t small = total / 2;
      const int64_t begin = auto_pad == "SAME_UPPER" ? small : total - small;
      w.pads.push_back(begin);
      w.pads.push_back(total - begin);
    }
  } else {
    return im.Error("has auto_pad '" + auto_pad + "'");
  }
  return w;
}

// TFLite's name for the pads when they are its SAME or VALID padding of `in` (NCHW), so the
// graph writes as a TFLite file and reads as the converter's output would; else "explicit".
std::string PaddingName(const Window& w, const Shape& in) {
  if (std::all_of(w.pads.begin(), w.pads.end(), [](int64_t p) { return p == 0; })) return "valid";
  for (size_t d = 0; d < 2; ++d) {
    const int64_t out = (in[d + 2] + w.strides[d] - 1) / w.strides[d];
    const int64_t span = (w.kernel[d] - 1) * w.dilations[d] + 1;
    const int64_t total = std::max<int64_t>((out - 1) * w.strides[d] + span - in[d + 2], 0);
    if (w.pads[2 * d] != total / 2 || w.pads[2 * d + 1] != total - total / 2) return "explicit";
  }
  return "same";
}

Attrs WindowAttrs(const Window& w, const Shape& in) {
  const std::string padding = PaddingName(w, in);
  Attrs attrs{{"stride", w.strides}, {"dilation", w.dilations}, {"padding", padding}};
  if (padding == "explicit") attrs.Set("pads", w.pads);
  return attrs;
}

}  // namespace

// The integer operands of a QDQ layer: an int8 activation, int8 weights with zero points 0
// (per tensor or per channel along `weight_axis` of the ONNX weights) and an int32 bias or none.
// nullopt when the node's inputs are not all of that form.
std::optional<Int8Operands> Int8Inputs(const Importer& im, int weight_axis) {
  const std::optional<Tensor> x = im.QuantizedInput(0), w = im.QuantizedInput(1);
  if (!x || !w || im.ValueOf(*x).dtype != DType::kI8 || im.IsConstant(*x) || !im.IsConstant(*w) ||
      im.ValueOf(*w).dtype != DType::kI8 || !im.ValueOf(*w).quant)
    return std::nullopt;
  const Quantization& wq = *im.ValueOf(*w).quant;
  if (std::any_of(wq.zero_point.begin(), wq.zero_point.end(), [](int64_t z) { return z != 0; }) ||
      (wq.per_channel() && wq.axis != weight_axis))
    return std::nullopt;
  Int8Operands ops{*x, *w, std::nullopt};
  if (im.HasInput(2)) {
    ops.bias = im.QuantizedInput(2);
    if (!ops.bias || !im.IsConstant(*ops.bias) || im.ValueOf(*ops.bias).dtype != DType::kI32)
      return std::nullopt;
  }
  return ops;
}

Status Conv(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.RawInput(0));
  MF_ASSIGN_OR_RETURN(Tensor w, im.RawInput(1));
  if (im.Rank(x) != 4) return im.Opaque("memfold converts 2-D convolutions (NCHW inputs)");
  if (!im.IsConstant(w)) return im.Opaque("its weights are computed at run time");
  const Shape in = im.OnnxShape(x), ws = im.OnnxShape(w);
  if (ws.size() != 4) return im.Error("needs 4-D weights, has " + ShapeString(ws));
  MF_ASSIGN_OR_RETURN(Window win, ReadWindow(im, in, im.Ints("kernel_shape", {ws[2], ws[3]})));
  const int64_t group = im.Int("group", 1);
  const bool depthwise = group > 1 && group == in[1] && ws[1] == 1;
  if (group < 1 || in[1] % group != 0 || ws[1] * group != in[1])
    return im.Error("weights " + ShapeString(ws) + " do not fit " + std::to_string(in[1]) +
                    " input channels in " + std::to_string(group) + " groups");
  // ONNX [O, I/g, kh, kw] -> memfold [O, kh, kw, I/g], or depthwise [1, kh, kw, O].
  const Ints perm = depthwise ? Ints{1, 2, 3, 0} : Ints{0, 2, 3, 1};
  Attrs attrs = WindowAttrs(win, in);
  if (depthwise) attrs.Set("multiplier", ws[0] / in[1]);
  const std::string_view op = depthwise ? "depthwise_conv2d" : "conv2d";
  const std::optional<QuantizedOutput> out = im.QuantizedConsumer(0);
  const std::optional<Int8Operands> q = out ? Int8Inputs(im, 0) : std::nullopt;
  if (q) {  // QDQ: the integer convolution, requantised into the QuantizeLinear's parameters
    x = q->x;
    w = q->w;
    attrs.Set("activation", out->activation);
  } else {
    MF_ASSIGN_OR_RETURN(x, im.Input(0));
    MF_ASSIGN_OR_RETURN(w, im.Input(1));
  }
  MF_ASSIGN_OR_RETURN(ValueId filter, im.Emit("transpose", {w.id}, {{"perm", perm}}));
  MF_ASSIGN_OR_RETURN(ValueId input, im.ChannelsLast(x));
  std::vector<ValueId> inputs{input, filter};
  if (im.HasInput(2)) {
    MF_ASSIGN_OR_RETURN(Tensor b, q ? Result<Tensor>(*q->bias) : im.Input(2));
    inputs.push_back(b.id);
  }
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit(op, inputs, attrs));
  if (q) return im.QuantizedResult(y, *out, true);
  return im.Output(0, y, true);
}

Status ConvTranspose(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.RawInput(0));
  MF_ASSIGN_OR_RETURN(Tensor w, im.RawInput(1));
  if (im.Rank(x) != 4 || !im.IsConstant(w) || im.Int("group", 1) != 1)
    return im.Opaque("memfold converts 2-D, ungrouped transposed convolutions of constant weights");
  const Shape in = im.OnnxShape(x), ws = im.OnnxShape(w);
  const Ints strides = im.Ints("strides", {1, 1});
  const Ints pads = im.Ints("pads", {0, 0, 0, 0});
  const Ints extra = im.Ints("output_padding", {0, 0});
  if (im.Ints("dilations", {1, 1}) != Ints{1, 1} || im.Str("auto_pad", "NOTSET") != "NOTSET" ||
      im.Attr("output_shape") != nullptr || strides.size() != 2 || ws.size() != 4 ||
      pads.size() != 4 || extra.size() != 2)
    return im.Opaque(
        "memfold converts transposed convolutions without dilation, auto_pad or output_shape");
  // ONNX's output is the full transposed convolution cropped by the pads, output_padding rows
  // and columns kept at the end; they lie inside the full one while output_padding <= the end pad.
  for (size_t d = 0; d < 2; ++d) {
    if (pads[d] < 0 || pads[d + 2] < 0 || extra[d] < 0 || extra[d] > pads[d + 2] ||
        extra[d] >= strides[d])
      return im.Opaque(
          "memfold converts transposed convolutions whose output_padding is within "
          "the end pads");
  }
  // QDQ: int8 weights [C_in, C_out, kh, kw], quantized per output channel (axis 1).
  const std::optional<QuantizedOutput> quantized = im.QuantizedConsumer(0);
  const std::optional<Int8Operands> q = quantized ? Int8Inputs(im, 1) : std::nullopt;
  if (q) {
    x = q->x;
    w = q->w;
  } else {
    MF_ASSIGN_OR_RETURN(x, im.Input(0));
    MF_ASSIGN_OR_RETURN(w, im.Input(1));
  }
  // ONNX [C_in, C_out, kh, kw] -> memfold [C_out, kh, kw, C_in].
  MF_ASSIGN_OR_RETURN(ValueId filter, im.Emit("transpose", {w.id}, {{"perm", Ints{1, 2, 3, 0}}}));
  MF_ASSIGN_OR_RETURN(ValueId input, im.ChannelsLast(x));
  std::vector<ValueId> inputs{input, filter};
  if (im.HasInput(2)) {
    MF_ASSIGN_OR_RETURN(Tensor b, q ? Result<Tensor>(*q->bias) : im.Input(2));
    inputs.push_back(b.id);
  }
  const Ints out{in[0], (in[2] - 1) * strides[0] + ws[2], (in[3] - 1) * strides[1] + ws[3], ws[1]};
  MF_ASSIGN_OR_RETURN(
      ValueId y,
      im.Emit("transpose_conv", inputs,
              {{"stride", strides}, {"padding", std::string("valid")}, {"output_shape", out}}));
  if (q) im.graph().value(y).quant = quantized->quant;  // the kernel's output scale
  if (q && quantized->activation != "none") {
    // A Relu the QDQ match folded in, as its own int8 op: TFLM's int8 TRANSPOSE_CONV does not
    // apply a fused activation (tests/kernels/tflm_golden_test.cc).
    MF_ASSIGN_OR_RETURN(y, im.Emit(quantized->activation, {y}));
    im.graph().value(y).quant = quantized->quant;
  }
  if (std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; })) {
    const Ints size{out[0], out[1] - pads[0] - pads[2] + extra[0],
                    out[2] - pads[1] - pads[3] + extra[1], out[3]};
    if (size[1] < 1 || size[2] < 1) return im.Error("crops the whole output away");
    MF_ASSIGN_OR_RETURN(
        y, im.Emit("slice", {y}, {{"begin", Ints{0, pads[0], pads[1], 0}}, {"size", size}}));
  }
  if (q) return im.QuantizedResult(y, *quantized, true);
  return im.Output(0, y, true);
}

Status Pool(Importer& im, std::string_view op) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.RawInput(0));
  if (im.Rank(x) != 4) return im.Opaque("memfold converts 2-D pooling (NCHW inputs)");
  if (im.node().output_size() > 1 && !im.node().output(1).empty())
    return im.Opaque("memfold does not compute MaxPool's indices");
  const Shape in = im.OnnxShape(x);
  MF_ASSIGN_OR_RETURN(Window win, ReadWindow(im, in, im.Ints("kernel_shape")));
  if (win.dilations != Ints{1, 1}) return im.Opaque("memfold pools without dilation");
  const bool average = op == "avg_pool2d";
  if (im.Int("ceil_mode", 0) != 0) {
    for (size_t d = 0; d < 2; ++d) {
      const int64_t room = in[d + 2] + win.pads[2 * d] + win.pads[2 * d + 1] - win.kernel[d];
      const int64_t extra = (win.strides[d] - room % win.strides[d]) % win.strides[d];
      // ONNX drops a last window that would start in the end padding.
      const bool kept = (room / win.strides[d] + 1) * win.strides[d] < in[d + 2] + win.pads[2 * d];
      if (extra == 0 || !kept) continue;
      if (average) return im.Opaque("memfold's average pool has no ceil_mode");
      win.pads[2 * d + 1] += extra;
    }
  }
  const bool padded = std::any_of(win.pads.begin(), win.pads.end(), [](int64_t p) { return p; });
  const bool count_pads = average && padded && im.Int("count_include_pad", 0) != 0;
  // int8: a max pool of quantized values is exact; an average pool needs its output quantized
  // as its input (TFLite's int8 kernel).
  std::optional<QuantizedOutput> out;
  bool int8 = Int8Activation(im, 0).has_value() && !count_pads;
  if (int8 && average) {
    out = im.QuantizedConsumer(0);
    int8 = out && SameQuantization(out->quant, *im.ValueOf(x).quant);
  }
  if (!int8) {
    MF_ASSIGN_OR_RETURN(x, im.Input(0));
  }
  MF_ASSIGN_OR_RETURN(ValueId input, im.ChannelsLast(x));
  if (count_pads) {  // zeros counted in the average: pad explicitly, then pool without padding
    const Ints paddings{0, 0, win.pads[0], win.pads[1], win.pads[2], win.pads[3], 0, 0};
    MF_ASSIGN_OR_RETURN(input, im.Emit("pad", {input}, {{"paddings", paddings}}));
    win.pads = {0, 0, 0, 0};
  }
  Attrs attrs = WindowAttrs(win, in);
  attrs.Set("filter", win.kernel);
  Attrs pool;
  for (const auto& [name, value] : attrs.items()) {
    if (name != "dilation") pool.Set(name, value);
  }
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit(op, {input}, pool));
  if (out && int8) return im.QuantizedResult(y, *out, true);
  if (int8) im.graph().value(y).quant = im.ValueOf(x).quant;
  return MovedOutput(im, y, true, int8);
}

Status GlobalPool(Importer& im, std::string_view op) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.RawInput(0));
  if (im.Rank(x) < 3) return im.Error("needs an input of rank >= 3");
  // int8 mean (TFLite's kernel requantises into the output's parameters)
  const std::optional<QuantizedOutput> out = op == "mean" ? im.QuantizedConsumer(0) : std::nullopt;
  const bool int8 = out && Int8Activation(im, 0);
  if (!int8) {
    MF_ASSIGN_OR_RETURN(x, im.Input(0));
  }
  MF_ASSIGN_OR_RETURN(ValueId input, im.ChannelsLast(x));
  Ints axes;
  for (int d = 1; d + 1 < im.Rank(x); ++d) axes.push_back(d);
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit(op, {input}, {{"axes", axes}, {"keepdims", int64_t{1}}}));
  if (int8) return im.QuantizedResult(y, *out, true);
  return im.Output(0, y, true);
}

Status BatchNormalization(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  if (im.Int("training_mode", 0) != 0 || im.node().output_size() > 1)
    return im.Opaque("memfold converts inference batch normalisation");
  std::vector<std::vector<double>> p;
  for (int k = 1; k <= 4; ++k) {
    MF_ASSIGN_OR_RETURN(Tensor t, im.Input(k));
    MF_ASSIGN_OR_RETURN(std::vector<double> v, im.ConstDoubles(t, "a statistic"));
    p.push_back(std::move(v));
  }
  const size_t c = p[0].size();
  if (im.Rank(x) < 2 || static_cast<int64_t>(c) != im.OnnxShape(x)[1] ||
      std::any_of(p.begin(), p.end(), [&](const auto& v) { return v.size() != c; }))
    return im.Error("needs a scale, bias, mean and variance per channel");
  const double eps = im.Float("epsilon", 1e-5);
  std::vector<float> scale(c), shift(c);
  for (size_t k = 0; k < c; ++k) {
    const double s = p[0][k] / std::sqrt(p[3][k] + eps);
    scale[k] = static_cast<float>(s);
    shift[k] = static_cast<float>(p[1][k] - p[2][k] * s);
  }
  const bool last = im.Rank(x) >= 3;
  ValueId input = x.id;
  if (last) {
    MF_ASSIGN_OR_RETURN(input, im.ChannelsLast(x));
  }
  const auto n = static_cast<int64_t>(c);
  MF_ASSIGN_OR_RETURN(ValueId scaled, im.Emit("mul", {input, im.FloatConstant({n}, scale)}));
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("add", {scaled, im.FloatConstant({n}, shift)}));
  return im.Output(0, y, last);
}

Status Resize(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.RawInput(0));
  if (im.Rank(x) != 4) return im.Opaque("memfold resizes NCHW images");
  const Shape in = im.OnnxShape(x);
  Shape out = in;
  if (im.HasInput(3)) {
    MF_ASSIGN_OR_RETURN(Tensor s, im.Input(3));
    MF_ASSIGN_OR_RETURN(Ints sizes, im.ConstInts(s, "sizes"));
    if (sizes.size() != 4) return im.Opaque("memfold resizes with sizes for every axis");
    out = sizes;
  } else {
    MF_ASSIGN_OR_RETURN(Tensor s, im.Input(2));
    MF_ASSIGN_OR_RETURN(std::vector<double> scales, im.ConstDoubles(s, "scales"));
    if (scales.size() != 4) return im.Opaque("memfold resizes with scales for every axis");
    for (size_t d = 0; d < 4; ++d) {
      const double size = std::floor(static_cast<double>(in[d]) * scales[d]);
      if (!(size >= 1 && size <= static_cast<double>(kMaxValue)))  // NaN too
        return im.Error("scales axis " + std::to_string(d) + " to " + std::to_string(size));
      out[d] = static_cast<int64_t>(size);
    }
  }
  if (out[0] != in[0] || out[1] != in[1]) return im.Opaque("memfold resizes height and width only");
  const std::string mode = im.Str("mode", "nearest");
  const std::string coords = im.Str("coordinate_transformation_mode", "half_pixel");
  Attrs attrs{{"size", Ints{out[2], out[3]}}};
  std::string op;
  if (mode == "nearest" && coords == "asymmetric" &&
      im.Str("nearest_mode", "round_prefer_floor") == "floor") {
    op = "resize_nearest_neighbor";
  } else if (mode == "linear" && (coords == "half_pixel" || coords == "pytorch_half_pixel")) {
    op = "resize_bilinear";
    attrs.Set("half_pixel_centers", int64_t{1});
  } else if (mode == "linear" && (coords == "align_corners" || coords == "asymmetric")) {
    op = "resize_bilinear";
    attrs.Set("align_corners", int64_t{coords == "align_corners"});
  } else {
    return im.Opaque("memfold has no resize of mode " + mode + " with " + coords + " coordinates");
  }
  // int8 when its quantized input is quantized next with the same parameters (TFLite's int8
  // resize keeps them).
  const std::optional<QuantizedOutput> out_q = im.QuantizedConsumer(0);
  const bool int8 =
      out_q && Int8Activation(im, 0) && SameQuantization(out_q->quant, *im.ValueOf(x).quant);
  if (!int8) {
    MF_ASSIGN_OR_RETURN(x, im.Input(0));
  }
  MF_ASSIGN_OR_RETURN(ValueId input, im.ChannelsLast(x));
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit(op, {input}, attrs));
  if (int8) return im.QuantizedResult(y, *out_q, true);
  return im.Output(0, y, true);
}

}  // namespace memfold::onnx_import
