#include "memfold/ops/infer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>

#include "memfold/ops/kernels/lstm.h"
#include "memfold/ops/window.h"

namespace memfold {
namespace {

std::string Dims(const Shape& shape) { return "[" + ShapeString(shape) + "]"; }

Status RequireRank(const Value& v, size_t rank, const char* what) {
  if (v.shape.size() == rank) return Status::Ok();
  return Status::Error(std::string(what) + " '" + v.name + "' must have rank " +
                       std::to_string(rank) + ", has " + Dims(v.shape));
}

Status RequireSameDType(const Value& a, const Value& b) {
  if (a.dtype == b.dtype) return Status::Ok();
  return Status::Error("inputs '" + a.name + "' (" + std::string(DTypeName(a.dtype)) + ") and '" +
                       b.name + "' (" + std::string(DTypeName(b.dtype)) + ") differ in type");
}

// Float activations need float weights and bias; integer activations (int8, int16) need int8
// weights and an int32 or int64 bias, as TFLite's kernels do.
Status RequireWeightTypes(const InferContext& ctx) {
  const bool is_float = ctx.in(0).dtype == DType::kF32;
  const DType w = ctx.in(1).dtype;
  if (is_float ? w != DType::kF32 : w != DType::kI8) {
    return Status::Error(
        "weights '" + ctx.in(1).name + "' are " + std::string(DTypeName(w)) +
        " but activations are " + std::string(DTypeName(ctx.in(0).dtype)) +
        (is_float ? "; float layers need f32 weights" : "; integer layers need i8 weights"));
  }
  if (ctx.has(2)) {
    const DType b = ctx.in(2).dtype;
    if (is_float ? b != DType::kF32 : (b != DType::kI32 && b != DType::kI64)) {
      return Status::Error("bias '" + ctx.in(2).name + "' has type " + std::string(DTypeName(b)) +
                           ", which does not fit " + std::string(DTypeName(ctx.in(0).dtype)) +
                           " activations");
    }
  }
  return Status::Ok();
}

Status RequireBias(const InferContext& ctx, size_t index, int64_t channels) {
  if (!ctx.has(index)) return Status::Ok();
  const Value& bias = ctx.in(index);
  if (bias.elements() == channels && bias.shape.size() == 1) return Status::Ok();
  return Status::Error("bias '" + bias.name + "' must have shape [" + std::to_string(channels) +
                       "], has " + Dims(bias.shape));
}

// Output of a matrix product a x b with optional transposes; a and b are the last two dims.
Result<std::pair<int64_t, int64_t>> ProductDims(const Shape& a, const Shape& b, bool ta, bool tb) {
  const int64_t m = ta ? a[a.size() - 1] : a[a.size() - 2];
  const int64_t k_a = ta ? a[a.size() - 2] : a[a.size() - 1];
  const int64_t k_b = tb ? b[b.size() - 1] : b[b.size() - 2];
  const int64_t n = tb ? b[b.size() - 2] : b[b.size() - 1];
  if (k_a != k_b) {
    return Status::Error("inner dimensions differ: " + Dims(a) + " x " + Dims(b) +
                         (ta || tb ? " (after transposes)" : ""));
  }
  return std::pair{m, n};
}

// The element type named by a string attribute; "" means the first input's type.
Result<DType> OutputDType(const InferContext& ctx, const char* attr) {
  const std::string& name = ctx.node.attrs.Str(attr);
  if (name.empty()) return ctx.in(0).dtype;
  std::optional<DType> dtype = ParseDType(name);
  if (!dtype) {
    return Status::Error("attribute '" + std::string(attr) + "' names unknown type '" + name + "'");
  }
  return *dtype;
}

// Operand checks shared by conv2d and depthwise_conv2d: weight types, rank-4 input and filter,
// and the fused activation.
Status RequireConvOperands(const InferContext& ctx) {
  MF_RETURN_IF_ERROR(RequireWeightTypes(ctx));
  MF_RETURN_IF_ERROR(RequireRank(ctx.in(0), 4, "input"));
  MF_RETURN_IF_ERROR(RequireRank(ctx.in(1), 4, "filter"));
  return ParseActivation(ctx.node.attrs).status();
}

// The output [batch, out_h, out_w, channels] of a window op with a k_h x k_w window over the
// NHWC input.
Status PushWindowOutput(const InferContext& ctx, int64_t k_h, int64_t k_w, int64_t channels,
                        std::vector<TensorType>* out) {
  const Value& x = ctx.in(0);
  MF_ASSIGN_OR_RETURN(Window2D win,
                      ComputeWindow(ctx.node.attrs, x.shape[1], x.shape[2], k_h, k_w));
  out->push_back({x.dtype, {x.shape[0], win.out_h, win.out_w, channels}});
  return Status::Ok();
}

// The output of a convolution with `out_c` channels, after the bias check.
Status PushConvOutput(const InferContext& ctx, int64_t out_c, std::vector<TensorType>* out) {
  MF_RETURN_IF_ERROR(RequireBias(ctx, 2, out_c));
  const Shape& w = ctx.in(1).shape;
  return PushWindowOutput(ctx, w[1], w[2], out_c, out);
}

}  // namespace

Result<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const int64_t db = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (da != db && da != 1 && db != 1) {
      return Status::Error("shapes " + Dims(a) + " and " + Dims(b) + " do not broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Result<int64_t> NormaliseAxis(int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    return Status::Error("axis " + std::to_string(axis) + " is out of range for rank " +
                         std::to_string(rank));
  }
  return axis < 0 ? axis + r : axis;
}

Status InferSameAsInput(const InferContext& ctx, std::vector<TensorType>* out) {
  out->push_back({ctx.in(0).dtype, ctx.in(0).shape});
  return Status::Ok();
}

Status InferBroadcast(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_RETURN_IF_ERROR(RequireSameDType(ctx.in(0), ctx.in(1)));
  MF_RETURN_IF_ERROR(ParseActivation(ctx.node.attrs).status());
  MF_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(ctx.in(0).shape, ctx.in(1).shape));
  out->push_back({ctx.in(0).dtype, shape});
  return Status::Ok();
}

Status InferFullyConnected(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_RETURN_IF_ERROR(RequireWeightTypes(ctx));
  const Value& x = ctx.in(0);
  const Value& w = ctx.in(1);
  MF_RETURN_IF_ERROR(RequireRank(w, 2, "weights"));
  MF_RETURN_IF_ERROR(ParseActivation(ctx.node.attrs).status());
  const int64_t depth = w.shape[1];
  if (x.shape.empty() || depth == 0 || x.elements() % depth != 0) {
    return Status::Error("input " + Dims(x.shape) + " cannot be split into rows of " +
                         std::to_string(depth) + " (weights " + Dims(w.shape) + ")");
  }
  MF_RETURN_IF_ERROR(RequireBias(ctx, 2, w.shape[0]));
  Shape shape;
  if (ctx.node.attrs.Int("keep_num_dims") != 0) {
    if (x.shape.back() != depth) {
      return Status::Error("keep_num_dims needs the last input dimension to be " +
                           std::to_string(depth) + ", has " + Dims(x.shape));
    }
    shape = x.shape;
    shape.back() = w.shape[0];
  } else {
    shape = {x.elements() / depth, w.shape[0]};
  }
  out->push_back({x.dtype, shape});
  return Status::Ok();
}

