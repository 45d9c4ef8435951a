// ONNX reductions, softmax, layer norm, matrix products and the GRU (unrolled over its static
// sequence) as memfold registry ops.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "memfold/onnx/onnx_converters.h"

namespace memfold::onnx_import {

// --- reductions and normalisation

Status Reduce(Importer& im, std::string_view op) {
  // QDQ mean of an int8 activation into a QuantizeLinear: TFLite's integer mean, which
  // requantises into the output's parameters.
  const std::optional<QuantizedOutput> out = op == "mean" ? im.QuantizedConsumer(0) : std::nullopt;
  const std::optional<Tensor> quantized = out ? Int8Activation(im, 0) : std::nullopt;
  const int64_t since = op == "sum" ? 13 : 18;
  MF_ASSIGN_OR_RETURN(Ints axes, AxesOf(im, 1, since, "the axes"));
  const bool noop = axes.empty() && im.Int("noop_with_empty_axes", 0) != 0;
  const bool int8 = quantized && out->activation == "none" && !noop;
  MF_ASSIGN_OR_RETURN(Tensor x, int8 ? Result<Tensor>(*quantized) : im.Input(0));
  const int rank = im.Rank(x);
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
  MF_ASSIGN_OR_RETURN(ValueId y,
                      im.Emit(op, {input}, {{"axes", memfold_axes}, {"keepdims", int64_t{keep}}}));
  if (int8) return im.QuantizedResult(y, *out, last && keep);
  return im.Output(0, y, last && keep);
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
  const Attrs over{{"axes", axes}, {"keepdims", int64_t{1}}};
  MF_ASSIGN_OR_RETURN(ValueId input, im.Plain(x));
  MF_ASSIGN_OR_RETURN(ValueId mean, im.Emit("mean", {input}, over));
  MF_ASSIGN_OR_RETURN(ValueId centered, im.Emit("sub", {input, mean}));
  MF_ASSIGN_OR_RETURN(ValueId squared, im.Emit("square", {centered}));
  MF_ASSIGN_OR_RETURN(ValueId variance, im.Emit("mean", {squared}, over));
  MF_ASSIGN_OR_RETURN(ValueId epsilon, Scalar(im, im.Float("epsilon", 1e-5)));
  MF_ASSIGN_OR_RETURN(ValueId shifted, im.Emit("add", {variance, epsilon}));
  MF_ASSIGN_OR_RETURN(ValueId inverse, im.Emit("rsqrt", {shifted}));
  MF_ASSIGN_OR_RETURN(ValueId normalised, im.Emit("mul", {centered, inverse}));
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("mul", {normalised, scale.id}));
  if (im.HasInput(2)) {
    MF_ASSIGN_OR_RETURN(Tensor bias, im.Input(2));
    MF_ASSIGN_OR_RETURN(y, im.Emit("add", {y, bias.id}));
  }
  return im.Output(0, y, false);
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
  const Shape xs = im.OnnxShape(x), ws = im.OnnxShape(w), rs_shape = im.OnnxShape(r);
  if (xs.size() != 3 || ws.size() != 3 || rs_shape.size() != 3)
    return im.Error("needs X [seq, batch, input], W [1, 3 hidden, input], R [1, 3 hidden, hidden]");
  const int64_t hidden = im.Int("hidden_size", rs_shape[2]);
  const int64_t seq = xs[0], batch = xs[1], in = xs[2];
  if (hidden < 1 || ws != Shape{1, 3 * hidden, in} || rs_shape != Shape{1, 3 * hidden, hidden})
    return im.Error("has weights " + ShapeString(ws) + " and " + ShapeString(rs_shape) +
                    " for hidden size " + std::to_string(hidden) + " and input " +
                    std::to_string(in));
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

}  // namespace memfold::onnx_import
