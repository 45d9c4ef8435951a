// The one mapping table from ONNX operators (default domain) to memfold's registry ops, with a
// converter per operator written in the importer's terms (onnx_importer.h). Nothing else in
// memfold switches on ONNX operator names. A variant a converter cannot express exactly (an
// attribute memfold's kernels have no form for) becomes an opaque node, never an approximation.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "memfold/onnx/onnx_importer.h"

namespace memfold::onnx_import {
namespace {

using Ints = std::vector<int64_t>;

int64_t Product(const Shape& shape, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t d = from; d < to && d < shape.size(); ++d) n *= shape[d];
  return n;
}

// --- elementwise

Status UnaryOp(Importer& im, std::string_view op, Attrs attrs = {}) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit(op, {x.id}, std::move(attrs)));
  return im.Output(0, y, x.channels_last);
}

Status PassThrough(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  if (im.node().output_size() > 1 && !im.node().output(1).empty())
    return im.Opaque("its mask output is not computed by memfold");
  return im.Output(0, x.id, x.channels_last);
}

bool IsScalar(const Importer& im, Tensor t) { return im.ValueOf(t).elements() == 1; }

bool SameQuantization(const Quantization& a, const Quantization& b) {
  return a.scale == b.scale && a.zero_point == b.zero_point &&
         (!a.per_channel() || a.axis == b.axis);
}

// An int8 activation held quantized (a DequantizeLinear's output), or nullopt.
std::optional<Tensor> Int8Activation(const Importer& im, int k) {
  std::optional<Tensor> t = im.QuantizedInput(k);
  if (!t || im.IsConstant(*t) || im.ValueOf(*t).dtype != DType::kI8) return std::nullopt;
  return t;
}

// Binds output 0 to a data movement's result: quantized when its input was (moving bytes
// commutes with dequantizing them).
Status MovedOutput(Importer& im, ValueId y, bool channels_last, bool quantized) {
  if (quantized) return im.OutputQuantized(0, y, channels_last);
  return im.Output(0, y, channels_last);
}

// Both operands in one layout: channels-last when either is and the result has rank >= 3
// (one-element operands broadcast as they are), else ONNX's.
Result<std::vector<ValueId>> Operands(Importer& im, const std::vector<Tensor>& ts,
                                      bool* channels_last) {
  int rank = 0;
  bool any_last = false;
  for (const Tensor& t : ts) {
    rank = std::max(rank, im.Rank(t));
    any_last = any_last || t.channels_last;
  }
  *channels_last = any_last && rank >= 3;
  std::vector<ValueId> ids;
  for (const Tensor& t : ts) {
    if (*channels_last && IsScalar(im, t)) {
      ids.push_back(t.id);
      continue;
    }
    MF_ASSIGN_OR_RETURN(ValueId id, *channels_last ? im.ChannelsLast(t, rank) : im.Plain(t));
    ids.push_back(id);
  }
  return ids;
}

// QDQ Add of two int8 activations into a QuantizeLinear: the integer add.
Result<bool> QuantizedAdd(Importer& im) {
  const std::optional<QuantizedOutput> out = im.QuantizedConsumer(0);
  const std::optional<Tensor> a = Int8Activation(im, 0), b = Int8Activation(im, 1);
  if (!out || !a || !b || im.num_inputs() != 2) return false;
  bool last = false;
  MF_ASSIGN_OR_RETURN(std::vector<ValueId> ids, Operands(im, {*a, *b}, &last));
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("add", ids, {{"activation", out->activation}}));
  MF_RETURN_IF_ERROR(im.QuantizedResult(y, *out, last));
  return true;
}

Status NaryOp(Importer& im, std::string_view op) {
  if (op == "add") {
    MF_ASSIGN_OR_RETURN(bool quantized, QuantizedAdd(im));
    if (quantized) return Status::Ok();
  }
  std::vector<Tensor> ts;
  for (int k = 0; k < im.num_inputs(); ++k) {
    MF_ASSIGN_OR_RETURN(Tensor t, im.Input(k));
    ts.push_back(t);
  }
  bool last = false;
  MF_ASSIGN_OR_RETURN(std::vector<ValueId> ids, Operands(im, ts, &last));
  ValueId acc = ids.front();
  for (size_t k = 1; k < ids.size(); ++k) {
    MF_ASSIGN_OR_RETURN(acc, im.Emit(op, {acc, ids[k]}));
  }
  return im.Output(0, acc, last);
}

Status Where(Importer& im) {
  std::vector<Tensor> ts;
  for (int k = 0; k < 3; ++k) {
    MF_ASSIGN_OR_RETURN(Tensor t, im.Input(k));
    ts.push_back(t);
  }
  bool last = false;
  MF_ASSIGN_OR_RETURN(std::vector<ValueId> ids, Operands(im, ts, &last));
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("select_v2", ids));
  return im.Output(0, y, last);
}

Result<ValueId> Scalar(Importer& im, double value) {
  return im.FloatConstant({}, {static_cast<float>(value)});
}

// Mod of constants (shape arithmetic); of computed tensors, opaque.
Status Mod(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor a, im.Input(0));
  MF_ASSIGN_OR_RETURN(Tensor b, im.Input(1));
  if (!im.IsConstant(a) || !im.IsConstant(b))
    return im.Opaque("memfold folds Mod of constants only");
  return NaryOp(im, im.Int("fmod", 0) != 0 ? "fmod" : "mod");
}

Status Pow(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  MF_ASSIGN_OR_RETURN(Tensor e, im.Input(1));
  if (im.IsConstant(x) && im.IsConstant(e)) return NaryOp(im, "pow");
  if (!im.IsConstant(e) || !IsScalar(im, e) || im.ValueOf(x).dtype != DType::kF32)
    return im.Opaque("memfold runs Pow with a constant exponent of 1, 2 or 0.5");
  MF_ASSIGN_OR_RETURN(std::vector<double> p, im.ConstDoubles(e, "the exponent"));
  if (p[0] == 1) return im.Output(0, x.id, x.channels_last);
  if (p[0] == 2) return UnaryOp(im, "square");
  if (p[0] == 0.5) return UnaryOp(im, "sqrt");
  return im.Opaque("memfold runs Pow with a constant exponent of 1, 2 or 0.5");
}

Status Reciprocal(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  MF_ASSIGN_OR_RETURN(ValueId one, Scalar(im, 1.0));
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("div", {one, x.id}));
  return im.Output(0, y, x.channels_last);
}

Status Activation(Importer& im, const std::string& name) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  if (im.FuseActivation(x, name)) return im.Output(0, x.id, x.channels_last);
  return UnaryOp(im, name);
}

// min(max(x, lo), hi); an absent or infinite bound is no bound.
Status Clamp(Importer& im, Tensor x, std::optional<double> lo, std::optional<double> hi) {
  ValueId y = x.id;
  if (lo && !std::isinf(*lo)) {
    MF_ASSIGN_OR_RETURN(ValueId c, Scalar(im, *lo));
    MF_ASSIGN_OR_RETURN(y, im.Emit("max", {y, c}));
  }
  if (hi && !std::isinf(*hi)) {
    MF_ASSIGN_OR_RETURN(ValueId c, Scalar(im, *hi));
    MF_ASSIGN_OR_RETURN(y, im.Emit("min", {y, c}));
  }
  return im.Output(0, y, x.channels_last);
}

Status Clip(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  if (im.ValueOf(x).dtype != DType::kF32) return im.Opaque("memfold clips float32 tensors");
  auto bound = [&](int k, const char* attr, double fallback) -> Result<std::optional<double>> {
    if (im.opset() < 11) return std::optional<double>(im.Float(attr, fallback));
    if (!im.HasInput(k)) return std::optional<double>();
    MF_ASSIGN_OR_RETURN(Tensor t, im.Input(k));
    MF_ASSIGN_OR_RETURN(std::vector<double> v, im.ConstDoubles(t, "Clip's bound"));
    if (v.size() != 1) return im.Error("Clip's bounds must be scalars");
    return std::optional<double>(v[0]);
  };
  MF_ASSIGN_OR_RETURN(std::optional<double> lo, bound(1, "min", -INFINITY));
  MF_ASSIGN_OR_RETURN(std::optional<double> hi, bound(2, "max", INFINITY));
  const bool from_zero = lo && *lo == 0;
  if (from_zero && (!hi || std::isinf(*hi))) return Activation(im, "relu");
  if (from_zero && hi && *hi == 6) return Activation(im, "relu6");
  return Clamp(im, x, lo, hi);
}

