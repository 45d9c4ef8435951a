// ONNX reductions, softmax, layer norm, matrix products and the GRU and LSTM (unrolled over
// their static sequence, in every direction) as memfold registry ops.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <numeric>

#include "memfold/onnx/onnx_converters.h"

namespace memfold::onnx_import {

// --- reductions and normalisation

namespace {

// log(sum(exp(x - max))) + max over `axes`: ONNX's ReduceLogSumExp without overflow.
Status LogSumExp(Importer& im, ValueId input, const Ints& axes, bool keep, bool last) {
  const Attrs kept{{"axes", axes}, {"keepdims", int64_t{1}}};
  MF_ASSIGN_OR_RETURN(ValueId max, im.Emit("reduce_max", {input}, kept));
  MF_ASSIGN_OR_RETURN(ValueId centred, im.Emit("sub", {input, max}));
  MF_ASSIGN_OR_RETURN(ValueId exp, im.Emit("exp", {centred}));
  MF_ASSIGN_OR_RETURN(ValueId sum, im.Emit("sum", {exp}, kept));
  MF_ASSIGN_OR_RETURN(ValueId log, im.Emit("log", {sum}));
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("add", {log, max}));
  if (!keep) {
    Shape shape;
    const Shape& in = im.graph().value(input).shape;
    for (size_t d = 0; d < in.size(); ++d) {
      if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) == axes.end())
        shape.push_back(in[d]);
    }
    MF_ASSIGN_OR_RETURN(y, im.Emit("reshape", {y}, {{"shape", shape}}));
  }
  return im.Output(0, y, last && keep);
}

}  // namespace

Status Reduce(Importer& im, std::string_view op, std::string_view before, std::string_view after) {
  // QDQ mean of an int8 activation into a QuantizeLinear: TFLite's integer mean, which
  // requantises into the output's parameters.
  const std::optional<QuantizedOutput> out = op == "mean" ? im.QuantizedConsumer(0) : std::nullopt;
  const std::optional<Tensor> quantized = out ? Int8Activation(im, 0) : std::nullopt;
  const bool plain = before.empty() && after.empty();
  const int64_t since = op == "sum" && plain ? 13 : 18;
  MF_ASSIGN_OR_RETURN(Ints axes, AxesOf(im, 1, since, "the axes"));
  const bool noop = axes.empty() && im.Int("noop_with_empty_axes", 0) != 0;
  const bool int8 = quantized && out->activation == "none" && !noop;
  MF_ASSIGN_OR_RETURN(Tensor x, int8 ? Result<Tensor>(*quantized) : im.Input(0));
  const int rank = im.Rank(x);
  if (noop && !plain) return im.Opaque("memfold reduces along at least one axis here");
  if (noop) return im.Output(0, x.id, x.channels_last);
  if (axes.empty()) {
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  const bool keep = im.Int("keepdims", 1) != 0;
  // Without keepdims a channels-last tensor still reduces as it is when the axes left are in
  // ONNX's order there too: not the channels beside a spatial axis (`x.mean((2, 3))` leaves
  // [N, C], a global average pool, with no transpose of the whole map).
  std::vector<char> reduced(static_cast<size_t>(rank), 0);
  for (int64_t a : axes) reduced[static_cast<size_t>((a % rank + rank) % rank)] = 1;
  const bool kept_channels = rank > 2 && !reduced[1];
  const bool kept_spatial =
      std::find(reduced.begin() + std::min(2, rank), reduced.end(), 0) != reduced.end();
  const bool last = x.channels_last && (keep || !(kept_channels && kept_spatial));
  MF_ASSIGN_OR_RETURN(ValueId input, last ? Result<ValueId>(x.id) : im.Plain(x));
  Ints memfold_axes;
  for (int64_t a : axes) {
    MF_ASSIGN_OR_RETURN(int64_t d, im.Axis(a, rank, last));
    memfold_axes.push_back(d);
  }
  std::sort(memfold_axes.begin(), memfold_axes.end());
  if (op == "log_sum_exp") return LogSumExp(im, input, memfold_axes, keep, last);
  if (!before.empty()) {
    MF_ASSIGN_OR_RETURN(input, im.Emit(before, {input}));
  }
  MF_ASSIGN_OR_RETURN(ValueId y,
                      im.Emit(op, {input}, {{"axes", memfold_axes}, {"keepdims", int64_t{keep}}}));
  if (!after.empty()) {
    MF_ASSIGN_OR_RETURN(y, im.Emit(after, {y}));
  }
  if (int8) return im.QuantizedResult(y, *out, last && keep);
  return im.Output(0, y, last && keep);
}

// ReduceProd of a constant (the element counts TorchScript's exports compute from shapes, as
// for `x.std()`), evaluated at import; memfold has no kernel to run it on activations.
Status ReduceProd(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  const DType dtype = im.ValueOf(x).dtype;
  if (!im.IsConstant(x) || (dtype != DType::kI64 && dtype != DType::kF32))
    return im.Opaque("memfold multiplies out constant int64 or float32 tensors only");
  MF_ASSIGN_OR_RETURN(Ints axes, AxesOf(im, 1, 18, "the axes"));
  MF_ASSIGN_OR_RETURN(std::vector<double> values, im.ConstDoubles(x, "the input"));
  const Shape in = im.OnnxShape(x);
  const int rank = static_cast<int>(in.size());
  std::vector<char> reduced(in.size(), axes.empty() && im.Int("noop_with_empty_axes", 0) == 0);
  for (int64_t a : axes) {
    MF_ASSIGN_OR_RETURN(int64_t d, im.Axis(a, rank, false));
    reduced[static_cast<size_t>(d)] = 1;
  }
  Shape kept_shape, out_shape;  // the result with kept size-1 axes, and as the node gives it
  for (size_t d = 0; d < in.size(); ++d) {
    kept_shape.push_back(reduced[d] ? 1 : in[d]);
    if (!reduced[d] || im.Int("keepdims", 1) != 0) out_shape.push_back(reduced[d] ? 1 : in[d]);
  }
  MF_ASSIGN_OR_RETURN(const int64_t cells, im.CheckedElements(kept_shape, dtype));
  std::vector<double> product(static_cast<size_t>(cells), 1.0);
  for (int64_t k = 0; k < static_cast<int64_t>(values.size()); ++k) {
    int64_t rest = k, target = 0, stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t i = rest % in[static_cast<size_t>(d)];
      rest /= in[static_cast<size_t>(d)];
      if (!reduced[static_cast<size_t>(d)]) target += i * stride;
      stride *= kept_shape[static_cast<size_t>(d)];
    }
    product[static_cast<size_t>(target)] *= values[static_cast<size_t>(k)];
  }
  ValueId y;
  if (dtype == DType::kF32) {
    y = im.FloatConstant(out_shape, std::vector<float>(product.begin(), product.end()));
  } else {
    std::vector<int64_t> ints;
    for (double p : product) {
      if (!(std::abs(p) < 9e18)) return im.Error("multiplies out beyond int64");
      ints.push_back(static_cast<int64_t>(p));
    }
    Bytes bytes(ints.size() * sizeof(int64_t));
    if (!bytes.empty()) std::memcpy(bytes.data(), ints.data(), bytes.size());
    y = im.Constant(DType::kI64, out_shape, std::move(bytes));
  }
  return im.Output(0, y, false);
}

