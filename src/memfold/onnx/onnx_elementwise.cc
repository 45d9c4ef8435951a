// ONNX elementwise operators (unary, binary with broadcasting, activations, clamps, casts) as
// memfold registry ops; binary operands meet in one layout (onnx_converters.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "memfold/onnx/onnx_converters.h"

namespace memfold::onnx_import {

// --- elementwise

namespace {

// Unary ops with an int8 kernel, and the output quantisation it fixes (TFLite's LOGISTIC and
// TANH), if any; HARD_SWISH and LEAKY_RELU take any. The others dequantize, run in float and
// quantize.
struct Int8Unary {
  std::string_view op;
  std::optional<Quantization> fixed;
};
const Int8Unary kInt8Unary[] = {{"hard_swish", std::nullopt},
                                {"leaky_relu", std::nullopt},
                                {"sigmoid", Quantization{{1.0f / 256}, {-128}, 0}},
                                {"tanh", Quantization{{1.0f / 128}, {0}, 0}}};

// QDQ `op` of an int8 activation into a QuantizeLinear: the integer kernel, then, when it fixes
// its output's quantisation and the file's differs, a requantize into the file's (one more
// rounding than ONNX Runtime's float op: within a step). False: not so.
Result<bool> QuantizedUnary(Importer& im, std::string_view op, const Attrs& attrs) {
  const auto* row = std::find_if(std::begin(kInt8Unary), std::end(kInt8Unary),
                                 [&](const Int8Unary& r) { return r.op == op; });
  if (row == std::end(kInt8Unary)) return false;
  const std::optional<QuantizedOutput> out = im.QuantizedConsumer(0);
  const std::optional<Tensor> x = Int8Activation(im, 0);
  if (!out || !x || out->activation != "none") return false;
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit(op, {x->id}, attrs));
  if (row->fixed && !SameQuantization(*row->fixed, out->quant)) {
    im.graph().value(y).quant = row->fixed;
    MF_ASSIGN_OR_RETURN(y, im.Emit("quantize", {y}, {{"dtype", std::string("i8")}}));
  }
  MF_RETURN_IF_ERROR(im.QuantizedResult(y, *out, x->channels_last));
  return true;
}

}  // namespace

Status UnaryOp(Importer& im, std::string_view op, Attrs attrs) {
  MF_ASSIGN_OR_RETURN(bool quantized, QuantizedUnary(im, op, attrs));
  if (quantized) return Status::Ok();
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

namespace {

// QDQ Add or Mul of two int8 activations into a QuantizeLinear: the integer kernel, which
// broadcasts (a squeeze-and-excitation block's channel scale) and takes any quantisation.
Result<bool> QuantizedBinary(Importer& im, std::string_view op) {
  const std::optional<QuantizedOutput> out = im.QuantizedConsumer(0);
  const std::optional<Tensor> a = Int8Activation(im, 0), b = Int8Activation(im, 1);
  if (!out || !a || !b || im.num_inputs() != 2) return false;
  bool last = false;
  MF_ASSIGN_OR_RETURN(std::vector<ValueId> ids, Operands(im, {*a, *b}, &last));
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit(op, ids, {{"activation", out->activation}}));
  MF_RETURN_IF_ERROR(im.QuantizedResult(y, *out, last));
  return true;
}

}  // namespace

Status NaryOp(Importer& im, std::string_view op) {
  if (im.num_inputs() < 1) return im.Error("has no inputs");
  if (op == "add" || op == "mul") {
    MF_ASSIGN_OR_RETURN(bool quantized, QuantizedBinary(im, op));
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

namespace {

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

}  // namespace

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
  const std::string approximate = im.Str("approximate", "none");
  if (approximate == "tanh") return UnaryOp(im, "gelu_tanh");
  if (approximate != "none") return im.Error("has approximate \"" + approximate + "\"");
  return UnaryOp(im, "gelu");
}

Status Elu(Importer& im) {
  if (im.Float("alpha", 1.0) != 1.0) return im.Opaque("memfold's elu has alpha 1");
  return UnaryOp(im, "elu");
}

Status Mish(Importer& im) {  // x * tanh(softplus(x))
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  MF_ASSIGN_OR_RETURN(ValueId soft, im.Emit("softplus", {x.id}));
  MF_ASSIGN_OR_RETURN(ValueId squashed, im.Emit("tanh", {soft}));
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("mul", {x.id, squashed}));
  return im.Output(0, y, x.channels_last);
}

Status Softsign(Importer& im) {  // x / (1 + |x|)
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  MF_ASSIGN_OR_RETURN(ValueId one, Scalar(im, 1.0));
  MF_ASSIGN_OR_RETURN(ValueId magnitude, im.Emit("abs", {x.id}));
  MF_ASSIGN_OR_RETURN(ValueId denominator, im.Emit("add", {magnitude, one}));
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("div", {x.id, denominator}));
  return im.Output(0, y, x.channels_last);
}

// gamma * (x > 0 ? x : alpha * (exp(x) - 1)) = gamma * relu(x) + gamma * alpha * min(elu(x), 0).
Status Selu(Importer& im) {
  MF_ASSIGN_OR_RETURN(Tensor x, im.Input(0));
  const double alpha = im.Float("alpha", 1.67326319217681884765625);
  const double gamma = im.Float("gamma", 1.05070102214813232421875);
  MF_ASSIGN_OR_RETURN(ValueId zero, Scalar(im, 0.0));
  MF_ASSIGN_OR_RETURN(ValueId positive_scale, Scalar(im, gamma));
  MF_ASSIGN_OR_RETURN(ValueId negative_scale, Scalar(im, gamma * alpha));
  MF_ASSIGN_OR_RETURN(ValueId positive, im.Emit("relu", {x.id}));
  MF_ASSIGN_OR_RETURN(ValueId elu, im.Emit("elu", {x.id}));
  MF_ASSIGN_OR_RETURN(ValueId negative, im.Emit("min", {elu, zero}));
  MF_ASSIGN_OR_RETURN(ValueId p, im.Emit("mul", {positive, positive_scale}));
  MF_ASSIGN_OR_RETURN(ValueId n, im.Emit("mul", {negative, negative_scale}));
  MF_ASSIGN_OR_RETURN(ValueId y, im.Emit("add", {p, n}));
  return im.Output(0, y, x.channels_last);
}

Status Cast(Importer& im) {
  const std::optional<DType> to = DTypeOfOnnx(static_cast<int32_t>(im.Int("to", 0)));
  if (!to) return im.Opaque("it casts to a type memfold does not store");
  return UnaryOp(im, "cast", {{"dtype", std::string(DTypeName(*to))}});
}

Status LeakyRelu(Importer& im) {
  return UnaryOp(im, "leaky_relu", {{"alpha", im.Float("alpha", 0.01)}});
}

}  // namespace memfold::onnx_import