Status HardSigmoid(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  MF_ASSIGN_OR_RETURN(ValueId alpha, Scalar(im, im.Float("alpha", 0.2)));
  MF_ASSIGN_OR_RETURN(ValueId beta, Scalar(im, im.Float("beta", 0.5)));
  MF_ASSIGN_OR_RETURN(ValueId ax, im.Emit("mul", {x.id, alpha}));
  MF_ASSIGN_OR_RETURN(ValueId axb, im.Emit("add", {ax, beta}));
  return Clamp(im, {axb, x.channels_last}, 0.0, 1.0);
}

Status Gelu(Importer& im) {
  if (im.Str("approximate", "none") != "none")
    return im.Opaque("memfold's gelu is the exact (erf) form");
  return UnaryOp(im, "gelu");
}

Status Elu(Importer& im) {
  if (im.Float("alpha", 1.0) != 1.0) return im.Opaque("memfold's elu has alpha 1");
  return UnaryOp(im, "elu");
}

Status Cast(Importer& im) {
  const std::optional<DType> to = DTypeOfOnnx(static_cast<int32_t>(im.Int("to", 0)));
  if (!to) return im.Opaque("it casts to a type memfold does not store");
  return UnaryOp(im, "cast", {{"dtype", std::string(DTypeName(*to))}});
}

// --- windows

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

// The integer operands of a QDQ layer: an int8 activation, int8 weights with zero points 0
// (per tensor or per channel along `weight_axis` of the ONNX weights) and an int32 bias or none.
// nullopt when the node's inputs are not all of that form.
struct Int8Operands {
  Tensor x, w;
  std::optional<Tensor> bias;
};
std::optional<Int8Operands> Int8Inputs(const Importer& im, int weight_axis) {
  const std::optional<Tensor> x = im.QuantizedInput(0), w = im.QuantizedInput(1);
  if (!x || !w || im.ValueOf(*x).dtype != DType::kI8 || im.IsConstant(*x) || !im.IsConstant(*w) ||
      im.ValueOf(*w).dtype != DType::kI8)
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
  const Ints zeros{0, 0};
  if (im.Ints("dilations", {1, 1}) != Ints{1, 1} || im.Ints("output_padding", zeros) != zeros ||
      pads != Ints{0, 0, 0, 0} || im.Str("auto_pad", "NOTSET") != "NOTSET" ||
      im.Attr("output_shape") != nullptr || strides.size() != 2 || ws.size() != 4)
    return im.Opaque("memfold converts transposed convolutions without padding or dilation");
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
    for (size_t d = 0; d < 4; ++d)
      out[d] = static_cast<int64_t>(std::floor(static_cast<double>(in[d]) * scales[d]));
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

// --- shapes and data movement

// `x` as read by RawInput: a quantized tensor is reshaped in its integer form.
Status ReshapeTo(Importer& im, Tensor x, const Shape& shape) {
  MF_ASSIGN_OR_RETURN(ValueId input, im.Plain(x));
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("reshape", {input}, {{"shape", shape}}));
  return MovedOutput(im, y, false, x.quantized);
}

Status Reshape(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.RawInput(0));
  MF_ASSIGN_OR_RETURN(Tensor s, im.Input(1));
  MF_ASSIGN_OR_RETURN(Ints shape, im.ConstInts(s, "the shape"));
  const Shape in = im.OnnxShape(x);
  const bool allow_zero = im.Int("allowzero", 0) != 0;
  int64_t known = 1, unknown = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0 && !allow_zero) {
      if (d >= in.size()) return im.Error("copies dimension " + std::to_string(d) + " it lacks");
      shape[d] = in[d];
    }
    if (shape[d] == -1) {
      if (unknown >= 0) return im.Error("has two -1 dimensions");
      unknown = static_cast<int64_t>(d);
    } else if (shape[d] < 0) {
      return im.Error("has a negative dimension");
    } else {
      MF_RETURN_IF_ERROR(im.CheckedElements({known, shape[d]}).status());
      known *= shape[d];
    }
  }
  if (unknown >= 0) {
    if (known == 0) return im.Error("cannot infer -1 beside a 0 dimension");
    shape[static_cast<size_t>(unknown)] = NumElements(in) / known;
  }
  return ReshapeTo(im, x, shape);
}

Status Flatten(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.RawInput(0));
  const Shape in = im.OnnxShape(x);
  const auto rank = static_cast<int64_t>(in.size());
  int64_t axis = im.Int("axis", 1);
  if (axis < -rank || axis > rank) return im.Error("axis out of range");
  if (axis < 0) axis += rank;
  const auto a = static_cast<size_t>(axis);
  return ReshapeTo(im, x, {Product(in, 0, a), Product(in, a, in.size())});
}

Result<Ints> AxesOf(Importer& im, int input, int64_t since_opset, const char* what) {
  if (im.opset() < since_opset) return im.Ints("axes");
  if (!im.HasInput(input)) return Ints{};
  MF_ASSIGN_OR_RETURN(Tensor t, im.Input(input));
  return im.ConstInts(t, what);
}

Status Squeeze(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.RawInput(0));
  MF_ASSIGN_OR_RETURN(Ints axes, AxesOf(im, 1, 13, "the axes"));
  const Shape in = im.OnnxShape(x);
  std::vector<bool> drop(in.size(), axes.empty());
  for (int64_t a : axes) {
    MF_ASSIGN_OR_RETURN(int64_t d, im.Axis(a, static_cast<int>(in.size()), false));
    if (in[static_cast<size_t>(d)] != 1) return im.Error("squeezes an axis that is not 1");
    drop[static_cast<size_t>(d)] = true;
  }
  Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!drop[d] || in[d] != 1) out.push_back(in[d]);
  }
  return ReshapeTo(im, x, out);
}

Status Unsqueeze(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.RawInput(0));
  MF_ASSIGN_OR_RETURN(Ints axes, AxesOf(im, 1, 13, "the axes"));
  const Shape in = im.OnnxShape(x);
  const int rank = static_cast<int>(in.size() + axes.size());
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    MF_ASSIGN_OR_RETURN(int64_t d, im.Axis(a, rank, false));
    inserted[static_cast<size_t>(d)] = true;
  }
  Shape out;
  size_t next = 0;
  for (int d = 0; d < rank; ++d) out.push_back(inserted[static_cast<size_t>(d)] ? 1 : in[next++]);
  if (next != in.size()) return im.Error("repeats an axis");
  return ReshapeTo(im, x, out);
}

Status Transpose(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.RawInput(0));
  const int rank = im.Rank(x);
  Ints perm = im.Ints("perm");
  if (perm.empty()) {
    for (int d = rank - 1; d >= 0; --d) perm.push_back(d);
  }
  if (static_cast<int>(perm.size()) != rank) return im.Error("perm does not match the rank");
  Ints memfold_perm;  // composed with the value's own layout
  for (int64_t p : perm) {
    MF_ASSIGN_OR_RETURN(int64_t d, im.Axis(p, rank, x.channels_last));
    memfold_perm.push_back(d);
  }
  Ints identity(static_cast<size_t>(rank));
  std::iota(identity.begin(), identity.end(), 0);
  if (memfold_perm == identity) return MovedOutput(im, x.id, false, x.quantized);
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("transpose", {x.id}, {{"perm", memfold_perm}}));
  return MovedOutput(im, y, false, x.quantized);
}

// Inputs of equal rank >= 3 stay channels-last when any is.
Result<std::vector<ValueId>> SameLayout(Importer& im, const std::vector<Tensor>& ts, bool* last) {
  const int rank = im.Rank(ts.front());
  *last = rank >= 3 &&
          std::all_of(ts.begin(), ts.end(), [&](Tensor t) { return im.Rank(t) == rank; }) &&
          std::any_of(ts.begin(), ts.end(), [](Tensor t) { return t.channels_last; });
  std::vector<ValueId> ids;
  for (const Tensor& t : ts) {
    MF_ASSIGN_OR_RETURN(ValueId id, *last ? im.ChannelsLast(t) : im.Plain(t));
    ids.push_back(id);
  }
  return ids;
}

// A quantized int8 tensor in other parameters: a requantizing node unless they are its own.
Result<Tensor> Requantized(Importer& im, Tensor t, const Quantization& q) {
  if (SameQuantization(*im.ValueOf(t).quant, q)) return t;
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("quantize", {t.id}, {{"dtype", std::string("i8")}}));
  im.graph().value(y).quant = q;
  return Tensor{y, t.channels_last, true};
}