Status InferMatMul(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_RETURN_IF_ERROR(RequireRank(ctx.in(0), 2, "input"));
  MF_RETURN_IF_ERROR(RequireRank(ctx.in(1), 2, "input"));
  MF_RETURN_IF_ERROR(RequireSameDType(ctx.in(0), ctx.in(1)));
  MF_ASSIGN_OR_RETURN(
      auto mn, ProductDims(ctx.in(0).shape, ctx.in(1).shape, ctx.node.attrs.Int("transpose_a") != 0,
                           ctx.node.attrs.Int("transpose_b") != 0));
  out->push_back({ctx.in(0).dtype, {mn.first, mn.second}});
  return Status::Ok();
}

Status InferBatchMatMul(const InferContext& ctx, std::vector<TensorType>* out) {
  const Shape& a = ctx.in(0).shape;
  const Shape& b = ctx.in(1).shape;
  if (a.size() < 2 || b.size() < 2) {
    return Status::Error("batch_matmul needs rank >= 2, has " + Dims(a) + " and " + Dims(b));
  }
  MF_RETURN_IF_ERROR(RequireSameDType(ctx.in(0), ctx.in(1)));
  MF_ASSIGN_OR_RETURN(auto mn, ProductDims(a, b, ctx.node.attrs.Int("transpose_a") != 0,
                                           ctx.node.attrs.Int("transpose_b") != 0));
  MF_ASSIGN_OR_RETURN(
      Shape shape, BroadcastShapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2)));
  shape.push_back(mn.first);
  shape.push_back(mn.second);
  out->push_back({ctx.in(0).dtype, shape});
  return Status::Ok();
}

Status InferConv2D(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_RETURN_IF_ERROR(RequireConvOperands(ctx));
  const Value& x = ctx.in(0);
  const Value& w = ctx.in(1);
  const int64_t in_c = x.shape[3], out_c = w.shape[0], filter_c = w.shape[3];
  if (filter_c == 0 || in_c == 0 || in_c % filter_c != 0 || out_c % (in_c / filter_c) != 0) {
    return Status::Error("filter " + Dims(w.shape) + " [out, kh, kw, in] does not fit input " +
                         Dims(x.shape) + " with " + std::to_string(in_c) + " channels");
  }
  return PushConvOutput(ctx, out_c, out);
}

Status InferDepthwiseConv2D(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_RETURN_IF_ERROR(RequireConvOperands(ctx));
  const Value& x = ctx.in(0);
  const Value& w = ctx.in(1);
  const int64_t in_c = x.shape[3], out_c = w.shape[3];
  const int64_t multiplier = ctx.node.attrs.Int("multiplier");
  if (w.shape[0] != 1 || in_c == 0 || out_c % in_c != 0 ||
      (multiplier != 0 && out_c != in_c * multiplier)) {
    return Status::Error("depthwise filter " + Dims(w.shape) + " must be [1, kh, kw, " +
                         std::to_string(in_c) + " x multiplier] for input " + Dims(x.shape));
  }
  return PushConvOutput(ctx, out_c, out);
}

Status InferPool2D(const InferContext& ctx, std::vector<TensorType>* out) {
  const Value& x = ctx.in(0);
  MF_RETURN_IF_ERROR(RequireRank(x, 4, "input"));
  MF_RETURN_IF_ERROR(ParseActivation(ctx.node.attrs).status());
  const auto& filter = ctx.node.attrs.Ints("filter");
  if (filter.size() != 2) return Status::Error("attribute 'filter' needs 2 values [h, w]");
  return PushWindowOutput(ctx, filter[0], filter[1], x.shape[3], out);
}

Status InferMean(const InferContext& ctx, std::vector<TensorType>* out) {
  const Shape& in = ctx.in(0).shape;
  std::vector<char> reduced(in.size(), 0);
  for (int64_t axis : ctx.node.attrs.Ints("axes")) {
    MF_ASSIGN_OR_RETURN(int64_t a, NormaliseAxis(axis, in.size()));
    reduced[static_cast<size_t>(a)] = 1;
  }
  const bool keep = ctx.node.attrs.Int("keepdims") != 0;
  Shape shape;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!reduced[i])
      shape.push_back(in[i]);
    else if (keep)
      shape.push_back(1);
  }
  out->push_back({ctx.in(0).dtype, shape});
  return Status::Ok();
}

Status InferSoftmax(const InferContext& ctx, std::vector<TensorType>* out) {
  const Shape& in = ctx.in(0).shape;
  if (in.empty()) return Status::Error("softmax needs rank >= 1");
  MF_ASSIGN_OR_RETURN(int64_t axis, NormaliseAxis(ctx.node.attrs.Int("axis"), in.size()));
  if (axis != static_cast<int64_t>(in.size()) - 1) {
    return Status::Error("softmax is supported over the last axis only; transpose first");
  }
  MF_ASSIGN_OR_RETURN(DType dtype, OutputDType(ctx, "output_dtype"));
  // The kernels: f32 -> f32, i8 -> i8 or i16, i16 -> i16 (found by the fuzzer: an int8 softmax with
  // a float32 output left most of its output unwritten).
  const DType from = ctx.in(0).dtype;
  if ((from == DType::kF32 && dtype != DType::kF32) ||
      (from == DType::kI8 && dtype != DType::kI8 && dtype != DType::kI16) ||
      (from == DType::kI16 && dtype != DType::kI16)) {
    return Status::Error("softmax of " + std::string(DTypeName(from)) + " cannot produce " +
                         std::string(DTypeName(dtype)) +
                         " (f32 gives f32, i8 gives i8 or i16, i16 gives i16)");
  }
  out->push_back({dtype, in});
  return Status::Ok();
}

Status InferBroadcastTo(const InferContext& ctx, std::vector<TensorType>* out) {
  const Shape& target = ctx.node.attrs.Ints("shape");
  MF_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(ctx.in(0).shape, target));
  if (shape != target)
    return Status::Error(Dims(ctx.in(0).shape) + " does not broadcast to " + Dims(target));
  out->push_back({ctx.in(0).dtype, target});
  return Status::Ok();
}

Status InferMaskEncode(const InferContext& ctx, std::vector<TensorType>* out) {
  out->push_back({DType::kBit, ctx.in(0).shape});
  return Status::Ok();
}

Status InferMaskDecode(const InferContext& ctx, std::vector<TensorType>* out) {
  if (ctx.in(0).dtype != DType::kBit) return Status::Error("mask_decode reads a bit mask");
  out->push_back({DType::kF32, ctx.in(0).shape});
  return Status::Ok();
}