// The index of the largest (smallest) element along `axis`, as int64; the first of equal ones.
Status ArgMinMax(Importer& im, bool max) {
  if (im.Int("select_last_index", 0) != 0)
    return im.Opaque("memfold returns the first index of equal extremes");
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  const int rank = im.Rank(x);
  MF_ASSIGN_OR_RETURN(int64_t axis, im.Axis(im.Int("axis", 0), rank, false));
  MF_ASSIGN_OR_RETURN(ValueId input, im.Plain(x));
  MF_ASSIGN_OR_RETURN(
      ValueId y,
      im.Emit("arg_min_max", {input},
              {{"axis", axis}, {"max", int64_t{max}}, {"output_dtype", std::string("i64")}}));
  if (im.Int("keepdims", 1) != 0) {
    Shape kept = im.OnnxShape(x);
    kept[static_cast<size_t>(axis)] = 1;
    MF_ASSIGN_OR_RETURN(y, im.Emit("reshape", {y}, {{"shape", kept}}));
  }
  return im.Output(0, y, false);
}

// Running sums along a constant axis (exclusive: each element left out of its own; reverse:
// from the end), in the tensor's own layout.
Status CumSum(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  MF_ASSIGN_OR_RETURN(Tensor axis_tensor, im.Input(1));
  MF_ASSIGN_OR_RETURN(Ints axis, im.ConstInts(axis_tensor, "the axis"));
  if (axis.size() != 1) return im.Error("needs one axis");
  MF_ASSIGN_OR_RETURN(int64_t a, im.Axis(axis[0], im.Rank(x), x.channels_last));
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("cumsum", {x.id},
                                         {{"axis", a},
                                          {"exclusive", int64_t{im.Int("exclusive", 0) != 0}},
                                          {"reverse", int64_t{im.Int("reverse", 0) != 0}}}));
  return im.Output(0, y, x.channels_last);
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