Status Concat(Importer& im) {
  // Quantized int8 inputs concatenate in their integer form: as they are when they share one
  // quantisation, requantized into the output's when a QuantizeLinear reads the result.
  std::vector<std::optional<Tensor>> int8_inputs;
  for (int k = 0; k < im.num_inputs(); ++k)
    int8_inputs.push_back(im.HasInput(k) ? Int8Activation(im, k) : std::nullopt);
  const bool all_int8 =
      !int8_inputs.empty() && std::all_of(int8_inputs.begin(), int8_inputs.end(),
                                          [](const auto& t) { return t.has_value(); });
  std::optional<QuantizedOutput> out = all_int8 ? im.QuantizedConsumer(0) : std::nullopt;
  const bool same =
      all_int8 && std::all_of(int8_inputs.begin(), int8_inputs.end(), [&](const auto& t) {
        return SameQuantization(*im.ValueOf(*t).quant, *im.ValueOf(*int8_inputs.front()).quant);
      });
  const bool int8 = same || out.has_value();
  std::vector<Tensor> ts;
  for (int k = 0; k < im.num_inputs(); ++k) {
    if (!im.HasInput(k)) continue;
    MF_ASSIGN_OR_RETURN(Tensor t, int8 ? im.RawInput(k) : im.Input(k));
    if (out) {
      MF_ASSIGN_OR_RETURN(t, Requantized(im, t, out->quant));
    }
    if (im.ValueOf(t).elements() > 0 || im.Rank(t) > 1) ts.push_back(t);
  }
  if (ts.empty()) return im.Error("has no inputs");
  bool last = false;
  MF_ASSIGN_OR_RETURN(std::vector<ValueId> ids, SameLayout(im, ts, &last));
  MF_ASSIGN_OR_RETURN(int64_t axis, im.Axis(im.Int("axis", 0), im.Rank(ts.front()), last));
  ValueId y = ids.front();
  if (ids.size() > 1) {
    MF_ASSIGN_OR_RETURN(y, im.Emit("concat", ids, {{"axis", axis}}));
  }
  if (out) return im.QuantizedResult(y, *out, last);
  if (int8) im.graph().value(y).quant = im.ValueOf(ts.front()).quant;
  return MovedOutput(im, y, last, int8);
}

Status Split(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  const Shape in = im.OnnxShape(x);
  MF_ASSIGN_OR_RETURN(int64_t onnx_axis, im.Axis(im.Int("axis", 0), im.Rank(x), false));
  const int64_t dim = in[static_cast<size_t>(onnx_axis)];
  Ints sizes;
  if (im.opset() < 13) {
    sizes = im.Ints("split");
  } else if (im.HasInput(1)) {
    MF_ASSIGN_OR_RETURN(Tensor s, im.Input(1));
    MF_ASSIGN_OR_RETURN(sizes, im.ConstInts(s, "the split"));
  }
  if (sizes.empty()) {
    const int64_t n = im.Int("num_outputs", im.node().output_size());
    if (n < 1) return im.Error("splits into no outputs");
    const int64_t each = (dim + n - 1) / n;
    for (int64_t k = 0; k < n; ++k)
      sizes.push_back(std::max<int64_t>(std::min(each, dim - k * each), 0));
  }
  if (static_cast<int>(sizes.size()) != im.node().output_size())
    return im.Error("splits into " + std::to_string(sizes.size()) + " parts for " +
                    std::to_string(im.node().output_size()) + " outputs");
  MF_ASSIGN_OR_RETURN(int64_t axis, im.Axis(onnx_axis, im.Rank(x), x.channels_last));
  MF_ASSIGN_OR_RETURN(std::vector<ValueId> ys,
                      im.EmitAll("split", {x.id}, {{"axis", axis}, {"sizes", sizes}}));
  for (size_t k = 0; k < ys.size(); ++k)
    MF_RETURN_IF_ERROR(im.Output(static_cast<int>(k), ys[k], x.channels_last));
  return Status::Ok();
}

// ONNX Slice (opset >= 10: starts, ends, axes, steps as inputs), clamped as ONNX clamps.
Status Slice(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  const Shape in = im.OnnxShape(x);
  const int rank = im.Rank(x);
  auto list = [&](int k, const char* what) -> Result<Ints> {
    if (!im.HasInput(k)) return Ints{};
    MF_ASSIGN_OR_RETURN(Tensor t, im.Input(k));
    return im.ConstInts(t, what, /*bounded=*/false);  // INT64_MAX means "to the end"
  };
  MF_ASSIGN_OR_RETURN(Ints starts, list(1, "starts"));
  MF_ASSIGN_OR_RETURN(Ints ends, list(2, "ends"));
  MF_ASSIGN_OR_RETURN(Ints axes, list(3, "axes"));
  MF_ASSIGN_OR_RETURN(Ints steps, list(4, "steps"));
  if (axes.empty()) {
    for (size_t d = 0; d < starts.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return im.Error("needs as many ends, axes and steps as starts");
  Ints begin(static_cast<size_t>(rank), 0), stride(static_cast<size_t>(rank), 1), count = in;
  for (size_t k = 0; k < starts.size(); ++k) {
    MF_ASSIGN_OR_RETURN(int64_t d, im.Axis(axes[k], rank, false));
    const int64_t dim = in[static_cast<size_t>(d)], step = steps[k];
    if (step == 0 || step == std::numeric_limits<int64_t>::min())
      return im.Error("has a step of 0 or -2^63");
    auto clamp = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0) v = v < -dim ? -1 : v + dim;  // far negative: before the start
      return std::clamp(v, lo, hi);
    };
    const int64_t s = step > 0 ? clamp(starts[k], 0, dim) : clamp(starts[k], 0, dim - 1);
    const int64_t e =
        step > 0 ? clamp(ends[k], 0, dim) : (ends[k] < -dim ? -1 : clamp(ends[k], -1, dim - 1));
    // s and e lie in [-1, dim]: no overflow whatever the step
    const int64_t n =
        step > 0 ? (e > s ? 1 + (e - s - 1) / step : 0) : (s > e ? 1 + (s - e - 1) / -step : 0);
    begin[static_cast<size_t>(d)] = s;
    stride[static_cast<size_t>(d)] = step;
    count[static_cast<size_t>(d)] = n;
  }
  // In the value's own layout.
  Ints b(static_cast<size_t>(rank)), st(static_cast<size_t>(rank)), c(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) {
    MF_ASSIGN_OR_RETURN(int64_t m, im.Axis(d, rank, x.channels_last));
    b[static_cast<size_t>(m)] = begin[static_cast<size_t>(d)];
    st[static_cast<size_t>(m)] = stride[static_cast<size_t>(d)];
    c[static_cast<size_t>(m)] = count[static_cast<size_t>(d)];
  }
  const bool unit = std::all_of(st.begin(), st.end(), [](int64_t s) { return s == 1; });
  ValueId y;
  if (unit) {
    MF_ASSIGN_OR_RETURN(y, im.Emit("slice", {x.id}, {{"begin", b}, {"size", c}}));
  } else {
    for (size_t d = 0; d < b.size(); ++d) {
      if (c[d] == 0) b[d] = 0;
    }
    MF_ASSIGN_OR_RETURN(y, im.Emit("strided_slice", {x.id},
                                   {{"begin", b}, {"strides", st}, {"counts", c}, {"shape", c}}));
  }
  return im.Output(0, y, x.channels_last);
}

Status Gather(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor data, im.Input(0));
  MF_ASSIGN_OR_RETURN(Tensor indices, im.Input(1));
  const int rank = im.Rank(data);
  MF_ASSIGN_OR_RETURN(int64_t axis, im.Axis(im.Int("axis", 0), rank, false));
  const Shape in = im.OnnxShape(data);
  const int64_t dim = in[static_cast<size_t>(axis)];
  MF_ASSIGN_OR_RETURN(ValueId params, im.Plain(data));
  ValueId index = indices.id;
  if (im.IsConstant(indices)) {  // negative indices count from the end
    MF_ASSIGN_OR_RETURN(Ints k, im.ConstInts(indices, "the indices"));
    for (int64_t& i : k) {
      if (i < -dim || i >= dim) return im.Error("index " + std::to_string(i) + " is out of range");
      if (i < 0) i += dim;
    }
    Bytes bytes(k.size() * sizeof(int64_t));
    std::memcpy(bytes.data(), k.data(), bytes.size());
    index = im.Constant(DType::kI64, im.ValueOf(indices).shape, std::move(bytes));
  }
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("gather_axis", {params, index}, {{"axis", axis}}));
  return im.Output(0, y, false);
}