Status InferConvertType(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_ASSIGN_OR_RETURN(DType dtype, OutputDType(ctx, "dtype"));
  // The kernels: quantize writes an integer type, dequantize float32 (found by the fuzzer: a
  // quantize declared to produce float32 left most of its output unwritten).
  const bool integer =
      dtype == DType::kI8 || dtype == DType::kU8 || dtype == DType::kI16 || dtype == DType::kI32;
  if (ctx.node.op == "quantize" ? !integer : dtype != DType::kF32) {
    return Status::Error(ctx.node.op + " cannot produce " + std::string(DTypeName(dtype)) +
                         (ctx.node.op == "quantize"
                              ? " (it gives i8, u8, i16 or i32; dequantize gives f32)"
                              : " (it gives f32)"));
  }
  out->push_back({dtype, ctx.in(0).shape});
  return Status::Ok();
}

Status InferSvdf(const InferContext& ctx, std::vector<TensorType>* out) {
  const Value& x = ctx.in(0);
  const Value& feature = ctx.in(1);
  const Value& time = ctx.in(2);
  MF_RETURN_IF_ERROR(RequireRank(x, 2, "input"));
  MF_RETURN_IF_ERROR(RequireRank(feature, 2, "weights_feature"));
  MF_RETURN_IF_ERROR(RequireRank(time, 2, "weights_time"));
  MF_RETURN_IF_ERROR(ParseActivation(ctx.node.attrs).status());
  if (!ctx.has(4)) return Status::Error("svdf needs its activation state as input 4");
  const Value& state = ctx.in(4);
  MF_RETURN_IF_ERROR(RequireRank(state, 2, "activation state"));
  const int64_t rank = ctx.node.attrs.Int("rank");
  const int64_t batch = x.shape[0], filters = feature.shape[0], memory = time.shape[1];
  if (rank <= 0 || filters % rank != 0) {
    return Status::Error("svdf rank " + std::to_string(rank) + " must be positive and divide the " +
                         std::to_string(filters) + " filters of weights_feature " +
                         Dims(feature.shape));
  }
  if (feature.shape[1] != x.shape[1]) {
    return Status::Error("weights_feature " + Dims(feature.shape) + " must be [filters, " +
                         std::to_string(x.shape[1]) + "] for input " + Dims(x.shape));
  }
  if (time.shape[0] != filters) {
    return Status::Error("weights_time " + Dims(time.shape) + " must be [" +
                         std::to_string(filters) + ", memory]");
  }
  if (state.shape[0] != batch || state.shape[1] != filters * memory) {
    return Status::Error("activation state '" + state.name + "' must have shape [" +
                         std::to_string(batch) + ", " + std::to_string(filters * memory) +
                         "], has " + Dims(state.shape));
  }
  MF_RETURN_IF_ERROR(RequireBias(ctx, 3, filters / rank));
  if (x.dtype != feature.dtype || time.dtype != state.dtype ||
      (x.dtype == DType::kF32 && time.dtype != DType::kF32) ||
      (x.dtype == DType::kI8 && time.dtype != DType::kI8 && time.dtype != DType::kI16) ||
      (x.dtype != DType::kF32 && x.dtype != DType::kI8)) {
    return Status::Error(
        "svdf takes float32 throughout, or int8 input and weights_feature with "
        "int8 or int16 weights_time and state; has input " +
        std::string(DTypeName(x.dtype)) + ", weights_feature " +
        std::string(DTypeName(feature.dtype)) + ", weights_time " +
        std::string(DTypeName(time.dtype)) + ", state " + std::string(DTypeName(state.dtype)));
  }
  out->push_back({x.dtype, {batch, filters / rank}});
  return Status::Ok();
}

namespace {

// The standard LSTM's operand types TFLM accepts: float32 throughout, or int8 / int16
// activations with int8 weights, int32 / int64 biases and an int16 cell state.
Status RequireLstmTypes(const InferContext& ctx) {
  const DType x = ctx.in(kLstmInput).dtype;
  const DType w = ctx.in(kLstmInputWeights).dtype;
  const DType b = ctx.in(kLstmBias).dtype;
  const DType h = ctx.in(kLstmHiddenState).dtype;
  const DType c = ctx.in(kLstmCellState).dtype;
  const bool ok = (x == DType::kF32 && w == DType::kF32 && b == DType::kF32 && c == DType::kF32) ||
                  (x == DType::kI8 && w == DType::kI8 && b == DType::kI32 && c == DType::kI16) ||
                  (x == DType::kI16 && w == DType::kI8 && b == DType::kI64 && c == DType::kI16);
  if (!ok || h != x) {
    return Status::Error(
        "unidirectional_sequence_lstm takes float32 throughout, int8 activations with int8 "
        "weights, int32 biases and an int16 cell state, or int16 activations with int8 weights, "
        "int64 biases and an int16 cell state; has input " +
        std::string(DTypeName(x)) + ", weights " + std::string(DTypeName(w)) + ", bias " +
        std::string(DTypeName(b)) + ", hidden state " + std::string(DTypeName(h)) +
        ", cell state " + std::string(DTypeName(c)));
  }
  for (size_t k = kLstmInputWeights; k < kLstmInputWeights + 8; ++k) {
    if (ctx.in(k).dtype != w)
      return Status::Error("the LSTM's eight weight matrices differ in type");
  }
  for (size_t k = kLstmBias; k < kLstmBias + 4; ++k) {
    if (ctx.in(k).dtype != b) return Status::Error("the LSTM's four gate biases differ in type");
  }
  return Status::Ok();
}

// Weights [rows, cols] and biases [rows] of every gate (TFLM's ValidateTensorSize).
Status RequireLstmSizes(const InferContext& ctx, int64_t state, int64_t depth) {
  for (size_t k = kLstmInputWeights; k < kLstmInputWeights + 8; ++k) {
    const Shape want{state, k < kLstmRecurrentWeights ? depth : state};
    if (ctx.in(k).shape != want) {
      return Status::Error("LSTM weights '" + ctx.in(k).name + "' must have shape " + Dims(want) +
                           ", has " + Dims(ctx.in(k).shape));
    }
  }
  for (size_t k = kLstmBias; k < kLstmBias + 4; ++k) {
    if (ctx.in(k).shape != Shape{state}) {
      return Status::Error("LSTM bias '" + ctx.in(k).name + "' must have shape [" +
                           std::to_string(state) + "], has " + Dims(ctx.in(k).shape));
    }
  }
  return Status::Ok();
}

}  // namespace

