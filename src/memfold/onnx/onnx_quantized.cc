// ONNX quantisation: QuantizeLinear and DequantizeLinear (QDQ form) and the QOperator form
// (QLinearConv, QLinearMatMul, com.microsoft's QGemm, QLinearAdd, ...), each converted as the
// float operator it stands for over quantized tensors (onnx_importer.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "memfold/onnx/onnx_converters.h"

namespace memfold::onnx_import {

// --- quantisation (QDQ form)

namespace {

std::pair<int64_t, int64_t> ZeroPointRange(DType dtype) {
  std::pair<int64_t, int64_t> range{0, 0};
  VisitElementType(dtype, [&](auto zero) {
    using T = decltype(zero);
    range = {static_cast<int64_t>(std::numeric_limits<T>::lowest()),
             static_cast<int64_t>(std::numeric_limits<T>::max())};
  });
  return range;
}

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
  const auto [lowest, highest] = ZeroPointRange(dtype);
  for (int64_t z : q.zero_point) {
    if (z < lowest || z > highest)
      return im.Error("has zero point " + std::to_string(z) + " outside its type's range");
  }
  if (im.Int("block_size", 0) != 0) return im.Error("uses blocked quantisation");
  if (q.per_channel()) {
    MF_ASSIGN_OR_RETURN(int64_t a, im.Axis(axis.value_or(im.Int("axis", 1)), rank, false));
    q.axis = static_cast<int32_t>(a);
  }
  return std::pair{q, dtype};
}

}  // namespace

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

namespace {

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
      double v = std::nearbyint(scaled) + static_cast<double>(q.zero_point[0]);
      if (std::isnan(v)) v = static_cast<double>(q.zero_point[0]);
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

}  // namespace

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

namespace {

// A tensor under quantisation `q`: a constant gets it (a copy), an activation must carry it
// already or takes it.
Result<Tensor> WithQuantization(Importer& im, Tensor raw, const Quantization& q) {
  const Value& v = im.ValueOf(raw);
  if (raw.quantized) return im.Error("reads real numbers where it expects integers");
  if (q.per_channel() &&
      (static_cast<size_t>(q.axis) >= v.shape.size() ||
       v.shape[static_cast<size_t>(q.axis)] != static_cast<int64_t>(q.scale.size())))
    return im.Error("has " + std::to_string(q.scale.size()) + " scales for '" + v.name + "' " +
                    ShapeString(v.shape) + " along axis " + std::to_string(q.axis));
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
  if (!im.IsConstant(raw) || im.ValueOf(raw).dtype != DType::kI32 || im.Rank(raw) != 1)
    return im.Error("needs a constant int32 bias vector");
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

}  // namespace

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

namespace {

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

}  // namespace

Status QLinearAdd(Importer& im) { return QLinear<AddOp>(im, 2, -1); }
Status QLinearMul(Importer& im) { return QLinear<MulOp>(im, 2, -1); }
Status QLinearAveragePool(Importer& im) { return QLinear<AveragePool>(im, 1, -1); }
Status QLinearConcat(Importer& im) { return QLinear<Concat>(im, 0, 0); }
Status QLinearGlobalAveragePool(Importer& im) {
  if (im.Int("channels_last", 0) != 0) return im.Opaque("memfold reads NCHW inputs");
  return QLinear<MeanPool>(im, 1, -1);
}
Status QLinearLeakyRelu(Importer& im) { return QLinear<LeakyRelu>(im, 1, -1); }
Status QLinearSigmoid(Importer& im) { return QLinear<SigmoidOp>(im, 1, -1); }
Status QLinearSoftmax(Importer& im) { return QLinear<SoftmaxOp>(im, 1, -1); }

}  // namespace memfold::onnx_import