Status ShapeOp(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  const Shape shape = im.OnnxShape(x);
  const auto rank = static_cast<int64_t>(shape.size());
  auto bound = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t start = bound(im.Int("start", 0)), end = bound(im.Int("end", rank));
  Ints dims(shape.begin() + start, shape.begin() + std::max(start, end));
  Bytes bytes(dims.size() * sizeof(int64_t));
  std::memcpy(bytes.data(), dims.data(), bytes.size());
  return im.Output(0,
                   im.Constant(DType::kI64, {static_cast<int64_t>(dims.size())}, std::move(bytes)));
}

Status Size(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  const int64_t n = im.ValueOf(x).elements();
  Bytes bytes(sizeof(n));
  std::memcpy(bytes.data(), &n, sizeof(n));
  return im.Output(0, im.Constant(DType::kI64, {}, std::move(bytes)));
}

Status ConstantOp(Importer& im) {
  if (const auto* a = im.Attr("value")) {
    Result<std::pair<Value, Bytes>> t = TensorOfProto(a->t(), "Constant");
    if (!t.ok()) return im.Error(t.status().message());
    return im.Output(0, im.Constant(t->first.dtype, t->first.shape, std::move(t->second)));
  }
  if (const auto* a = im.Attr("value_float")) return im.Output(0, im.FloatConstant({}, {a->f()}));
  if (const auto* a = im.Attr("value_floats")) {
    std::vector<float> v(a->floats().begin(), a->floats().end());
    return im.Output(0, im.FloatConstant({static_cast<int64_t>(v.size())}, v));
  }
  Ints values;
  Shape shape;
  if (const auto* one = im.Attr("value_int")) {
    values = {one->i()};
  } else if (const auto* many = im.Attr("value_ints")) {
    values.assign(many->ints().begin(), many->ints().end());
    shape = {static_cast<int64_t>(values.size())};
  } else {
    return im.Opaque("memfold reads Constant values of tensors, floats and ints");
  }
  Bytes bytes(values.size() * sizeof(int64_t));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return im.Output(0, im.Constant(DType::kI64, shape, std::move(bytes)));
}

Status ConstantOfShape(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor s, im.Input(0));
  MF_ASSIGN_OR_RETURN(Ints shape, im.ConstInts(s, "the shape"));
  DType dtype = DType::kF32;
  Bytes one(4);
  if (const auto* a = im.Attr("value")) {
    Result<std::pair<Value, Bytes>> t = TensorOfProto(a->t(), "ConstantOfShape's value");
    if (!t.ok()) return im.Error(t.status().message());
    if (t->first.elements() != 1) return im.Error("needs a one-element value");
    dtype = t->first.dtype;
    one = std::move(t->second);
  }
  MF_ASSIGN_OR_RETURN(const int64_t n, im.CheckedElements(shape, dtype));
  if (StorageBytes(dtype, n) > kMaxConstantBytes) return im.Error("makes too large a constant");
  Bytes bytes;
  for (int64_t k = 0; k < n; ++k) bytes.insert(bytes.end(), one.begin(), one.end());
  return im.Output(0, im.Constant(dtype, shape, std::move(bytes)));
}

Status Range(Importer& im) {
  std::vector<double> p;
  for (int k = 0; k < 3; ++k) {
    MF_ASSIGN_OR_RETURN(Tensor t, im.Input(k));
    MF_ASSIGN_OR_RETURN(std::vector<double> v, im.ConstDoubles(t, "a bound"));
    if (v.size() != 1) return im.Error("needs scalar bounds");
    p.push_back(v[0]);
  }
  if (p[2] == 0) return im.Error("has a delta of 0");
  const double count = std::max(std::ceil((p[1] - p[0]) / p[2]), 0.0);
  if (!(count <= static_cast<double>(kMaxConstantBytes / 8)))
    return im.Error("makes too large a constant");
  MF_ASSIGN_OR_RETURN(Tensor start, im.Input(0));
  const DType dtype = im.ValueOf(start).dtype;
  const auto n = static_cast<int64_t>(count);
  Bytes bytes(static_cast<size_t>(StorageBytes(dtype, n)));
  for (int64_t k = 0; k < n; ++k) {
    VisitElementType(dtype, [&](auto zero) {
      const auto v = static_cast<decltype(zero)>(p[0] + static_cast<double>(k) * p[2]);
      std::memcpy(bytes.data() + k * static_cast<int64_t>(sizeof(v)), &v, sizeof(v));
    });
  }
  return im.Output(0, im.Constant(dtype, {n}, std::move(bytes)));
}

Status Expand(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  MF_ASSIGN_OR_RETURN(Tensor s, im.Input(1));
  MF_ASSIGN_OR_RETURN(Ints shape, im.ConstInts(s, "the shape"));
  Shape in = im.OnnxShape(x);
  const size_t rank = std::max(in.size(), shape.size());
  in.insert(in.begin(), rank - in.size(), 1);
  shape.insert(shape.begin(), rank - shape.size(), 1);
  Shape out(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (in[d] != shape[d] && in[d] != 1 && shape[d] != 1)
      return im.Error("cannot broadcast " + ShapeString(im.OnnxShape(x)) + " to the shape");
    out[d] = in[d] == 1 ? shape[d] : in[d];
  }
  MF_ASSIGN_OR_RETURN(ValueId input, im.Plain(x));
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("broadcast_to", {input}, {{"shape", out}}));
  return im.Output(0, y, false);
}

Status Pad(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  const int rank = im.Rank(x);
  Ints pads;
  if (im.opset() < 11) {
    pads = im.Ints("pads");
  } else {
    MF_ASSIGN_OR_RETURN(Tensor p, im.Input(1));
    MF_ASSIGN_OR_RETURN(pads, im.ConstInts(p, "the pads"));
  }
  MF_ASSIGN_OR_RETURN(Ints axes, AxesOf(im, 3, 18, "the axes"));
  if (axes.empty()) {
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  if (pads.size() != 2 * axes.size()) return im.Error("needs two pads per axis");
  Ints paddings(2 * static_cast<size_t>(rank), 0);  // memfold: [before, after] per axis
  for (size_t k = 0; k < axes.size(); ++k) {
    MF_ASSIGN_OR_RETURN(int64_t d, im.Axis(axes[k], rank, x.channels_last));
    paddings[2 * static_cast<size_t>(d)] = pads[k];
    paddings[2 * static_cast<size_t>(d) + 1] = pads[k + axes.size()];
  }
  if (std::any_of(paddings.begin(), paddings.end(), [](int64_t p) { return p < 0; }))
    return im.Opaque("memfold pads by non-negative amounts");
  const std::string mode = im.Str("mode", "constant");
  ValueId y;
  if (mode == "constant") {
    double value = 0;
    if (im.opset() < 11) {
      value = im.Float("value", 0);
    } else if (im.HasInput(2)) {
      MF_ASSIGN_OR_RETURN(Tensor v, im.Input(2));
      MF_ASSIGN_OR_RETURN(std::vector<double> c, im.ConstDoubles(v, "the value"));
      if (c.size() != 1) return im.Error("needs a scalar value");
      value = c[0];
    }
    MF_ASSIGN_OR_RETURN(y, im.Emit("pad", {x.id}, {{"paddings", paddings}, {"value", value}}));
  } else if (mode == "reflect") {
    MF_ASSIGN_OR_RETURN(y, im.Emit("mirror_pad", {x.id}, {{"paddings", paddings}}));
  } else {
    return im.Opaque("memfold pads in constant and reflect modes");
  }
  return im.Output(0, y, x.channels_last);
}

// --- reductions and normalisation

Status Reduce(Importer& im, std::string_view op) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  const int64_t since = op == "sum" ? 13 : 18;
  MF_ASSIGN_OR_RETURN(Ints axes, AxesOf(im, 1, since, "the axes"));
  const int rank = im.Rank(x);
  if (axes.empty()) {
    if (im.Int("noop_with_empty_axes", 0) != 0) return im.Output(0, x.id, x.channels_last);
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  const bool keep = im.Int("keepdims", 1) != 0;
  const bool last = keep && x.channels_last;
  MF_ASSIGN_OR_RETURN(ValueId input, last ? Result<ValueId>(x.id) : im.Plain(x));
  Ints memfold_axes;
  for (int64_t a : axes) {
    MF_ASSIGN_OR_RETURN(int64_t d, im.Axis(a, rank, last));
    memfold_axes.push_back(d);
  }
  std::sort(memfold_axes.begin(), memfold_axes.end());
  MF_ASSIGN_OR_RETURN(ValueId y,
                      im.Emit(op, {input}, {{"axes", memfold_axes}, {"keepdims", int64_t{keep}}}));
  return im.Output(0, y, last);
}

Status Softmax(Importer& im, std::string_view op) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  const int rank = im.Rank(x);
  if (im.opset() < 13) {  // coerced to 2-D at `axis`
    const Shape in = im.OnnxShape(x);
    MF_ASSIGN_OR_RETURN(int64_t axis, im.Axis(im.Int("axis", 1), rank, false));
    const auto a = static_cast<size_t>(axis);
    MF_ASSIGN_OR_RETURN(ValueId plain, im.Plain(x));
    MF_ASSIGN_OR_RETURN(ValueId flat,
                        im.Emit("reshape", {plain},
                                {{"shape", Ints{Product(in, 0, a), Product(in, a, in.size())}}}));
    MF_ASSIGN_OR_RETURN(ValueId s, im.Emit(op, {flat}));
    MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("reshape", {s}, {{"shape", in}}));
    return im.Output(0, y, false);
  }
  MF_ASSIGN_OR_RETURN(int64_t axis, im.Axis(im.Int("axis", -1), rank, x.channels_last));
  if (axis == rank - 1) {
    MF_ASSIGN_OR_RETURN(ValueId y, im.Emit(op, {x.id}));
    return im.Output(0, y, x.channels_last);
  }
  Ints perm(static_cast<size_t>(rank));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[static_cast<size_t>(axis)], perm.back());
  MF_ASSIGN_OR_RETURN(ValueId moved, im.Emit("transpose", {x.id}, {{"perm", perm}}));
  MF_ASSIGN_OR_RETURN(ValueId s, im.Emit(op, {moved}));
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("transpose", {s}, {{"perm", perm}}));
  return im.Output(0, y, x.channels_last);
}