Status InferLstm(const InferContext& ctx, std::vector<TensorType>* out) {
  for (size_t k = 0; k < kLstmInputCount; ++k) {
    const bool variant = std::find(std::begin(kLstmVariantInputs), std::end(kLstmVariantInputs),
                                   k) != std::end(kLstmVariantInputs);
    if (ctx.has(k) == variant) {
      return Status::Error(
          variant ? "input " + std::to_string(k) +
                        " of the LSTM is a peephole, projection or layer-norm tensor; TFLM's "
                        "unidirectional_sequence_lstm runs the standard LSTM only"
                  : "the LSTM needs input " + std::to_string(k) +
                        " (CIFG LSTMs without input-gate weights are not supported by TFLM)");
    }
  }
  const std::string& activation = ctx.node.attrs.Str("cell_activation");
  if (activation != "tanh" && activation != "sigmoid") {
    return Status::Error("the LSTM's cell activation must be tanh or sigmoid, is '" + activation +
                         "'");
  }
  const Value& x = ctx.in(kLstmInput);
  MF_RETURN_IF_ERROR(RequireRank(x, 3, "LSTM input"));
  MF_RETURN_IF_ERROR(RequireRank(ctx.in(kLstmInputWeights), 2, "LSTM input weights"));
  MF_RETURN_IF_ERROR(RequireLstmTypes(ctx));
  const LstmDims d =
      LstmDims::Of(ctx.node.attrs.Int("time_major") != 0, x.shape, ctx.in(kLstmInputWeights).shape);
  MF_RETURN_IF_ERROR(RequireLstmSizes(ctx, d.state, d.input));
  for (size_t k : {kLstmHiddenState, kLstmCellState}) {
    if (ctx.in(k).role != Role::kState) {
      return Status::Error("LSTM state '" + ctx.in(k).name +
                           "' must be a variable tensor: the kernel updates it in place");
    }
    if (ctx.in(k).elements() != d.batch * d.state) {
      return Status::Error("LSTM state '" + ctx.in(k).name +
                           "' must hold batch x state = " + std::to_string(d.batch * d.state) +
                           " elements, has " + Dims(ctx.in(k).shape));
    }
  }
  const Value& cell = ctx.in(kLstmCellState);
  if (cell.dtype == DType::kI16 && cell.quant && !cell.quant->scale.empty()) {
    // The kernel rescales the cell state to the tanh table's Q3.12 by a shift of 15 + log2(scale)
    // - 3 bits: TFLM expects a power-of-two scale, and the shift must stay within 31 bits.
    const double log2 = std::log2(static_cast<double>(cell.quant->scale[0]));
    if (!(log2 >= -40.0 && log2 <= 0.0) || std::fabs(log2 - std::round(log2)) > 1e-3) {
      return Status::Error("LSTM cell state '" + cell.name + "' needs a power-of-two scale of at " +
                           "most 1 (TFLM's integer LSTM), has " +
                           std::to_string(cell.quant->scale[0]));
    }
  }
  out->push_back({x.dtype, {x.shape[0], x.shape[1], d.state}});
  return Status::Ok();
}

Status InferReshape(const InferContext& ctx, std::vector<TensorType>* out) {
  Shape shape = ctx.node.attrs.Ints("shape");
  int64_t known = 1;
  int unknown = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && unknown < 0) {
      unknown = static_cast<int>(i);
    } else if (shape[i] < 0) {
      return Status::Error("reshape target " + Dims(shape) +
                           " may hold one -1 and no other negative");
    } else {
      known *= shape[i];
    }
  }
  const int64_t total = ctx.in(0).elements();
  if (unknown >= 0 && known != 0 && total % known == 0) {
    shape[static_cast<size_t>(unknown)] = total / known;
  }
  if (NumElements(shape) != total || (unknown >= 0 && known == 0)) {
    return Status::Error("cannot reshape " + Dims(ctx.in(0).shape) + " (" + std::to_string(total) +
                         " elements) to " + Dims(ctx.node.attrs.Ints("shape")));
  }
  out->push_back({ctx.in(0).dtype, shape});
  return Status::Ok();
}

Status InferConcat(const InferContext& ctx, std::vector<TensorType>* out) {
  const Value& first = ctx.in(0);
  MF_ASSIGN_OR_RETURN(int64_t axis, NormaliseAxis(ctx.node.attrs.Int("axis"), first.shape.size()));
  MF_RETURN_IF_ERROR(ParseActivation(ctx.node.attrs).status());
  Shape shape = first.shape;
  for (size_t k = 1; k < ctx.inputs.size(); ++k) {
    if (!ctx.has(k)) return Status::Error("concat input " + std::to_string(k) + " is missing");
    const Value& v = ctx.in(k);
    MF_RETURN_IF_ERROR(RequireSameDType(first, v));
    bool fits = v.shape.size() == shape.size();
    for (size_t d = 0; fits && d < shape.size(); ++d) {
      fits = static_cast<int64_t>(d) == axis || v.shape[d] == shape[d];
    }
    if (!fits) {
      return Status::Error("concat input '" + v.name + "' " + Dims(v.shape) + " does not match " +
                           Dims(first.shape) + " outside axis " + std::to_string(axis));
    }
    shape[static_cast<size_t>(axis)] += v.shape[static_cast<size_t>(axis)];
  }
  out->push_back({first.dtype, shape});
  return Status::Ok();
}

Status InferSlice(const InferContext& ctx, std::vector<TensorType>* out) {
  const Shape& in = ctx.in(0).shape;
  const auto& begin = ctx.node.attrs.Ints("begin");
  const auto& size = ctx.node.attrs.Ints("size");
  if (begin.size() != in.size() || size.size() != in.size()) {
    return Status::Error("slice needs 'begin' and 'size' with one entry per dimension of " +
                         Dims(in));
  }
  Shape shape(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    shape[d] = size[d] == -1 ? in[d] - begin[d] : size[d];
    if (begin[d] < 0 || shape[d] < 0 || begin[d] + shape[d] > in[d]) {
      return Status::Error("slice begin " + Dims(begin) + " size " + Dims(size) +
                           " reaches outside " + Dims(in));
    }
  }
  out->push_back({ctx.in(0).dtype, shape});
  return Status::Ok();
}

