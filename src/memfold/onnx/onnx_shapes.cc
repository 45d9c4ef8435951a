// ONNX shape and data-movement operators (reshapes, transposes, concatenation, slicing,
// gathering, padding) and the constant makers (Constant, Shape, Range, ...), axes mapped to
// the layout each tensor is held in.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "memfold/onnx/onnx_converters.h"

namespace memfold::onnx_import {

int64_t Product(const Shape& shape, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t d = from; d < to && d < shape.size(); ++d) n *= shape[d];
  return n;
}

// --- shapes and data movement

namespace {

// `x` as read by RawInput: a quantized tensor is reshaped in its integer form.
Status ReshapeTo(Importer& im, Tensor x, const Shape& shape) {
  MF_ASSIGN_OR_RETURN(ValueId input, im.Plain(x));
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("reshape", {input}, {{"shape", shape}}));
  return MovedOutput(im, y, false, x.quantized);
}

}  // namespace

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
  if (in.size() + axes.size() > 64) return im.Error("makes a tensor of rank above 64");
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

namespace {

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

}  // namespace

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
    if (!bytes.empty()) std::memcpy(bytes.data(), k.data(), bytes.size());
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
  if (!bytes.empty()) std::memcpy(bytes.data(), dims.data(), bytes.size());
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
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
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
    if (!(std::abs(v[0]) <= 9007199254740992.0))  // 2^53: exact in double, NaN refused
      return im.Error("has a bound beyond 2^53");
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

// DepthToSpace and SpaceToDepth as TFLite's NHWC ops: output[h*b + i][w*b + j][c] is input
// channel (i*b + j)*C' + c, ONNX's DCR order. PyTorch's pixel_shuffle writes CRD (channel
// c*b*b + i*b + j): a gather of the channels into DCR order first.
Status BlockRearrange(Importer& im, bool to_space) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  if (im.Rank(x) != 4) return im.Error("needs a 4-D input");
  const int64_t b = im.Int("blocksize", 0);
  const Shape in = im.OnnxShape(x);
  if (b < 1 || b > 4096 || (to_space && in[1] % (b * b) != 0) ||
      (!to_space && (in[2] % b != 0 || in[3] % b != 0)))
    return im.Error("has block size " + std::to_string(b) + " for input " + ShapeString(in));
  MF_ASSIGN_OR_RETURN(ValueId input, im.ChannelsLast(x));
  const std::string mode = to_space ? im.Str("mode", "DCR") : "DCR";
  if (mode == "CRD") {
    const int64_t kept = in[1] / (b * b);
    MF_RETURN_IF_ERROR(im.CheckedElements({in[1]}).status());
    Ints order(static_cast<size_t>(in[1]));
    for (int64_t block = 0; block < b * b; ++block) {
      for (int64_t c = 0; c < kept; ++c)
        order[static_cast<size_t>(block * kept + c)] = c * b * b + block;
    }
    Bytes bytes(order.size() * sizeof(int64_t));
    std::memcpy(bytes.data(), order.data(), bytes.size());
    const ValueId index = im.Constant(DType::kI64, {in[1]}, std::move(bytes));
    MF_ASSIGN_OR_RETURN(input, im.Emit("gather_axis", {input, index}, {{"axis", int64_t{3}}}));
  } else if (mode != "DCR") {
    return im.Error("has mode \"" + mode + "\"");
  }
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit(to_space ? "depth_to_space" : "space_to_depth", {input},
                                         {{"block_size", b}}));
  return im.Output(0, y, true);
}

// Tile: each axis repeated by concatenating copies (constant repeats), in the tensor's layout.
Status Tile(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.RawInput(0));
  if (x.quantized && im.ValueOf(x).quant && im.ValueOf(x).quant->per_channel()) {
    MF_ASSIGN_OR_RETURN(x, im.Input(0));  // the copies of a per-channel scale: real numbers
  }
  MF_ASSIGN_OR_RETURN(Tensor r, im.Input(1));
  MF_ASSIGN_OR_RETURN(Ints repeats, im.ConstInts(r, "the repeats"));
  const int rank = im.Rank(x);
  if (static_cast<int>(repeats.size()) != rank)
    return im.Error("has " + std::to_string(repeats.size()) + " repeats for " +
                    std::to_string(rank) + " axes");
  int64_t copies = 1;
  Shape tiled = im.OnnxShape(x);
  for (size_t d = 0; d < repeats.size(); ++d) {
    if (repeats[d] < 0) return im.Error("has a negative repeat");
    copies *= std::max<int64_t>(repeats[d], 1);
    if (copies > 4096) return im.Opaque("memfold tiles up to 4096 copies");
    tiled[d] *= repeats[d];
  }
  MF_RETURN_IF_ERROR(im.CheckedElements(tiled, im.ValueOf(x).dtype).status());
  ValueId y = x.id;
  for (int d = 0; d < rank; ++d) {
    const int64_t n = repeats[static_cast<size_t>(d)];
    if (n == 1) continue;
    if (n == 0) return im.Opaque("memfold does not make empty tensors");
    MF_ASSIGN_OR_RETURN(int64_t axis, im.Axis(d, rank, x.channels_last));
    MF_ASSIGN_OR_RETURN(
        y, im.Emit("concat", std::vector<ValueId>(static_cast<size_t>(n), y), {{"axis", axis}}));
    im.graph().value(y).quant = im.ValueOf(x).quant;  // copies of one per-tensor scale
  }
  return MovedOutput(im, y, x.channels_last, x.quantized);
}

// Trilu: the upper (or lower) triangle of the last two axes from diagonal k on, the rest zero;
// a select against a constant mask (folded when the input is constant, as a causal mask is).
Status Trilu(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  const int rank = im.Rank(x);
  if (rank < 2) return im.Error("needs at least 2 axes");
  int64_t k = 0;
  if (im.HasInput(1)) {
    MF_ASSIGN_OR_RETURN(Tensor kt, im.Input(1));
    MF_ASSIGN_OR_RETURN(Ints kv, im.ConstInts(kt, "the diagonal"));
    if (kv.size() != 1) return im.Error("needs one diagonal");
    k = kv[0];
  }
  const bool upper = im.Int("upper", 1) != 0;
  const Shape shape = im.OnnxShape(x);
  const int64_t rows = shape[static_cast<size_t>(rank) - 2];
  const int64_t cols = shape[static_cast<size_t>(rank) - 1];
  MF_ASSIGN_OR_RETURN(const int64_t cells, im.CheckedElements({rows, cols}, DType::kBool));
  Bytes mask(static_cast<size_t>(StorageBytes(DType::kBool, cells)));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      const bool keep = upper ? j - i >= k : j - i <= k;
      mask[static_cast<size_t>(i * cols + j)] = std::byte{keep};
    }
  }
  const DType dtype = im.ValueOf(x).dtype;
  const ValueId keep = im.Constant(DType::kBool, {rows, cols}, std::move(mask));
  const ValueId zero = im.Constant(dtype, {}, Bytes(static_cast<size_t>(StorageBytes(dtype, 1))));
  MF_ASSIGN_OR_RETURN(ValueId input, im.Plain(x));
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("select_v2", {keep, input, zero}));
  return im.Output(0, y, false);
}

}  // namespace memfold::onnx_import