Status LayerNormalization(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  MF_ASSIGN_OR_RETURN(Tensor scale, im.Input(1));
  const int rank = im.Rank(x);
  MF_ASSIGN_OR_RETURN(int64_t axis, im.Axis(im.Int("axis", -1), rank, false));
  if (axis != rank - 1 || im.node().output_size() > 1)
    return im.Opaque("memfold normalises the last axis and returns only the result");
  MF_ASSIGN_OR_RETURN(ValueId input, im.Plain(x));
  const int64_t d = im.OnnxShape(x).back();
  ValueId bias;
  if (im.HasInput(2)) {
    MF_ASSIGN_OR_RETURN(Tensor b, im.Input(2));
    MF_ASSIGN_OR_RETURN(bias, im.Emit("reshape", {b.id}, {{"shape", Ints{d}}}));
  } else {
    bias = im.FloatConstant({d}, std::vector<float>(static_cast<size_t>(d), 0.0f));
  }
  MF_ASSIGN_OR_RETURN(ValueId gamma, im.Emit("reshape", {scale.id}, {{"shape", Ints{d}}}));
  MF_ASSIGN_OR_RETURN(
      std::vector<ValueId> ys,
      im.EmitAll("layer_norm", {input, gamma, bias}, {{"epsilon", im.Float("epsilon", 1e-5)}}));
  return im.Output(0, ys.front(), false);
}

// --- matrix products

// y = x W^T + b for a constant 2-D W given as [K, N] (`transposed` false) or [N, K].
Result<ValueId> Dense(Importer& im, ValueId x, Tensor w, bool transposed, double alpha,
                      std::optional<ValueId> bias) {
  ValueId weights = w.id;
  if (!transposed) {
    MF_ASSIGN_OR_RETURN(weights, im.Emit("transpose", {w.id}, {{"perm", Ints{1, 0}}}));
  }
  if (alpha != 1.0) {
    MF_ASSIGN_OR_RETURN(ValueId a, Scalar(im, alpha));
    MF_ASSIGN_OR_RETURN(weights, im.Emit("mul", {weights, a}));
  }
  std::vector<ValueId> inputs{x, weights};
  if (bias) inputs.push_back(*bias);
  return im.Emit("fully_connected", inputs, {{"keep_num_dims", int64_t{1}}});
}

// QDQ Gemm/MatMul of constant int8 weights: the integer fully-connected layer. `transposed`:
// the ONNX weights are [N, K] (Gemm's transB), else [K, N].
Result<bool> QuantizedDense(Importer& im, bool transposed) {
  const std::optional<QuantizedOutput> out = im.QuantizedConsumer(0);
  if (!out) return false;
  const std::optional<Int8Operands> q = Int8Inputs(im, transposed ? 0 : 1);
  if (!q || im.Rank(q->w) != 2 || im.Rank(q->x) < 2) return false;
  MF_ASSIGN_OR_RETURN(ValueId x, im.Plain(q->x));
  ValueId w = q->w.id;
  if (!transposed) {
    MF_ASSIGN_OR_RETURN(w, im.Emit("transpose", {w}, {{"perm", Ints{1, 0}}}));
  }
  std::vector<ValueId> inputs{x, w};
  if (q->bias) inputs.push_back(q->bias->id);
  MF_ASSIGN_OR_RETURN(ValueId y,
                      im.Emit("fully_connected", inputs,
                              {{"keep_num_dims", int64_t{1}}, {"activation", out->activation}}));
  MF_RETURN_IF_ERROR(im.QuantizedResult(y, *out, false));
  return true;
}

Status MatMul(Importer& im) {
  MF_ASSIGN_OR_RETURN(bool quantized, QuantizedDense(im, false));
  if (quantized) return Status::Ok();
  MF_ASSIGN_OR_RETURN(Tensor a, im.Input(0));
  MF_ASSIGN_OR_RETURN(Tensor b, im.Input(1));
  if (im.Rank(a) < 2 || im.Rank(b) < 2)
    return im.Opaque("memfold multiplies matrices of rank >= 2");
  MF_ASSIGN_OR_RETURN(ValueId lhs, im.Plain(a));
  if (im.IsConstant(b) && im.Rank(b) == 2 && im.ValueOf(b).dtype == DType::kF32 &&
      !im.IsConstant(a)) {
    MF_ASSIGN_OR_RETURN(ValueId y, Dense(im, lhs, b, false, 1.0, std::nullopt));
    return im.Output(0, y);
  }
  MF_ASSIGN_OR_RETURN(ValueId rhs, im.Plain(b));
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("tflite_batch_matmul", {lhs, rhs}));
  return im.Output(0, y);
}

Status Gemm(Importer& im) {
  if (im.Int("transA", 0) == 0 && im.Float("alpha", 1.0) == 1.0 && im.Float("beta", 1.0) == 1.0) {
    MF_ASSIGN_OR_RETURN(bool quantized, QuantizedDense(im, im.Int("transB", 0) != 0));
    if (quantized) return Status::Ok();
  }
  MF_ASSIGN_OR_RETURN(Tensor a, im.Input(0));
  MF_ASSIGN_OR_RETURN(Tensor b, im.Input(1));
  MF_ASSIGN_OR_RETURN(ValueId lhs, im.Plain(a));
  if (im.Int("transA", 0) != 0) {
    MF_ASSIGN_OR_RETURN(lhs, im.Emit("transpose", {lhs}, {{"perm", Ints{1, 0}}}));
  }
  const bool trans_b = im.Int("transB", 0) != 0;
  const double alpha = im.Float("alpha", 1.0), beta = im.Float("beta", 1.0);
  if (!im.IsConstant(b) || im.Rank(b) != 2) return im.Opaque("memfold converts Gemm of constant B");
  const int64_t n = im.OnnxShape(b)[trans_b ? 0 : 1];
  std::optional<ValueId> bias;
  std::optional<ValueId> late;  // a C that does not fold into the bias
  if (im.HasInput(2)) {
    MF_ASSIGN_OR_RETURN(Tensor c, im.Input(2));
    ValueId scaled = c.id;
    if (beta != 1.0) {
      MF_ASSIGN_OR_RETURN(ValueId s, Scalar(im, beta));
      MF_ASSIGN_OR_RETURN(scaled, im.Emit("mul", {c.id, s}));
    }
    const bool vector =
        im.IsConstant(c) && im.ValueOf(c).elements() == n && im.OnnxShape(c).back() == n;
    if (vector) {
      MF_ASSIGN_OR_RETURN(ValueId v, im.Emit("reshape", {scaled}, {{"shape", Ints{n}}}));
      bias = v;
    } else {
      late = scaled;
    }
  }
  MF_ASSIGN_OR_RETURN(ValueId y, Dense(im, lhs, b, trans_b, alpha, bias));
  if (late) {
    MF_ASSIGN_OR_RETURN(y, im.Emit("add", {y, *late}));
  }
  return im.Output(0, y);
}