Status InferTranspose(const InferContext& ctx, std::vector<TensorType>* out) {
  const Shape& in = ctx.in(0).shape;
  const auto& perm = ctx.node.attrs.Ints("perm");
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(in.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (sorted != identity) {
    return Status::Error("perm " + Dims(perm) + " is not a permutation of the " +
                         std::to_string(in.size()) + " dimensions");
  }
  Shape shape(in.size());
  for (size_t d = 0; d < in.size(); ++d) shape[d] = in[static_cast<size_t>(perm[d])];
  out->push_back({ctx.in(0).dtype, shape});
  return Status::Ok();
}

Status InferReverse(const InferContext& ctx, std::vector<TensorType>* out) {
  const Shape& in = ctx.in(0).shape;
  std::vector<int64_t> axes = ctx.node.attrs.Ints("axes");
  std::sort(axes.begin(), axes.end());
  const bool in_range =
      axes.empty() || (axes.front() >= 0 && axes.back() < static_cast<int64_t>(in.size()));
  if (!in_range || std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    return Status::Error("axes " + Dims(ctx.node.attrs.Ints("axes")) +
                         " are not distinct dimensions of " + Dims(in));
  }
  out->push_back({ctx.in(0).dtype, in});
  return Status::Ok();
}

Status InferPad(const InferContext& ctx, std::vector<TensorType>* out) {
  const Shape& in = ctx.in(0).shape;
  const auto& pads = ctx.node.attrs.Ints("paddings");
  if (pads.size() != 2 * in.size() ||
      (!pads.empty() && *std::min_element(pads.begin(), pads.end()) < 0)) {
    return Status::Error("pad needs 'paddings' = [before, after] >= 0 per dimension of " +
                         Dims(in));
  }
  Shape shape(in.size());
  for (size_t d = 0; d < in.size(); ++d) shape[d] = in[d] + pads[2 * d] + pads[2 * d + 1];
  out->push_back({ctx.in(0).dtype, shape});
  return Status::Ok();
}

namespace {

// The "output_dtype" attribute of an index-producing op: i32 or i64.
Result<DType> IndexDType(const InferContext& ctx) {
  const std::optional<DType> dtype = ParseDType(ctx.node.attrs.Str("output_dtype"));
  if (!dtype || (*dtype != DType::kI32 && *dtype != DType::kI64))
    return Status::Error("output_dtype must be i32 or i64");
  return *dtype;
}

}  // namespace

Status InferArgMinMax(const InferContext& ctx, std::vector<TensorType>* out) {
  const Shape& in = ctx.in(0).shape;
  const int64_t axis = ctx.node.attrs.Int("axis");
  if (axis < 0 || axis >= static_cast<int64_t>(in.size()) || in[static_cast<size_t>(axis)] < 1)
    return Status::Error("axis " + std::to_string(axis) + " is not a non-empty axis of " +
                         Dims(in));
  MF_ASSIGN_OR_RETURN(const DType dtype, IndexDType(ctx));
  Shape shape = in;
  shape.erase(shape.begin() + axis);
  out->push_back({dtype, shape});
  return Status::Ok();
}

Status InferCast(const InferContext& ctx, std::vector<TensorType>* out) {
  const std::optional<DType> dtype = ParseDType(ctx.node.attrs.Str("dtype"));
  if (!dtype || *dtype == DType::kBit) return Status::Error("cast needs a 'dtype' of a plain type");
  out->push_back({*dtype, ctx.in(0).shape});
  return Status::Ok();
}

Status InferShapeOf(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_ASSIGN_OR_RETURN(const DType dtype, IndexDType(ctx));
  out->push_back({dtype, {static_cast<int64_t>(ctx.in(0).shape.size())}});
  return Status::Ok();
}

Status InferFill(const InferContext& ctx, std::vector<TensorType>* out) {
  if (ctx.in(0).elements() != 1) return Status::Error("fill needs a one-element value");
  const auto& shape = ctx.node.attrs.Ints("shape");
  for (int64_t d : shape) {
    if (d < 0) return Status::Error("fill needs a 'shape' of dimensions >= 0");
  }
  out->push_back({ctx.in(0).dtype, shape});
  return Status::Ok();
}

Status InferCompare(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_RETURN_IF_ERROR(RequireSameDType(ctx.in(0), ctx.in(1)));
  MF_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(ctx.in(0).shape, ctx.in(1).shape));
  out->push_back({DType::kBool, shape});
  return Status::Ok();
}

Status InferLogical(const InferContext& ctx, std::vector<TensorType>* out) {
  for (size_t k = 0; k < ctx.inputs.size(); ++k) {
    if (ctx.in(k).dtype != DType::kBool) return Status::Error("needs boolean inputs");
  }
  if (ctx.inputs.size() == 1) return InferSameAsInput(ctx, out);
  MF_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(ctx.in(0).shape, ctx.in(1).shape));
  out->push_back({DType::kBool, shape});
  return Status::Ok();
}

Status InferSelect(const InferContext& ctx, std::vector<TensorType>* out) {
  if (ctx.in(0).dtype != DType::kBool) return Status::Error("select needs a boolean condition");
  MF_RETURN_IF_ERROR(RequireSameDType(ctx.in(1), ctx.in(2)));
  MF_ASSIGN_OR_RETURN(Shape xy, BroadcastShapes(ctx.in(1).shape, ctx.in(2).shape));
  MF_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(ctx.in(0).shape, xy));
  out->push_back({ctx.in(1).dtype, shape});
  return Status::Ok();
}

Status InferStridedSlice(const InferContext& ctx, std::vector<TensorType>* out) {
  const Shape& in = ctx.in(0).shape;
  const auto& begin = ctx.node.attrs.Ints("begin");
  const auto& strides = ctx.node.attrs.Ints("strides");
  const auto& counts = ctx.node.attrs.Ints("counts");
  const auto& shape = ctx.node.attrs.Ints("shape");
  if (begin.size() != in.size() || strides.size() != in.size() || counts.size() != in.size()) {
    return Status::Error("strided_slice needs 'begin', 'strides' and 'counts' per dimension of " +
                         Dims(in));
  }
  int64_t elements = 1;
  for (size_t d = 0; d < in.size(); ++d) {
    elements *= counts[d];
    if (counts[d] < 0 || strides[d] == 0)
      return Status::Error("strided_slice: bad count or stride");
    const int64_t last = begin[d] + (counts[d] - 1) * strides[d];
    if (counts[d] > 0 && (begin[d] < 0 || begin[d] >= in[d] || last < 0 || last >= in[d])) {
      return Status::Error("strided_slice reaches outside " + Dims(in) + " along axis " +
                           std::to_string(d));
    }
  }
  if (NumElements(shape) != elements)
    return Status::Error("strided_slice's 'shape' " + Dims(shape) + " does not hold its counts");
  out->push_back({ctx.in(0).dtype, shape});
  return Status::Ok();
}

Status InferPack(const InferContext& ctx, std::vector<TensorType>* out) {
  const Shape& in = ctx.in(0).shape;
  const int64_t axis = ctx.node.attrs.Int("axis");
  for (size_t k = 1; k < ctx.inputs.size(); ++k) {
    if (!ctx.has(k) || ctx.in(k).shape != in || ctx.in(k).dtype != ctx.in(0).dtype)
      return Status::Error("pack needs inputs of one type and shape " + Dims(in));
  }
  if (axis < 0 || axis > static_cast<int64_t>(in.size()))
    return Status::Error("pack axis " + std::to_string(axis) + " is out of range");
  Shape shape = in;
  shape.insert(shape.begin() + axis, static_cast<int64_t>(ctx.inputs.size()));
  out->push_back({ctx.in(0).dtype, shape});
  return Status::Ok();
}

// The most outputs one split or unpack may make (a file's op lists each of them).
constexpr int64_t kMaxOutputs = 1 << 16;