// (x - mean) * rsqrt(mean((x - mean)^2) + epsilon) * scale + bias over the axes from `axis`
// on, in memfold's elementwise ops and means (all of which have device kernels and TFLite
// builtins, as TFLite's converter decomposes it).
namespace {

// (x - mean) / sqrt(variance + epsilon), the moments over `axes` of `input`.
Result<ValueId> Normalised(Importer& im, ValueId input, const Ints& axes) {
  const Attrs over{{"axes", axes}, {"keepdims", int64_t{1}}};
  MF_ASSIGN_OR_RETURN(ValueId mean, im.Emit("mean", {input}, over));
  MF_ASSIGN_OR_RETURN(ValueId centered, im.Emit("sub", {input, mean}));
  MF_ASSIGN_OR_RETURN(ValueId squared, im.Emit("square", {centered}));
  MF_ASSIGN_OR_RETURN(ValueId variance, im.Emit("mean", {squared}, over));
  MF_ASSIGN_OR_RETURN(ValueId epsilon, Scalar(im, im.Float("epsilon", 1e-5)));
  MF_ASSIGN_OR_RETURN(ValueId shifted, im.Emit("add", {variance, epsilon}));
  MF_ASSIGN_OR_RETURN(ValueId inverse, im.Emit("rsqrt", {shifted}));
  return im.Emit("mul", {centered, inverse});
}

}  // namespace

Status LayerNormalization(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  MF_ASSIGN_OR_RETURN(Tensor scale, im.Input(1));
  const int rank = im.Rank(x);
  MF_ASSIGN_OR_RETURN(int64_t axis, im.Axis(im.Int("axis", -1), rank, false));
  if (im.node().output_size() > 1 && !im.node().output(1).empty())
    return im.Opaque("memfold returns only the normalised result");
  if (im.ValueOf(x).dtype != DType::kF32) return im.Opaque("memfold normalises float32");
  Ints axes;
  for (int64_t d = axis; d < rank; ++d) axes.push_back(d);
  MF_ASSIGN_OR_RETURN(ValueId input, im.Plain(x));
  MF_ASSIGN_OR_RETURN(ValueId normalised, Normalised(im, input, axes));
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("mul", {normalised, scale.id}));
  if (im.HasInput(2)) {
    MF_ASSIGN_OR_RETURN(Tensor bias, im.Input(2));
    MF_ASSIGN_OR_RETURN(y, im.Emit("add", {y, bias.id}));
  }
  return im.Output(0, y, false);
}

// Each channel of each sample normalised over its spatial axes, then scaled and shifted per
// channel (InstanceNorm2d, and GroupNorm as PyTorch exports it); computed channels-last, where
// the per-channel scale and bias broadcast along the last axis.
Status InstanceNormalization(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  MF_ASSIGN_OR_RETURN(Tensor scale, im.Input(1));
  MF_ASSIGN_OR_RETURN(Tensor bias, im.Input(2));
  const int rank = im.Rank(x);
  if (rank < 3 || im.ValueOf(x).dtype != DType::kF32)
    return im.Opaque("memfold normalises float32 instances of rank 3 or more");
  const int64_t channels = im.OnnxShape(x)[1];
  if (im.OnnxShape(scale) != Shape{channels} || im.OnnxShape(bias) != Shape{channels})
    return im.Error("needs a scale and a bias of " + std::to_string(channels) + " channels");
  MF_ASSIGN_OR_RETURN(ValueId input, im.ChannelsLast(x));
  Ints axes;
  for (int64_t d = 1; d + 1 < rank; ++d) axes.push_back(d);
  MF_ASSIGN_OR_RETURN(ValueId normalised, Normalised(im, input, axes));
  MF_ASSIGN_OR_RETURN(ValueId scaled, im.Emit("mul", {normalised, scale.id}));
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("add", {scaled, bias.id}));
  return im.Output(0, y, true);
}

// --- matrix products

namespace {

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

}  // namespace

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
    const bool vector = im.IsConstant(c) && im.ValueOf(c).elements() == n && im.Rank(c) >= 1 &&
                        im.OnnxShape(c).back() == n;
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

// --- Einsum

namespace {

// `v` (letters `from`, one per axis) transposed to the order of `to` (the same letters).
Result<ValueId> Arrange(Importer& im, ValueId v, const std::string& from, const std::string& to) {
  Ints perm;
  for (char c : to) perm.push_back(static_cast<int64_t>(from.find(c)));
  bool identity = true;
  for (size_t d = 0; d < perm.size(); ++d)
    identity = identity && perm[d] == static_cast<int64_t>(d);
  if (identity) return v;
  return im.Emit("transpose", {v}, {{"perm", perm}});
}

// The letters of `term` that are in `other` (or not), in term's order.
std::string Kept(const std::string& term, const std::string& other, bool in_other) {
  std::string out;
  for (char c : term) {
    if ((other.find(c) != std::string::npos) == in_other) out += c;
  }
  return out;
}

}  // namespace