// --- recurrent

// ONNX GRU (forward, batch of any size, layout 0), unrolled over the file's static sequence.
// Gates z, r, h; with linear_before_reset the reset gate scales (H Rh^T + Rbh).
Status Gru(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  MF_ASSIGN_OR_RETURN(Tensor w, im.Input(1));
  MF_ASSIGN_OR_RETURN(Tensor r, im.Input(2));
  const std::string direction = im.Str("direction", "forward");
  if (direction != "forward" || im.Int("layout", 0) != 0 || im.HasInput(4) ||
      im.Attr("activations") != nullptr || im.Attr("clip") != nullptr || !im.IsConstant(w) ||
      !im.IsConstant(r))
    return im.Opaque("memfold unrolls forward GRUs of constant weights and default activations");
  const Shape xs = im.OnnxShape(x);  // [seq, batch, input]
  const int64_t hidden = im.Int("hidden_size", im.OnnxShape(r).back());
  const int64_t seq = xs[0], batch = xs[1], in = xs[2];
  const bool before_reset = im.Int("linear_before_reset", 0) != 0;
  if (seq < 1 || seq > 4096) return im.Opaque("memfold unrolls sequences of 1 to 4096 steps");
  MF_ASSIGN_OR_RETURN(ValueId w2, im.Emit("reshape", {w.id}, {{"shape", Ints{3 * hidden, in}}}));
  MF_ASSIGN_OR_RETURN(ValueId r2,
                      im.Emit("reshape", {r.id}, {{"shape", Ints{3 * hidden, hidden}}}));
  ValueId wb, rb;
  if (im.HasInput(3)) {
    MF_ASSIGN_OR_RETURN(Tensor b, im.Input(3));
    MF_ASSIGN_OR_RETURN(
        std::vector<ValueId> halves,
        im.EmitAll("split", {b.id},
                   {{"axis", int64_t{1}}, {"sizes", Ints{3 * hidden, 3 * hidden}}}));
    MF_ASSIGN_OR_RETURN(wb, im.Emit("reshape", {halves[0]}, {{"shape", Ints{3 * hidden}}}));
    MF_ASSIGN_OR_RETURN(rb, im.Emit("reshape", {halves[1]}, {{"shape", Ints{3 * hidden}}}));
  } else {
    wb = rb =
        im.FloatConstant({3 * hidden}, std::vector<float>(static_cast<size_t>(3 * hidden), 0));
  }
  const Ints thirds{hidden, hidden, hidden};
  MF_ASSIGN_OR_RETURN(std::vector<ValueId> rs,
                      im.EmitAll("split", {r2}, {{"axis", int64_t{0}}, {"sizes", thirds}}));
  MF_ASSIGN_OR_RETURN(std::vector<ValueId> rbs,
                      im.EmitAll("split", {rb}, {{"axis", int64_t{0}}, {"sizes", thirds}}));
  // Input projections of every step at once: [seq * batch, 3H].
  MF_ASSIGN_OR_RETURN(ValueId x_plain, im.Plain(x));
  MF_ASSIGN_OR_RETURN(ValueId xw, im.Emit("fully_connected", {x_plain, w2, wb}));
  ValueId h;
  if (im.HasInput(5)) {
    MF_ASSIGN_OR_RETURN(Tensor h0, im.Input(5));
    MF_ASSIGN_OR_RETURN(h, im.Emit("reshape", {h0.id}, {{"shape", Ints{batch, hidden}}}));
  } else {
    h = im.FloatConstant({batch, hidden},
                         std::vector<float>(static_cast<size_t>(batch * hidden), 0));
  }
  std::vector<ValueId> steps;
  for (int64_t t = 0; t < seq; ++t) {
    MF_ASSIGN_OR_RETURN(
        ValueId xt,
        im.Emit("slice", {xw}, {{"begin", Ints{t * batch, 0}}, {"size", Ints{batch, 3 * hidden}}}));
    MF_ASSIGN_OR_RETURN(std::vector<ValueId> xg,
                        im.EmitAll("split", {xt}, {{"axis", int64_t{1}}, {"sizes", thirds}}));
    auto gate = [&](int k, const char* act) -> Result<ValueId> {
      MF_ASSIGN_OR_RETURN(ValueId hr, im.Emit("fully_connected", {h, rs[static_cast<size_t>(k)],
                                                                  rbs[static_cast<size_t>(k)]}));
      MF_ASSIGN_OR_RETURN(ValueId sum, im.Emit("add", {xg[static_cast<size_t>(k)], hr}));
      return im.Emit(act, {sum});
    };
    MF_ASSIGN_OR_RETURN(ValueId z, gate(0, "sigmoid"));
    MF_ASSIGN_OR_RETURN(ValueId rg, gate(1, "sigmoid"));
    ValueId candidate_in;
    if (before_reset) {
      MF_ASSIGN_OR_RETURN(ValueId hr, im.Emit("fully_connected", {h, rs[2], rbs[2]}));
      MF_ASSIGN_OR_RETURN(ValueId gated, im.Emit("mul", {rg, hr}));
      MF_ASSIGN_OR_RETURN(candidate_in, im.Emit("add", {xg[2], gated}));
    } else {
      MF_ASSIGN_OR_RETURN(ValueId rh, im.Emit("mul", {rg, h}));
      MF_ASSIGN_OR_RETURN(ValueId hr, im.Emit("fully_connected", {rh, rs[2], rbs[2]}));
      MF_ASSIGN_OR_RETURN(candidate_in, im.Emit("add", {xg[2], hr}));
    }
    MF_ASSIGN_OR_RETURN(ValueId candidate, im.Emit("tanh", {candidate_in}));
    // h = (1 - z) * candidate + z * h = candidate + z * (h - candidate)
    MF_ASSIGN_OR_RETURN(ValueId diff, im.Emit("sub", {h, candidate}));
    MF_ASSIGN_OR_RETURN(ValueId zd, im.Emit("mul", {z, diff}));
    MF_ASSIGN_OR_RETURN(h, im.Emit("add", {candidate, zd}));
    steps.push_back(h);
  }
  ValueId all = steps.front();
  if (steps.size() > 1) {
    MF_ASSIGN_OR_RETURN(all, im.Emit("concat", steps, {{"axis", int64_t{0}}}));
  }
  MF_ASSIGN_OR_RETURN(ValueId y,
                      im.Emit("reshape", {all}, {{"shape", Ints{seq, 1, batch, hidden}}}));
  MF_RETURN_IF_ERROR(im.Output(0, y));
  if (im.node().output_size() > 1 && !im.node().output(1).empty()) {
    MF_ASSIGN_OR_RETURN(ValueId last, im.Emit("reshape", {h}, {{"shape", Ints{1, batch, hidden}}}));
    MF_RETURN_IF_ERROR(im.Output(1, last));
  }
  return Status::Ok();
}

// --- quantisation (QDQ form)

// DequantizeLinear's and QuantizeLinear's parameters (inputs 1 and 2, attribute axis) for a
// tensor of rank `rank`, and the integer type the zero point gives (uint8 without one).
Result<std::pair<Quantization, DType>> QuantParams(Importer& im, int rank, int scale_input = 1,
                                                   int zero_input = 2,
                                                   std::optional<int64_t> axis = std::nullopt) {
  MF_ASSIGN_OR_RETURN(Tensor s, im.RawInput(scale_input));
  MF_ASSIGN_OR_RETURN(std::vector<double> scale, im.ConstDoubles(s, "the scale"));
  Quantization q;
  for (double v : scale) {
    if (!(v > 0) || !std::isfinite(v)) return im.Error("has a scale that is not positive");
    q.scale.push_back(static_cast<float>(v));
  }
  DType dtype = DType::kU8;
  q.zero_point.assign(scale.size(), 0);
  if (im.HasInput(zero_input)) {
    MF_ASSIGN_OR_RETURN(Tensor z, im.RawInput(zero_input));
    MF_ASSIGN_OR_RETURN(q.zero_point, im.ConstInts(z, "the zero point"));
    dtype = im.ValueOf(z).dtype;
  } else if (im.Attr("output_dtype") != nullptr) {
    const std::optional<DType> t = DTypeOfOnnx(static_cast<int32_t>(im.Int("output_dtype", 0)));
    if (!t) return im.Error("quantizes to a type memfold does not store");
    dtype = *t;
  }
  if (q.zero_point.size() != q.scale.size() || q.scale.empty())
    return im.Error("needs as many zero points as scales");
  if (im.Int("block_size", 0) != 0) return im.Error("uses blocked quantisation");
  if (q.per_channel()) {
    MF_ASSIGN_OR_RETURN(int64_t a, im.Axis(axis.value_or(im.Int("axis", 1)), rank, false));
    q.axis = static_cast<int32_t>(a);
  }
  return std::pair{q, dtype};
}