Status InferUnpack(const InferContext& ctx, std::vector<TensorType>* out) {
  const Shape& in = ctx.in(0).shape;
  const int64_t axis = ctx.node.attrs.Int("axis");
  if (axis < 0 || axis >= static_cast<int64_t>(in.size()) || in[static_cast<size_t>(axis)] < 1)
    return Status::Error("unpack axis " + std::to_string(axis) + " is out of range for " +
                         Dims(in));
  if (in[static_cast<size_t>(axis)] > kMaxOutputs)
    return Status::Error("unpack would make more than " + std::to_string(kMaxOutputs) + " outputs");
  Shape shape = in;
  shape.erase(shape.begin() + axis);
  for (int64_t k = 0; k < in[static_cast<size_t>(axis)]; ++k)
    out->push_back({ctx.in(0).dtype, shape});
  return Status::Ok();
}

Status InferSplit(const InferContext& ctx, std::vector<TensorType>* out) {
  const Shape& in = ctx.in(0).shape;
  const int64_t axis = ctx.node.attrs.Int("axis");
  const auto& sizes = ctx.node.attrs.Ints("sizes");
  if (axis < 0 || axis >= static_cast<int64_t>(in.size()))
    return Status::Error("split axis " + std::to_string(axis) + " is out of range for " + Dims(in));
  const int64_t dim = in[static_cast<size_t>(axis)];
  if (static_cast<int64_t>(sizes.size()) > kMaxOutputs)
    return Status::Error("split would make more than " + std::to_string(kMaxOutputs) + " outputs");
  int64_t total = 0;
  for (int64_t s : sizes) total += (s < 0 || s > dim) ? dim + 1 : s;  // never overflows
  if (sizes.empty() || total != dim) {
    return Status::Error("split 'sizes' " + Dims(sizes) + " must be >= 0 and add up to " +
                         std::to_string(in[static_cast<size_t>(axis)]));
  }
  for (int64_t s : sizes) {
    Shape shape = in;
    shape[static_cast<size_t>(axis)] = s;
    out->push_back({ctx.in(0).dtype, shape});
  }
  return Status::Ok();
}

Status InferLeakyRelu(const InferContext& ctx, std::vector<TensorType>* out) {
  const DType dtype = ctx.in(0).dtype;
  if ((dtype == DType::kI8 || dtype == DType::kI16) && ctx.node.attrs.Float("alpha") < 0) {
    return Status::Error(
        "integer leaky_relu needs alpha >= 0 (TFLM versions disagree on negative alphas)");
  }
  return InferSameAsInput(ctx, out);
}

namespace {

// The block size of depth_to_space / space_to_depth on a rank-4 NHWC input.
Result<int64_t> BlockOf(const InferContext& ctx) {
  if (ctx.in(0).shape.size() != 4)
    return Status::Error("needs an NHWC input of rank 4, has " + Dims(ctx.in(0).shape));
  const int64_t block = ctx.node.attrs.Int("block_size");
  if (block < 1) return Status::Error("block_size must be at least 1");
  return block;
}

}  // namespace

Status InferResizeNearest(const InferContext& ctx, std::vector<TensorType>* out) {
  const Shape& in = ctx.in(0).shape;
  const auto& size = ctx.node.attrs.Ints("size");
  if (in.size() != 4) return Status::Error("needs an NHWC input of rank 4, has " + Dims(in));
  if (size.size() != 2 || size[0] < 1 || size[1] < 1 || in[1] < 1 || in[2] < 1) {
    return Status::Error("needs 'size' = [height, width] >= 1 and a non-empty input");
  }
  out->push_back({ctx.in(0).dtype, {in[0], size[0], size[1], in[3]}});
  return Status::Ok();
}

Status InferDepthToSpace(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_ASSIGN_OR_RETURN(const int64_t block, BlockOf(ctx));
  const Shape& in = ctx.in(0).shape;
  if (in[3] % (block * block) != 0) {
    return Status::Error("depth " + std::to_string(in[3]) + " is not a multiple of block_size^2");
  }
  out->push_back({ctx.in(0).dtype, {in[0], in[1] * block, in[2] * block, in[3] / block / block}});
  return Status::Ok();
}

Status InferSpaceToDepth(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_ASSIGN_OR_RETURN(const int64_t block, BlockOf(ctx));
  const Shape& in = ctx.in(0).shape;
  if (in[1] % block != 0 || in[2] % block != 0) {
    return Status::Error("height and width " + Dims(in) + " must be multiples of block_size");
  }
  out->push_back({ctx.in(0).dtype, {in[0], in[1] / block, in[2] / block, in[3] * block * block}});
  return Status::Ok();
}

namespace {

// TFLM computes the geometry of its image operators in 32-bit integers (RESIZE_BILINEAR's
// 10-bit fixed point multiplies a size by 1024): sizes up to 2^20 keep every product in range.
constexpr int64_t kMaxImageSize = int64_t{1} << 20;

}  // namespace

Status InferResizeBilinear(const InferContext& ctx, std::vector<TensorType>* out) {
  const Value& x = ctx.in(0);
  MF_RETURN_IF_ERROR(RequireRank(x, 4, "input"));
  const auto& size = ctx.node.attrs.Ints("size");
  if (size.size() != 2 || size[0] < 1 || size[1] < 1 || size[0] > kMaxImageSize ||
      size[1] > kMaxImageSize) {
    return Status::Error("needs 'size' = [height, width], each in [1, 2^20]");
  }
  if (x.shape[1] < 1 || x.shape[2] < 1 || x.shape[1] > kMaxImageSize ||
      x.shape[2] > kMaxImageSize) {
    return Status::Error("needs an input of height and width in [1, 2^20], has " + Dims(x.shape));
  }
  if (ctx.node.attrs.Int("align_corners") != 0 && ctx.node.attrs.Int("half_pixel_centers") != 0)
    return Status::Error("align_corners and half_pixel_centers exclude each other (as in TFLM)");
  out->push_back({x.dtype, {x.shape[0], size[0], size[1], x.shape[3]}});
  return Status::Ok();
}