// Einsum of one or two operands, without ellipses or a letter twice in one operand: letters of
// one operand found nowhere else are summed first; two operands become a batch matmul over
// [batch, left, contracted] x [batch, contracted, right], transposed and reshaped around it.
Status Einsum(Importer& im) {
  std::string equation = im.Str("equation", "");
  equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
  if (equation.find('.') != std::string::npos)
    return im.Opaque("memfold converts einsums without ellipses");
  const size_t arrow = equation.find("->");
  std::vector<std::string> terms;
  const std::string lhs = equation.substr(0, arrow);
  for (size_t begin = 0;;) {
    const size_t comma = lhs.find(',', begin);
    terms.push_back(lhs.substr(begin, comma - begin));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  if (terms.size() > 2 || static_cast<int>(terms.size()) != im.num_inputs())
    return im.Opaque("memfold converts einsums of one or two operands");
  std::map<char, int64_t> dims, count;
  std::vector<ValueId> operands;
  for (size_t k = 0; k < terms.size(); ++k) {
    MF_ASSIGN_OR_RETURN(Tensor t, im.Input(static_cast<int>(k)));
    const Shape shape = im.OnnxShape(t);
    if (terms[k].size() != shape.size()) return im.Error("has a term per axis of another rank");
    for (size_t d = 0; d < shape.size(); ++d) {
      const char c = terms[k][d];
      if (!std::isalpha(static_cast<unsigned char>(c)) || terms[k].find(c) != d)
        return im.Opaque("memfold converts einsums whose operands name each axis once");
      if (dims.count(c) && dims[c] != shape[d]) return im.Error("gives a letter two sizes");
      dims[c] = shape[d];
      ++count[c];
    }
    MF_ASSIGN_OR_RETURN(ValueId v, im.Plain(t));
    operands.push_back(v);
  }
  std::string out;
  if (arrow == std::string::npos) {  // implicit: the letters used once, in alphabetical order
    for (const auto& [c, n] : count) {
      if (n == 1) out += c;
    }
  } else {
    out = equation.substr(arrow + 2);
  }
  for (size_t d = 0; d < out.size(); ++d) {
    if (!dims.count(out[d]) || out.find(out[d]) != d)
      return im.Error("has output letters that are repeated or in no operand");
  }
  auto shape_of = [&](const std::string& letters) {
    Ints shape;
    for (char c : letters) shape.push_back(dims[c]);
    return shape;
  };
  // Sum each operand's letters that appear in neither the other operand nor the output.
  for (size_t k = 0; k < terms.size(); ++k) {
    const std::string elsewhere = out + (terms.size() == 2 ? terms[1 - k] : "");
    const std::string kept = Kept(terms[k], elsewhere, true);
    if (kept.size() == terms[k].size()) continue;
    Ints axes;
    for (size_t d = 0; d < terms[k].size(); ++d) {
      if (kept.find(terms[k][d]) == std::string::npos) axes.push_back(static_cast<int64_t>(d));
    }
    MF_ASSIGN_OR_RETURN(operands[k],
                        im.Emit("sum", {operands[k]}, {{"axes", axes}, {"keepdims", int64_t{0}}}));
    terms[k] = kept;
  }
  if (terms.size() == 1) {
    MF_ASSIGN_OR_RETURN(ValueId y, Arrange(im, operands[0], terms[0], out));
    return im.Output(0, y, false);
  }
  const std::string& a = terms[0];
  const std::string& b = terms[1];
  const std::string batch = Kept(Kept(out, a, true), b, true);
  const std::string contracted = Kept(Kept(a, b, true), out, false);
  const std::string left = Kept(a, b, false), right = Kept(b, a, false);
  auto size = [&](const std::string& letters) {
    return Product(shape_of(letters), 0, letters.size());
  };
  MF_ASSIGN_OR_RETURN(ValueId lhs_v, Arrange(im, operands[0], a, batch + left + contracted));
  MF_ASSIGN_OR_RETURN(ValueId rhs_v, Arrange(im, operands[1], b, batch + contracted + right));
  MF_ASSIGN_OR_RETURN(lhs_v, im.Emit("reshape", {lhs_v},
                                     {{"shape", Ints{size(batch), size(left), size(contracted)}}}));
  MF_ASSIGN_OR_RETURN(
      rhs_v,
      im.Emit("reshape", {rhs_v}, {{"shape", Ints{size(batch), size(contracted), size(right)}}}));
  MF_ASSIGN_OR_RETURN(ValueId product, im.Emit("tflite_batch_matmul", {lhs_v, rhs_v}));
  const std::string term = batch + left + right;
  MF_ASSIGN_OR_RETURN(product, im.Emit("reshape", {product}, {{"shape", shape_of(term)}}));
  MF_ASSIGN_OR_RETURN(ValueId y, Arrange(im, product, term, out));
  return im.Output(0, y, false);
}

// --- recurrent: GRU and LSTM, unrolled over the file's static sequence

namespace {

// What a GRU and an LSTM share: X [seq, batch, input] (layout 0), W [directions, gates * H,
// input], R [directions, gates * H, H], B [directions, 2 * gates * H], initial states
// [directions, batch, H]; forward, reverse or bidirectional.
struct Recurrence {
  Tensor x, w, r;
  int64_t seq = 0, batch = 0, in = 0, hidden = 0, gates = 0, directions = 1;
  bool reverse = false;  // the one direction runs from the last step to the first
};

// Whether the node's activations are ONNX's defaults (`per_direction`, for every direction).
bool DefaultActivations(const Importer& im, const std::vector<std::string>& per_direction,
                        int64_t directions) {
  const onnx::AttributeProto* attr = im.Attr("activations");
  if (attr == nullptr) return true;
  if (attr->strings_size() != static_cast<int>(per_direction.size() * directions)) return false;
  for (int k = 0; k < attr->strings_size(); ++k) {
    if (attr->strings(k) != per_direction[static_cast<size_t>(k) % per_direction.size()])
      return false;
  }
  return true;
}

Result<Recurrence> ReadRecurrence(Importer& im, int64_t gates,
                                  const std::vector<std::string>& activations) {
  Recurrence rc;
  rc.gates = gates;
  MF_ASSIGN_OR_RETURN(rc.x, im.Input(0));
  MF_ASSIGN_OR_RETURN(rc.w, im.Input(1));
  MF_ASSIGN_OR_RETURN(rc.r, im.Input(2));
  const std::string direction = im.Str("direction", "forward");
  if (direction == "bidirectional") {
    rc.directions = 2;
  } else if (direction == "reverse") {
    rc.reverse = true;
  } else if (direction != "forward") {
    return im.Error("has direction \"" + direction + "\"");
  }
  const std::string name = im.node().op_type();
  if (im.Int("layout", 0) != 0 || im.Attr("clip") != nullptr || !im.IsConstant(rc.w) ||
      !im.IsConstant(rc.r) || !DefaultActivations(im, activations, rc.directions))
    return im.Opaque("memfold unrolls " + name +
                     "s of layout 0, constant weights, default activations and no clip");
  const Shape xs = im.OnnxShape(rc.x), ws = im.OnnxShape(rc.w), rs = im.OnnxShape(rc.r);
  if (xs.size() != 3 || ws.size() != 3 || rs.size() != 3)
    return im.Error(
        "needs X [seq, batch, input], W [directions, gates * hidden, input], R "
        "[directions, gates * hidden, hidden]");
  rc.seq = xs[0], rc.batch = xs[1], rc.in = xs[2];
  rc.hidden = im.Int("hidden_size", rs[2]);
  if (rc.hidden != rs[2] || ws != Shape{rc.directions, gates * rc.hidden, rc.in} ||
      rs != Shape{rc.directions, gates * rc.hidden, rc.hidden})
    return im.Error("has weights " + ShapeString(ws) + " and " + ShapeString(rs) +
                    " for hidden size " + std::to_string(rc.hidden) + ", input " +
                    std::to_string(rc.in) + " and " + std::to_string(rc.directions) +
                    " direction(s)");
  if (rc.seq < 1 || rc.seq > 4096) return im.Opaque("memfold unrolls sequences of 1 to 4096 steps");
  MF_RETURN_IF_ERROR(
      im.CheckedElements({rc.seq, rc.directions, rc.batch, rc.hidden}, DType::kF32).status());
  if (im.HasInput(4)) {  // sequence_lens: only when every sequence is whole
    MF_ASSIGN_OR_RETURN(Tensor lens, im.Input(4));
    Result<std::vector<int64_t>> values = im.ConstInts(lens, "sequence_lens");
    if (!values.ok() ||
        std::any_of(values->begin(), values->end(), [&](int64_t n) { return n != rc.seq; }))
      return im.Opaque("memfold unrolls " + name + "s whose sequences all have every step");
  }
  return rc;
}

// Direction d's weights: W_d [G*H, input], R_d [G*H, H] and the biases Wb_d, Rb_d [G*H] (zeros
// without B); for a GRU also R_d and Rb_d gate by gate.
struct DirectionWeights {
  ValueId w, r, wb, rb;
  std::vector<ValueId> r_gates, rb_gates;
};

// Row block d of a [directions, rows, cols] tensor (cols 0: [directions, rows]) as [rows(, cols)].
Result<ValueId> DirectionSlice(Importer& im, ValueId v, int64_t d, int64_t begin, int64_t rows,
                               int64_t cols) {
  const Ints at = cols > 0 ? Ints{d, begin, 0} : Ints{d, begin};
  const Ints size = cols > 0 ? Ints{1, rows, cols} : Ints{1, rows};
  MF_ASSIGN_OR_RETURN(ValueId s, im.Emit("slice", {v}, {{"begin", at}, {"size", size}}));
  return im.Emit("reshape", {s}, {{"shape", cols > 0 ? Ints{rows, cols} : Ints{rows}}});
}

Result<DirectionWeights> WeightsOf(Importer& im, const Recurrence& rc, int64_t d, bool by_gate) {
  const int64_t gh = rc.gates * rc.hidden;
  DirectionWeights dw;
  MF_ASSIGN_OR_RETURN(dw.w, DirectionSlice(im, rc.w.id, d, 0, gh, rc.in));
  MF_ASSIGN_OR_RETURN(dw.r, DirectionSlice(im, rc.r.id, d, 0, gh, rc.hidden));
  if (im.HasInput(3)) {
    MF_ASSIGN_OR_RETURN(Tensor b, im.Input(3));
    if (im.OnnxShape(b) != Shape{rc.directions, 2 * gh})
      return im.Error("has B " + ShapeString(im.OnnxShape(b)) + ", not [" +
                      std::to_string(rc.directions) + ", " + std::to_string(2 * gh) + "]");
    MF_ASSIGN_OR_RETURN(dw.wb, DirectionSlice(im, b.id, d, 0, gh, 0));
    MF_ASSIGN_OR_RETURN(dw.rb, DirectionSlice(im, b.id, d, gh, gh, 0));
  } else {
    dw.wb = dw.rb = im.FloatConstant({gh}, std::vector<float>(static_cast<size_t>(gh), 0));
  }
  if (by_gate) {
    const Ints sizes(static_cast<size_t>(rc.gates), rc.hidden);
    MF_ASSIGN_OR_RETURN(dw.r_gates,
                        im.EmitAll("split", {dw.r}, {{"axis", int64_t{0}}, {"sizes", sizes}}));
    MF_ASSIGN_OR_RETURN(dw.rb_gates,
                        im.EmitAll("split", {dw.rb}, {{"axis", int64_t{0}}, {"sizes", sizes}}));
  }
  return dw;
}

// Input k (an initial state [directions, batch, H]) for direction d as [batch, H]; zeros
// without it.
Result<ValueId> InitialState(Importer& im, const Recurrence& rc, int k, int64_t d) {
  if (!im.HasInput(k)) {
    return im.FloatConstant({rc.batch, rc.hidden},
                            std::vector<float>(static_cast<size_t>(rc.batch * rc.hidden), 0));
  }
  MF_ASSIGN_OR_RETURN(Tensor s, im.Input(k));
  if (im.OnnxShape(s) != Shape{rc.directions, rc.batch, rc.hidden})
    return im.Error("has an initial state of shape " + ShapeString(im.OnnxShape(s)));
  MF_ASSIGN_OR_RETURN(ValueId plain, im.Plain(s));
  MF_ASSIGN_OR_RETURN(ValueId one,
                      im.Emit("slice", {plain},
                              {{"begin", Ints{d, 0, 0}}, {"size", Ints{1, rc.batch, rc.hidden}}}));
  return im.Emit("reshape", {one}, {{"shape", Ints{rc.batch, rc.hidden}}});
}

// The recurrent state: h, then c for an LSTM; each [batch, H].
using State = std::vector<ValueId>;
// One step of direction d: the state after the step whose input projections (X_t W^T + Wb)
// are `xw`.
using Step =
    std::function<Result<State>(int64_t d, const DirectionWeights&, ValueId xw, const State&)>;

// Runs `step` over the sequence in every direction and binds Y [seq, directions, batch, H]
// and the last states (Y_h, Y_c: [directions, batch, H]) the node names. `initial` are the
// inputs holding the initial states.
Status Unroll(Importer& im, const Recurrence& rc, bool by_gate, const std::vector<int>& initial,
              const Step& step) {
  MF_ASSIGN_OR_RETURN(ValueId x, im.Plain(rc.x));
  const int64_t gh = rc.gates * rc.hidden;
  std::vector<std::vector<ValueId>> hs(static_cast<size_t>(rc.directions),
                                       std::vector<ValueId>(static_cast<size_t>(rc.seq)));
  std::vector<State> last;
  for (int64_t d = 0; d < rc.directions; ++d) {
    MF_ASSIGN_OR_RETURN(DirectionWeights dw, WeightsOf(im, rc, d, by_gate));
    // The input projections of every step at once: [seq * batch, G*H].
    MF_ASSIGN_OR_RETURN(ValueId xw, im.Emit("fully_connected", {x, dw.w, dw.wb}));
    State state;
    for (int k : initial) {
      MF_ASSIGN_OR_RETURN(ValueId s, InitialState(im, rc, k, d));
      state.push_back(s);
    }
    const bool backwards = rc.reverse || d == 1;
    for (int64_t i = 0; i < rc.seq; ++i) {
      const int64_t t = backwards ? rc.seq - 1 - i : i;
      MF_ASSIGN_OR_RETURN(
          ValueId xt,
          im.Emit("slice", {xw}, {{"begin", Ints{t * rc.batch, 0}}, {"size", Ints{rc.batch, gh}}}));
      MF_ASSIGN_OR_RETURN(state, step(d, dw, xt, state));
      hs[static_cast<size_t>(d)][static_cast<size_t>(t)] = state[0];
    }
    last.push_back(state);
  }
  std::vector<ValueId> order;  // Y's blocks: step by step, direction by direction
  for (int64_t t = 0; t < rc.seq; ++t) {
    for (const auto& h : hs) order.push_back(h[static_cast<size_t>(t)]);
  }
  auto stacked = [&](const std::vector<ValueId>& parts, Ints shape) -> Result<ValueId> {
    ValueId all = parts.front();
    if (parts.size() > 1) {
      MF_ASSIGN_OR_RETURN(all, im.Emit("concat", parts, {{"axis", int64_t{0}}}));
    }
    return im.Emit("reshape", {all}, {{"shape", std::move(shape)}});
  };
  MF_ASSIGN_OR_RETURN(ValueId y, stacked(order, {rc.seq, rc.directions, rc.batch, rc.hidden}));
  MF_RETURN_IF_ERROR(im.Output(0, y));
  for (size_t k = 0; k < initial.size(); ++k) {
    const int out = static_cast<int>(k) + 1;
    if (im.node().output_size() <= out || im.node().output(out).empty()) continue;
    std::vector<ValueId> finals;
    for (const State& s : last) finals.push_back(s[k]);
    MF_ASSIGN_OR_RETURN(ValueId v, stacked(finals, {rc.directions, rc.batch, rc.hidden}));
    MF_RETURN_IF_ERROR(im.Output(out, v));
  }
  return Status::Ok();
}

}  // namespace

// ONNX GRU: gates z, r, h; with linear_before_reset the reset gate scales (H Rh^T + Rbh).
Status Gru(Importer& im) {
  MF_ASSIGN_OR_RETURN(Recurrence rc, ReadRecurrence(im, 3, {"Sigmoid", "Tanh"}));
  const bool before_reset = im.Int("linear_before_reset", 0) != 0;
  const Ints thirds(3, rc.hidden);
  auto step = [&](int64_t, const DirectionWeights& dw, ValueId xw,
                  const State& s) -> Result<State> {
    const ValueId h = s[0];
    MF_ASSIGN_OR_RETURN(std::vector<ValueId> xg,
                        im.EmitAll("split", {xw}, {{"axis", int64_t{1}}, {"sizes", thirds}}));
    auto recurrent = [&](int k, ValueId state) {
      return im.Emit("fully_connected", {state, dw.r_gates[static_cast<size_t>(k)],
                                         dw.rb_gates[static_cast<size_t>(k)]});
    };
    auto gate = [&](int k) -> Result<ValueId> {
      MF_ASSIGN_OR_RETURN(ValueId hr, recurrent(k, h));
      MF_ASSIGN_OR_RETURN(ValueId sum, im.Emit("add", {xg[static_cast<size_t>(k)], hr}));
      return im.Emit("sigmoid", {sum});
    };
    MF_ASSIGN_OR_RETURN(ValueId z, gate(0));
    MF_ASSIGN_OR_RETURN(ValueId rg, gate(1));
    ValueId reset;
    if (before_reset) {
      MF_ASSIGN_OR_RETURN(ValueId hr, recurrent(2, h));
      MF_ASSIGN_OR_RETURN(reset, im.Emit("mul", {rg, hr}));
    } else {
      MF_ASSIGN_OR_RETURN(ValueId rh, im.Emit("mul", {rg, h}));
      MF_ASSIGN_OR_RETURN(reset, recurrent(2, rh));
    }
    MF_ASSIGN_OR_RETURN(ValueId candidate_in, im.Emit("add", {xg[2], reset}));
    MF_ASSIGN_OR_RETURN(ValueId candidate, im.Emit("tanh", {candidate_in}));
    // h = (1 - z) * candidate + z * h = candidate + z * (h - candidate)
    MF_ASSIGN_OR_RETURN(ValueId diff, im.Emit("sub", {h, candidate}));
    MF_ASSIGN_OR_RETURN(ValueId zd, im.Emit("mul", {z, diff}));
    MF_ASSIGN_OR_RETURN(ValueId next, im.Emit("add", {candidate, zd}));
    return State{next};
  };
  return Unroll(im, rc, true, {5}, step);
}

// ONNX LSTM: gates i, o, f, c; peepholes P [directions, 3 H] (i, o, f) when given.
//   i = sigmoid(.. + Pi * C), f = sigmoid(.. + Pf * C), C' = f * C + i * tanh(..),
//   o = sigmoid(.. + Po * C'), H' = o * tanh(C')
Status Lstm(Importer& im) {
  MF_ASSIGN_OR_RETURN(Recurrence rc, ReadRecurrence(im, 4, {"Sigmoid", "Tanh", "Tanh"}));
  if (im.Int("input_forget", 0) != 0)
    return im.Opaque("memfold unrolls LSTMs without a coupled input and forget gate");
  std::vector<std::vector<ValueId>> peepholes;  // per direction: Pi, Po, Pf
  if (im.HasInput(7)) {
    MF_ASSIGN_OR_RETURN(Tensor p, im.Input(7));
    if (im.OnnxShape(p) != Shape{rc.directions, 3 * rc.hidden})
      return im.Error("has peepholes of shape " + ShapeString(im.OnnxShape(p)));
    for (int64_t d = 0; d < rc.directions; ++d) {
      std::vector<ValueId> three;
      for (int64_t k = 0; k < 3; ++k) {
        MF_ASSIGN_OR_RETURN(ValueId v, DirectionSlice(im, p.id, d, k * rc.hidden, rc.hidden, 0));
        three.push_back(v);
      }
      peepholes.push_back(three);
    }
  }
  const Ints quarters(4, rc.hidden);
  auto step = [&](int64_t d, const DirectionWeights& dw, ValueId xw,
                  const State& s) -> Result<State> {
    const ValueId h = s[0], c = s[1];
    MF_ASSIGN_OR_RETURN(ValueId hr, im.Emit("fully_connected", {h, dw.r, dw.rb}));
    MF_ASSIGN_OR_RETURN(ValueId sum, im.Emit("add", {xw, hr}));
    MF_ASSIGN_OR_RETURN(std::vector<ValueId> g,
                        im.EmitAll("split", {sum}, {{"axis", int64_t{1}}, {"sizes", quarters}}));
    auto peep = [&](ValueId gate, int k, ValueId cell) -> Result<ValueId> {
      if (peepholes.empty()) return gate;
      MF_ASSIGN_OR_RETURN(
          ValueId pc,
          im.Emit("mul", {cell, peepholes[static_cast<size_t>(d)][static_cast<size_t>(k)]}));
      return im.Emit("add", {gate, pc});
    };
    MF_ASSIGN_OR_RETURN(ValueId i_in, peep(g[0], 0, c));
    MF_ASSIGN_OR_RETURN(ValueId f_in, peep(g[2], 2, c));
    MF_ASSIGN_OR_RETURN(ValueId i, im.Emit("sigmoid", {i_in}));
    MF_ASSIGN_OR_RETURN(ValueId f, im.Emit("sigmoid", {f_in}));
    MF_ASSIGN_OR_RETURN(ValueId candidate, im.Emit("tanh", {g[3]}));
    MF_ASSIGN_OR_RETURN(ValueId kept, im.Emit("mul", {f, c}));
    MF_ASSIGN_OR_RETURN(ValueId added, im.Emit("mul", {i, candidate}));
    MF_ASSIGN_OR_RETURN(ValueId cell, im.Emit("add", {kept, added}));
    MF_ASSIGN_OR_RETURN(ValueId o_in, peep(g[1], 1, cell));
    MF_ASSIGN_OR_RETURN(ValueId o, im.Emit("sigmoid", {o_in}));
    MF_ASSIGN_OR_RETURN(ValueId squashed, im.Emit("tanh", {cell}));
    MF_ASSIGN_OR_RETURN(ValueId next, im.Emit("mul", {o, squashed}));
    return State{next, cell};
  };
  return Unroll(im, rc, false, {5, 6}, step);
}

}  // namespace memfold::onnx_import