Status DequantizeLinear(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.RawInput(0));
  if (x.quantized) return im.Error("dequantizes a tensor of real numbers");
  MF_ASSIGN_OR_RETURN(auto params, QuantParams(im, im.Rank(x)));
  const auto& [q, dtype] = params;
  const Value& v = im.ValueOf(x);
  if (v.dtype != dtype) return im.Error("has a zero point of another type than its input");
  if (v.dtype != DType::kI8 && v.dtype != DType::kU8 && v.dtype != DType::kI16 &&
      v.dtype != DType::kI32)
    return im.Opaque("memfold dequantizes int8, uint8, int16 and int32 tensors");
  if (q.per_channel() &&
      im.OnnxShape(x)[static_cast<size_t>(q.axis)] != static_cast<int64_t>(q.scale.size()))
    return im.Error("has " + std::to_string(q.scale.size()) + " scales for its axis");
  if (v.is_constant()) {
    const ValueId c = im.Constant(v.dtype, v.shape, *v.data, v.name);
    im.graph().value(c).quant = q;
    return im.OutputQuantized(0, c, false);
  }
  if (q.per_channel()) return im.Opaque("memfold dequantizes activations per tensor");
  Value& held = im.graph().value(x.id);
  if (!held.quant) held.quant = q;
  if (!SameQuantization(*held.quant, q))
    return im.Opaque("its parameters differ from those its input was quantized with");
  return im.OutputQuantized(0, x.id, x.channels_last);
}

// ONNX's QuantizeLinear of constants: saturate(round_half_even(x / scale) + zero_point).
Status QuantizeConstant(Importer& im, Tensor x, const Quantization& q, DType dtype) {
  MF_ASSIGN_OR_RETURN(Tensor real, im.Input(0));
  MF_ASSIGN_OR_RETURN(std::vector<double> values, im.ConstDoubles(real, "the input"));
  const auto n = static_cast<int64_t>(values.size());
  Bytes bytes(static_cast<size_t>(StorageBytes(dtype, n)));
  for (int64_t k = 0; k < n; ++k) {
    VisitElementType(dtype, [&](auto zero) {
      using T = decltype(zero);
      const float scaled = static_cast<float>(values[static_cast<size_t>(k)]) / q.scale[0];
      const double v = std::nearbyint(scaled) + static_cast<double>(q.zero_point[0]);
      const T element =
          static_cast<T>(std::clamp(v, static_cast<double>(std::numeric_limits<T>::lowest()),
                                    static_cast<double>(std::numeric_limits<T>::max())));
      std::memcpy(bytes.data() + k * static_cast<int64_t>(sizeof(T)), &element, sizeof(T));
    });
  }
  const ValueId c = im.Constant(dtype, im.ValueOf(real).shape, std::move(bytes));
  im.graph().value(c).quant = q;
  return im.Output(0, c, x.channels_last);
}

Status QuantizeLinear(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.RawInput(0));
  MF_ASSIGN_OR_RETURN(auto params, QuantParams(im, im.Rank(x)));
  const auto& [q, dtype] = params;
  if (q.per_channel()) return im.Opaque("memfold quantizes per tensor");
  if (dtype != DType::kI8 && dtype != DType::kU8 && dtype != DType::kI16)
    return im.Opaque("memfold quantizes to int8, uint8 and int16");
  if (im.IsConstant(x)) return QuantizeConstant(im, x, q, dtype);
  const Value& v = im.ValueOf(x);
  if (x.quantized && v.dtype == dtype && SameQuantization(*v.quant, q))
    return im.Output(0, x.id, x.channels_last);  // DequantizeLinear -> QuantizeLinear: the same
  if (!x.quantized && v.dtype != DType::kF32) return im.Opaque("memfold quantizes float32 tensors");
  MF_ASSIGN_OR_RETURN(ValueId y,
                      im.Emit("quantize", {x.id}, {{"dtype", std::string(DTypeName(dtype))}}));
  im.graph().value(y).quant = q;
  return im.Output(0, y, x.channels_last);
}

// --- quantisation (QOperator form: QLinearConv, com.microsoft's QLinearAdd, ...)

// A tensor under quantisation `q`: a constant gets it (a copy), an activation must carry it
// already or takes it.
Result<Tensor> WithQuantization(Importer& im, Tensor raw, const Quantization& q) {
  const Value& v = im.ValueOf(raw);
  if (raw.quantized) return im.Error("reads real numbers where it expects integers");
  if (v.is_constant()) {
    const ValueId c = im.Constant(v.dtype, v.shape, *v.data, v.name);
    im.graph().value(c).quant = q;
    return Tensor{c, false, true};
  }
  Value& held = im.graph().value(raw.id);
  if (q.per_channel()) return im.Error("quantizes an activation per channel");
  if (!held.quant) held.quant = q;
  if (!SameQuantization(*held.quant, q))
    return im.Error("reads '" + v.name + "' with other parameters than it was quantized with");
  return raw;
}

// Input `k` of a QOperator node, its scale and zero point at inputs k + 1 and k + 2.
Result<std::optional<Tensor>> Operand(Importer& im, int k, int64_t axis = 0) {
  if (!im.HasInput(k)) return std::optional<Tensor>();
  MF_ASSIGN_OR_RETURN(Tensor raw, im.RawInput(k));
  MF_ASSIGN_OR_RETURN(auto params, QuantParams(im, im.Rank(raw), k + 1, k + 2, axis));
  if (params.second != im.ValueOf(raw).dtype)
    return im.Error("has a zero point of another type than input " + std::to_string(k));
  MF_ASSIGN_OR_RETURN(Tensor t, WithQuantization(im, raw, params.first));
  t.quantized = true;
  return std::optional<Tensor>(t);
}

// An int32 bias of scale input_scale x weight_scale[c] (zero point 0), as a quantized tensor.
Result<std::optional<Tensor>> Int32Bias(Importer& im, int k, const Tensor& x, const Tensor& w) {
  if (!im.HasInput(k)) return std::optional<Tensor>();
  MF_ASSIGN_OR_RETURN(Tensor raw, im.RawInput(k));
  if (!im.IsConstant(raw) || im.ValueOf(raw).dtype != DType::kI32)
    return im.Error("needs a constant int32 bias");
  const Quantization& xq = *im.ValueOf(x).quant;
  const Quantization& wq = *im.ValueOf(w).quant;
  Quantization q;
  for (float s : wq.scale) q.scale.push_back(xq.scale[0] * s);
  q.zero_point.assign(q.scale.size(), 0);
  MF_ASSIGN_OR_RETURN(Tensor t, WithQuantization(im, raw, q));
  t.quantized = true;
  return std::optional<Tensor>(t);
}

// The output's parameters at inputs `s` and `s + 1`.
Result<QuantizedOutput> OutputParams(Importer& im, int s) {
  if (!im.HasInput(s))
    return im.Error("needs the output's scale (input " + std::to_string(s) + ")");
  MF_ASSIGN_OR_RETURN(auto params, QuantParams(im, 0, s, s + 1));
  if (params.first.per_channel()) return im.Error("quantizes its output per channel");
  QuantizedOutput out;
  out.quant = params.first;
  out.dtype = params.second;
  return out;
}

Status QLinearConv(Importer& im) {
  MF_ASSIGN_OR_RETURN(std::optional<Tensor> x, Operand(im, 0));
  MF_ASSIGN_OR_RETURN(std::optional<Tensor> w, Operand(im, 3, 0));
  MF_ASSIGN_OR_RETURN(QuantizedOutput out, OutputParams(im, 6));
  if (!x || !w) return im.Error("needs its input and weights");
  MF_ASSIGN_OR_RETURN(std::optional<Tensor> bias, Int32Bias(im, 8, *x, *w));
  im.StandFor({x, w, bias}, out);
  return Conv(im);
}

Status QLinearMatMul(Importer& im) {
  MF_ASSIGN_OR_RETURN(std::optional<Tensor> a, Operand(im, 0));
  MF_ASSIGN_OR_RETURN(std::optional<Tensor> b, Operand(im, 3, 1));
  MF_ASSIGN_OR_RETURN(QuantizedOutput out, OutputParams(im, 6));
  im.StandFor({a, b}, out);
  return MatMul(im);
}