Status InferTransposeConv(const InferContext& ctx, std::vector<TensorType>* out) {
  const Value& x = ctx.in(0);
  const Value& w = ctx.in(1);
  MF_RETURN_IF_ERROR(RequireWeightTypes(ctx));
  MF_RETURN_IF_ERROR(RequireRank(x, 4, "input"));
  MF_RETURN_IF_ERROR(RequireRank(w, 4, "filter"));
  MF_RETURN_IF_ERROR(ParseActivation(ctx.node.attrs).status());
  const std::string& padding = ctx.node.attrs.Str("padding");
  if (padding != "same" && padding != "valid")
    return Status::Error("has padding '" + padding + "'; transpose_conv takes same or valid");
  const auto& stride = ctx.node.attrs.Ints("stride");
  if (stride.size() != 2 || stride[0] < 1 || stride[1] < 1 || stride[0] > kMaxImageSize ||
      stride[1] > kMaxImageSize)
    return Status::Error("needs 'stride' = [h, w], each in [1, 2^20]");
  const auto& shape = ctx.node.attrs.Ints("output_shape");
  if (shape.size() != 4 || shape[0] != x.shape[0] || shape[1] < 1 || shape[2] < 1 ||
      shape[1] > kMaxImageSize || shape[2] > kMaxImageSize || shape[3] != w.shape[0]) {
    return Status::Error("needs 'output_shape' = [" + std::to_string(x.shape[0]) +
                         ", height, width, " + std::to_string(w.shape[0]) +
                         "] (height and width in [1, 2^20]), has " + Dims(shape));
  }
  if (w.shape[3] != x.shape[3] || w.shape[1] < 1 || w.shape[2] < 1) {
    return Status::Error("filter " + Dims(w.shape) + " [out, kh, kw, in] does not fit input " +
                         Dims(x.shape));
  }
  MF_RETURN_IF_ERROR(RequireBias(ctx, 2, w.shape[0]));
  if (x.dtype == DType::kI8) {
    if (ctx.has(2) && ctx.in(2).dtype != DType::kI32)
      return Status::Error("an int8 transpose_conv needs an int32 bias (as TFLM's kernel)");
    if (w.quant && w.quant->per_channel() &&
        (w.quant->axis != 0 || static_cast<int64_t>(w.quant->scale.size()) != w.shape[0]))
      return Status::Error("filter '" + w.name +
                           "' must be quantised per tensor or per output channel (axis 0)");
  }
  // Other input types (TFLM's 16x8) plan; running them needs a kernel of their type.
  out->push_back({x.dtype, shape});
  return Status::Ok();
}

Status InferMirrorPad(const InferContext& ctx, std::vector<TensorType>* out) {
  const Shape& in = ctx.in(0).shape;
  const auto& pads = ctx.node.attrs.Ints("paddings");
  const std::string& mode = ctx.node.attrs.Str("mode");
  if (mode != "reflect" && mode != "symmetric")
    return Status::Error("has mode '" + mode + "'; mirror_pad takes reflect or symmetric");
  if (in.empty() || pads.size() != 2 * in.size())
    return Status::Error(
        "needs an input of rank >= 1 and 'paddings' = [before, after] per axis, "
        "has input " +
        Dims(in) + " and " + std::to_string(pads.size()) + " paddings");
  const int64_t offset = mode == "reflect" ? 1 : 0;
  Shape shape = in;
  int64_t elements = 1;
  for (size_t d = 0; d < in.size(); ++d) {
    for (int64_t p : {pads[2 * d], pads[2 * d + 1]}) {
      if (p < 0 || p > in[d] - offset) {
        return Status::Error("pads axis " + std::to_string(d) + " of size " +
                             std::to_string(in[d]) + " by " + std::to_string(p) + "; " + mode +
                             " padding takes 0 to " +
                             std::to_string(std::max<int64_t>(in[d] - offset, 0)));
      }
    }
    shape[d] = in[d] + pads[2 * d] + pads[2 * d + 1];
    elements *= shape[d];
    if (elements > std::numeric_limits<int32_t>::max())
      return Status::Error("pads to more than 2^31 elements (TFLM indexes them in int)");
  }
  out->push_back({ctx.in(0).dtype, shape});
  return Status::Ok();
}

namespace {

// The block shape and per-axis [before, after] amounts of batch_to_space_nd (crops) and
// space_to_batch_nd (paddings): a 3-D NHC or 4-D NHWC input, one block size >= 1 and one pair
// >= 0 per spatial axis, all at most 2^20 (TFLM indexes in int).
Status CheckBlocks(const InferContext& ctx, const char* amounts) {
  const Shape& in = ctx.in(0).shape;
  const auto& block = ctx.node.attrs.Ints("block_shape");
  const auto& pairs = ctx.node.attrs.Ints(amounts);
  if (in.size() != 3 && in.size() != 4)
    return Status::Error("needs a 3-D NHC or 4-D NHWC input, has " + Dims(in));
  const size_t spatial = in.size() - 2;
  if (block.size() != spatial || pairs.size() != 2 * spatial)
    return Status::Error("needs 'block_shape' of " + std::to_string(spatial) + " and '" + amounts +
                         "' of " + std::to_string(2 * spatial) + " values for input " + Dims(in));
  for (int64_t b : block) {
    if (b < 1 || b > kMaxImageSize) return Status::Error("needs block sizes in [1, 2^20]");
  }
  for (int64_t p : pairs) {
    if (p < 0 || p > kMaxImageSize)
      return Status::Error(std::string("needs ") + amounts + " in [0, 2^20]");
  }
  for (int64_t d : in) {
    if (d > kMaxImageSize) return Status::Error("needs dimensions of at most 2^20");
  }
  return Status::Ok();
}

}  // namespace

Status InferBatchToSpaceNd(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_RETURN_IF_ERROR(CheckBlocks(ctx, "crops"));
  const Shape& in = ctx.in(0).shape;
  const auto& block = ctx.node.attrs.Ints("block_shape");
  const auto& crops = ctx.node.attrs.Ints("crops");
  int64_t blocks = 1;
  for (int64_t b : block) blocks *= b;
  if (in[0] % blocks != 0)
    return Status::Error("batch " + std::to_string(in[0]) +
                         " is not a multiple of the block shape's product " +
                         std::to_string(blocks));
  Shape shape = in;
  shape[0] = in[0] / blocks;
  for (size_t d = 0; d < block.size(); ++d) {
    shape[d + 1] = in[d + 1] * block[d] - crops[2 * d] - crops[2 * d + 1];
    if (shape[d + 1] < 1)
      return Status::Error("crops remove all of spatial axis " + std::to_string(d + 1));
  }
  out->push_back({ctx.in(0).dtype, shape});
  return Status::Ok();
}

Status InferSpaceToBatchNd(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_RETURN_IF_ERROR(CheckBlocks(ctx, "paddings"));
  const Shape& in = ctx.in(0).shape;
  const auto& block = ctx.node.attrs.Ints("block_shape");
  const auto& pads = ctx.node.attrs.Ints("paddings");
  Shape shape = in;
  for (size_t d = 0; d < block.size(); ++d) {
    const int64_t padded = in[d + 1] + pads[2 * d] + pads[2 * d + 1];
    if (padded % block[d] != 0)
      return Status::Error("padded spatial axis " + std::to_string(d + 1) + " (" +
                           std::to_string(padded) + ") is not a multiple of its block size " +
                           std::to_string(block[d]));
    shape[d + 1] = padded / block[d];
    shape[0] *= block[d];
  }
  out->push_back({ctx.in(0).dtype, shape});
  return Status::Ok();
}

Status InferGatherAxis(const InferContext& ctx, std::vector<TensorType>* out) {
  const Value& params = ctx.in(0);
  const Value& indices = ctx.in(1);
  if (indices.dtype != DType::kI32 && indices.dtype != DType::kI64)
    return Status::Error("indices '" + indices.name + "' must be int32 or int64");
  const auto rank = static_cast<int64_t>(params.shape.size());
  const auto index_rank = static_cast<int64_t>(indices.shape.size());
  const int64_t axis = ctx.node.attrs.Int("axis");
  const int64_t batch_dims = ctx.node.attrs.Int("batch_dims");
  if (axis < 0 || axis >= rank)
    return Status::Error("axis " + std::to_string(axis) + " is not an axis of " +
                         Dims(params.shape));
  if (batch_dims < 0 || batch_dims > axis || batch_dims > index_rank)
    return Status::Error("batch_dims " + std::to_string(batch_dims) +
                         " must lie in [0, axis] and not exceed the indices' rank");
  for (int64_t d = 0; d < batch_dims; ++d) {
    if (params.shape[static_cast<size_t>(d)] != indices.shape[static_cast<size_t>(d)])
      return Status::Error("params " + Dims(params.shape) + " and indices " + Dims(indices.shape) +
                           " differ in batch dimension " + std::to_string(d));
  }
  const int64_t axis_size = params.shape[static_cast<size_t>(axis)];
  // Constant indices are checked now; others by the kernel, as TFLM checks them at run time.
  if (indices.is_constant()) {
    const size_t width = indices.dtype == DType::kI64 ? 8 : 4;
    const auto count = static_cast<size_t>(indices.elements());
    if (indices.data->size() < count * width)
      return Status::Error("indices '" + indices.name + "' hold fewer bytes than their shape");
    for (size_t k = 0; k < count; ++k) {
      int64_t index = 0;
      if (width == 8) {
        std::memcpy(&index, indices.data->data() + 8 * k, 8);
      } else {
        int32_t narrow = 0;
        std::memcpy(&narrow, indices.data->data() + 4 * k, 4);
        index = narrow;
      }
      if (index < 0 || index >= axis_size)
        return Status::Error("index " + std::to_string(index) + " (element " + std::to_string(k) +
                             " of '" + indices.name + "') is outside axis " + std::to_string(axis) +
                             " of size " + std::to_string(axis_size));
    }
  }
  Shape shape(params.shape.begin(), params.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin() + batch_dims, indices.shape.end());
  shape.insert(shape.end(), params.shape.begin() + axis + 1, params.shape.end());
  out->push_back({params.dtype, shape});
  return Status::Ok();
}

Status InferCumsum(const InferContext& ctx, std::vector<TensorType>* out) {
  const Value& x = ctx.in(0);
  const int64_t axis = ctx.node.attrs.Int("axis");
  if (axis < 0 || axis >= static_cast<int64_t>(x.shape.size()))
    return Status::Error("axis " + std::to_string(axis) + " is not an axis of " + Dims(x.shape));
  if (x.dtype == DType::kI8) {
    // TFLM's multipliers divide by both scales.
    const auto positive = [](const Value& v) {
      return v.quant && v.quant->scale.size() == 1 && v.quant->scale[0] > 0.0f;
    };
    if (!positive(x)) return Status::Error("an int8 cumsum needs a positive input scale");
  }
  out->push_back({x.dtype, x.shape});
  return Status::Ok();
}

Status InferL2Normalization(const InferContext& ctx, std::vector<TensorType>* out) {
  const Value& x = ctx.in(0);
  if (x.shape.empty() || x.shape.size() > 4)
    return Status::Error("needs an input of rank 1 to 4 (as TFLM), has " + Dims(x.shape));
  if (ctx.node.attrs.Str("activation") != "none")
    return Status::Error("has a fused activation, which TFLM's L2_NORMALIZATION refuses");
  out->push_back({x.dtype, x.shape});
  return Status::Ok();
}

Status InferTfliteBatchMatMul(const InferContext& ctx, std::vector<TensorType>* out) {
  const Value& lhs = ctx.in(0);
  const Value& rhs = ctx.in(1);
  const bool adj_x = ctx.node.attrs.Int("adj_x") != 0;
  const bool adj_y = ctx.node.attrs.Int("adj_y") != 0;
  const Shape& a = lhs.shape;
  const Shape& b = rhs.shape;
  if (a.size() < 2 || a.size() > 5 || b.size() < 2 || b.size() > 5)
    return Status::Error("batch matmul operands must have rank 2 to 5 (TFLM), have " + Dims(a) +
                         " and " + Dims(b));
  MF_RETURN_IF_ERROR(RequireSameDType(lhs, rhs));
  if (lhs.dtype == DType::kI8 || lhs.dtype == DType::kI16) {
    for (const Value* v : {&lhs, &rhs}) {
      if (!v->quant || v->quant->scale.size() != 1 || !(v->quant->scale[0] > 0.0f))
        return Status::Error("a quantised batch matmul needs one positive scale per operand");
      if (lhs.dtype == DType::kI16 && !v->quant->zero_point.empty() && v->quant->zero_point[0] != 0)
        return Status::Error("an int16 batch matmul needs zero points 0 (TFLM)");
    }
  } else if (lhs.dtype != DType::kF32) {
    return Status::Error("batch matmul runs float32, int8 and int16 operands");
  }
  const size_t rank = std::max(a.size(), b.size());
  Shape la(rank - a.size(), 1), lb(rank - b.size(), 1);
  la.insert(la.end(), a.begin(), a.end());
  lb.insert(lb.end(), b.begin(), b.end());
  Shape shape;
  for (size_t d = 0; d + 2 < rank; ++d) {
    if (la[d] != lb[d] && la[d] != 1 && lb[d] != 1)
      return Status::Error("batch dimensions of " + Dims(a) + " and " + Dims(b) +
                           " do not broadcast");
    shape.push_back(la[d] == 1 ? lb[d] : la[d]);
  }
  const int64_t depth_l = adj_x ? la[rank - 2] : la[rank - 1];
  const int64_t depth_r = adj_y ? lb[rank - 1] : lb[rank - 2];
  if (depth_l != depth_r)
    return Status::Error("batch matmul of " + Dims(a) + (adj_x ? " (adjoint)" : "") + " and " +
                         Dims(b) + (adj_y ? " (adjoint)" : "") + ": inner dimensions " +
                         std::to_string(depth_l) + " and " + std::to_string(depth_r) + " differ");
  // TFLM's Eval folds an LHS [.., Q, R, S] into [.., Q R, S] when both ranks exceed 2 and the
  // RHS's third-from-last dimension is 1; with adj_x the folded shape no longer describes the
  // transposed copy, and TFLM computes only the first of the Q matrices.
  if (adj_x && a.size() > 2 && b.size() > 2 && b[b.size() - 3] == 1 && a[a.size() - 3] != 1)
    return Status::Error("batch matmul with adj_x, LHS " + Dims(a) + " and RHS " + Dims(b) +
                         ": TFLM folds the LHS batch (RHS third-from-last dimension 1) and "
                         "then computes only its first matrix");
  shape.push_back(adj_x ? la[rank - 1] : la[rank - 2]);
  shape.push_back(adj_y ? lb[rank - 2] : lb[rank - 1]);
  out->push_back({lhs.dtype, shape});
  return Status::Ok();
}

}  // namespace memfold