Status QGemm(Importer& im) {
  MF_ASSIGN_OR_RETURN(std::optional<Tensor> a, Operand(im, 0));
  MF_ASSIGN_OR_RETURN(std::optional<Tensor> b, Operand(im, 3, im.Int("transB", 0) != 0 ? 0 : 1));
  if (!im.HasInput(7)) return im.Opaque("memfold converts QGemm with a quantized output");
  MF_ASSIGN_OR_RETURN(QuantizedOutput out, OutputParams(im, 7));
  if (!a || !b) return im.Error("needs both operands");
  MF_ASSIGN_OR_RETURN(std::optional<Tensor> bias, Int32Bias(im, 6, *a, *b));
  im.StandFor({a, b, bias}, out);
  return Gemm(im);
}

// A QOperator form of an operator whose operands are (X, scale, zero point) triples from input
// `first` on, and whose output parameters follow them (`out_first` < 0) or lead (QLinearConcat).
template <Status (*Float)(Importer&)>
Status QLinear(Importer& im, int operands, int out_first) {
  std::vector<std::optional<Tensor>> inputs;
  const int first = out_first == 0 ? 2 : 0;
  const int count = operands > 0 ? operands : (im.num_inputs() - first) / 3;
  for (int k = 0; k < count; ++k) {
    MF_ASSIGN_OR_RETURN(std::optional<Tensor> t, Operand(im, first + 3 * k));
    inputs.push_back(t);
  }
  MF_ASSIGN_OR_RETURN(QuantizedOutput out,
                      OutputParams(im, out_first >= 0 ? out_first : first + 3 * count));
  im.StandFor(std::move(inputs), out);
  return Float(im);
}

Status AddOp(Importer& im) { return NaryOp(im, "add"); }
Status MulOp(Importer& im) { return NaryOp(im, "mul"); }
Status MeanPool(Importer& im) { return GlobalPool(im, "mean"); }
Status AveragePool(Importer& im) { return Pool(im, "avg_pool2d"); }
Status SoftmaxOp(Importer& im) { return Softmax(im, "softmax"); }
Status SigmoidOp(Importer& im) { return UnaryOp(im, "sigmoid"); }
Status LeakyRelu(Importer& im) {
  return UnaryOp(im, "leaky_relu", {{"alpha", im.Float("alpha", 0.01)}});
}

struct Entry {
  std::string_view op_type;
  Converter convert;
};

#define MF_UNARY(name) [](Importer& im) { return UnaryOp(im, name); }
#define MF_NARY(name) [](Importer& im) { return NaryOp(im, name); }

const std::vector<Entry>& Table() {
  static const std::vector<Entry> table = [] {
    std::vector<Entry> t = {
        {"Abs", MF_UNARY("abs")},
        {"com.microsoft:QGemm", QGemm},
        {"com.microsoft:QLinearAdd", [](Importer& im) { return QLinear<AddOp>(im, 2, -1); }},
        {"com.microsoft:QLinearAveragePool",
         [](Importer& im) { return QLinear<AveragePool>(im, 1, -1); }},
        {"com.microsoft:QLinearConcat", [](Importer& im) { return QLinear<Concat>(im, 0, 0); }},
        {"com.microsoft:QLinearGlobalAveragePool",
         [](Importer& im) {
           if (im.Int("channels_last", 0) != 0) return im.Opaque("memfold reads NCHW inputs");
           return QLinear<MeanPool>(im, 1, -1);
         }},
        {"com.microsoft:QLinearLeakyRelu",
         [](Importer& im) { return QLinear<LeakyRelu>(im, 1, -1); }},
        {"com.microsoft:QLinearMul", [](Importer& im) { return QLinear<MulOp>(im, 2, -1); }},
        {"com.microsoft:QLinearSigmoid",
         [](Importer& im) { return QLinear<SigmoidOp>(im, 1, -1); }},
        {"com.microsoft:QLinearSoftmax",
         [](Importer& im) { return QLinear<SoftmaxOp>(im, 1, -1); }},
        {"Add", MF_NARY("add")},
        {"And", MF_NARY("logical_and")},
        {"AveragePool", [](Importer& im) { return Pool(im, "avg_pool2d"); }},
        {"BatchNormalization", BatchNormalization},
        {"Cast", Cast},
        {"DequantizeLinear", DequantizeLinear},
        {"Ceil", MF_UNARY("ceil")},
        {"Clip", Clip},
        {"Concat", Concat},
        {"Constant", ConstantOp},
        {"ConstantOfShape", ConstantOfShape},
        {"Conv", Conv},
        {"ConvTranspose", ConvTranspose},
        {"Div", MF_NARY("div")},
        {"Dropout", PassThrough},
        {"Elu", Elu},
        {"Equal", MF_NARY("equal")},
        {"Exp", MF_UNARY("exp")},
        {"Expand", Expand},
        {"Flatten", Flatten},
        {"Floor", MF_UNARY("floor")},
        {"Gather", Gather},
        {"Gelu", Gelu},
        {"Gemm", Gemm},
        {"GlobalAveragePool", [](Importer& im) { return GlobalPool(im, "mean"); }},
        {"GlobalMaxPool", [](Importer& im) { return GlobalPool(im, "reduce_max"); }},
        {"Greater", MF_NARY("greater")},
        {"GreaterOrEqual", MF_NARY("greater_equal")},
        {"GRU", Gru},
        {"HardSigmoid", HardSigmoid},
        {"HardSwish", MF_UNARY("hard_swish")},
        {"Identity", PassThrough},
        {"LayerNormalization", LayerNormalization},
        {"LeakyRelu",
         [](Importer& im) {
           return UnaryOp(im, "leaky_relu", {{"alpha", im.Float("alpha", 0.01)}});
         }},
        {"Less", MF_NARY("less")},
        {"LessOrEqual", MF_NARY("less_equal")},
        {"Log", MF_UNARY("log")},
        {"LogSoftmax", [](Importer& im) { return Softmax(im, "log_softmax"); }},
        {"MatMul", MatMul},
        {"Max", MF_NARY("max")},
        {"MaxPool", [](Importer& im) { return Pool(im, "max_pool2d"); }},
        {"Min", MF_NARY("min")},
        {"Mod", Mod},
        {"Mul", MF_NARY("mul")},
        {"Neg", MF_UNARY("neg")},
        {"Not", MF_UNARY("logical_not")},
        {"Or", MF_NARY("logical_or")},
        {"Pad", Pad},
        {"Pow", Pow},
        {"PRelu", MF_NARY("prelu")},
        {"QLinearConv", QLinearConv},
        {"QLinearMatMul", QLinearMatMul},
        {"QuantizeLinear", QuantizeLinear},
        {"Range", Range},
        {"Reciprocal", Reciprocal},
        {"ReduceMax", [](Importer& im) { return Reduce(im, "reduce_max"); }},
        {"ReduceMean", [](Importer& im) { return Reduce(im, "mean"); }},
        {"ReduceMin", [](Importer& im) { return Reduce(im, "reduce_min"); }},
        {"ReduceSum", [](Importer& im) { return Reduce(im, "sum"); }},
        {"Relu", [](Importer& im) { return Activation(im, "relu"); }},
        {"Reshape", Reshape},
        {"Resize", Resize},
        {"Shape", ShapeOp},
        {"Sigmoid", MF_UNARY("sigmoid")},
        {"Size", Size},
        {"Slice", Slice},
        {"Softmax", [](Importer& im) { return Softmax(im, "softmax"); }},
        {"Split", Split},
        {"Sqrt", MF_UNARY("sqrt")},
        {"Squeeze", Squeeze},
        {"Sub", MF_NARY("sub")},
        {"Tanh", MF_UNARY("tanh")},
        {"Transpose", Transpose},
        {"Unsqueeze", Unsqueeze},
        {"Where", Where},
    };
    std::sort(t.begin(), t.end(),
              [](const Entry& a, const Entry& b) { return a.op_type < b.op_type; });
    return t;
  }();
  return table;
}

#undef MF_UNARY
#undef MF_NARY

}  // namespace

Converter FindConverter(std::string_view op_type) {
  const auto& table = Table();
  auto it =
      std::lower_bound(table.begin(), table.end(), op_type,
                       [](const Entry& e, std::string_view name) { return e.op_type < name; });
  return it != table.end() && it->op_type == op_type ? it->convert : nullptr;
}

std::vector<std::string_view> ConvertedOperators() {
  std::vector<std::string_view> names;
  for (const Entry& e : Table()) names.push_back(e.op_type);
  return names;
}

}  // namespace memfold::onnx_import
