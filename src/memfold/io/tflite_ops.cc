#include "memfold/io/tflite_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace memfold {
namespace {

using Ints = std::vector<int64_t>;

constexpr int32_t kCustom = 32;

// TFLite's BuiltinOperator names by code (schema.fbs, codes 0-158): for messages and the
// coverage table, whether memfold maps the code or not.
constexpr std::string_view kBuiltinNames[] = {
    "ADD",
    "AVERAGE_POOL_2D",
    "CONCATENATION",
    "CONV_2D",
    "DEPTHWISE_CONV_2D",
    "DEPTH_TO_SPACE",
    "DEQUANTIZE",
    "EMBEDDING_LOOKUP",
    "FLOOR",
    "FULLY_CONNECTED",
    "HASHTABLE_LOOKUP",
    "L2_NORMALIZATION",
    "L2_POOL_2D",
    "LOCAL_RESPONSE_NORMALIZATION",
    "LOGISTIC",
    "LSH_PROJECTION",
    "LSTM",
    "MAX_POOL_2D",
    "MUL",
    "RELU",
    "RELU_N1_TO_1",
    "RELU6",
    "RESHAPE",
    "RESIZE_BILINEAR",
    "RNN",
    "SOFTMAX",
    "SPACE_TO_DEPTH",
    "SVDF",
    "TANH",
    "CONCAT_EMBEDDINGS",
    "SKIP_GRAM",
    "CALL",
    "CUSTOM",
    "EMBEDDING_LOOKUP_SPARSE",
    "PAD",
    "UNIDIRECTIONAL_SEQUENCE_RNN",
    "GATHER",
    "BATCH_TO_SPACE_ND",
    "SPACE_TO_BATCH_ND",
    "TRANSPOSE",
    "MEAN",
    "SUB",
    "DIV",
    "SQUEEZE",
    "UNIDIRECTIONAL_SEQUENCE_LSTM",
    "STRIDED_SLICE",
    "BIDIRECTIONAL_SEQUENCE_RNN",
    "EXP",
    "TOPK_V2",
    "SPLIT",
    "LOG_SOFTMAX",
    "DELEGATE",
    "BIDIRECTIONAL_SEQUENCE_LSTM",
    "CAST",
    "PRELU",
    "MAXIMUM",
    "ARG_MAX",
    "MINIMUM",
    "LESS",
    "NEG",
    "PADV2",
    "GREATER",
    "GREATER_EQUAL",
    "LESS_EQUAL",
    "SELECT",
    "SLICE",
    "SIN",
    "TRANSPOSE_CONV",
    "SPARSE_TO_DENSE",
    "TILE",
    "EXPAND_DIMS",
    "EQUAL",
    "NOT_EQUAL",
    "LOG",
    "SUM",
    "SQRT",
    "RSQRT",
    "SHAPE",
    "POW",
    "ARG_MIN",
    "FAKE_QUANT",
    "REDUCE_PROD",
    "REDUCE_MAX",
    "PACK",
    "LOGICAL_OR",
    "ONE_HOT",
    "LOGICAL_AND",
    "LOGICAL_NOT",
    "UNPACK",
    "REDUCE_MIN",
    "FLOOR_DIV",
    "REDUCE_ANY",
    "SQUARE",
    "ZEROS_LIKE",
    "FILL",
    "FLOOR_MOD",
    "RANGE",
    "RESIZE_NEAREST_NEIGHBOR",
    "LEAKY_RELU",
    "SQUARED_DIFFERENCE",
    "MIRROR_PAD",
    "ABS",
    "SPLIT_V",
    "UNIQUE",
    "CEIL",
    "REVERSE_V2",
    "ADD_N",
    "GATHER_ND",
    "COS",
    "WHERE",
    "RANK",
    "ELU",
    "REVERSE_SEQUENCE",
    "MATRIX_DIAG",
    "QUANTIZE",
    "MATRIX_SET_DIAG",
    "ROUND",
    "HARD_SWISH",
    "IF",
    "WHILE",
    "NON_MAX_SUPPRESSION_V4",
    "NON_MAX_SUPPRESSION_V5",
    "SCATTER_ND",
    "SELECT_V2",
    "DENSIFY",
    "SEGMENT_SUM",
    "BATCH_MATMUL",
    "PLACEHOLDER_FOR_GREATER_OP_CODES",
    "CUMSUM",
    "CALL_ONCE",
    "BROADCAST_TO",
    "RFFT2D",
    "CONV_3D",
    "IMAG",
    "REAL",
    "COMPLEX_ABS",
    "HASHTABLE",
    "HASHTABLE_FIND",
    "HASHTABLE_IMPORT",
    "HASHTABLE_SIZE",
    "REDUCE_ALL",
    "CONV_3D_TRANSPOSE",
    "VAR_HANDLE",
    "READ_VARIABLE",
    "ASSIGN_VARIABLE",
    "BROADCAST_ARGS",
    "RANDOM_STANDARD_NORMAL",
    "BUCKETIZE",
    "RANDOM_UNIFORM",
    "MULTINOMIAL",
    "GELU",
    "DYNAMIC_UPDATE_SLICE",
    "RELU_0_TO_1",
    "UNSORTED_SEGMENT_PROD",
    "UNSORTED_SEGMENT_MAX",
    "UNSORTED_SEGMENT_SUM",
    "ATAN2",
    "UNSORTED_SEGMENT_MIN",
    "SIGN",
};

Result<std::string> Activation(int64_t code) {
  switch (code) {
    case 0:
      return std::string("none");
    case 1:
      return std::string("relu");
    case 2:
      return std::string("relu_n1_to_1");
    case 3:
      return std::string("relu6");
    default:
      return Status::Error("fused activation " + std::to_string(code) +
                           " is not supported (none, relu, relu_n1_to_1, relu6 are)");
  }
}

template <typename T>
T Opt(const TfliteConvertContext& ctx, int slot, T fallback) {
  return ctx.options ? ctx.options->Get<T>(slot, fallback) : fallback;
}

Status SetActivation(const TfliteConvertContext& ctx, int slot, Node* node) {
  MF_ASSIGN_OR_RETURN(std::string act, Activation(Opt<int8_t>(ctx, slot, 0)));
  node->attrs.Set("activation", act);
  return Status::Ok();
}

Status SetPadding(int8_t padding, Node* node) {
  if (padding != 0 && padding != 1) {
    return Status::Error("padding " + std::to_string(padding) +
                         " is neither SAME (0) nor VALID (1)");
  }
  node->attrs.Set("padding", std::string(padding == 0 ? "same" : "valid"));
  return Status::Ok();
}

// Reads a constant int32/int64 input as integers and removes it from the node's inputs.
Result<Ints> TakeConstantInts(const TfliteConvertContext& ctx, Node* node, size_t index,
                              const char* what) {
  if (index >= node->inputs.size() || node->inputs[index] == kNoValue) {
    return Status::Error(std::string("needs its ") + what + " as input " + std::to_string(index));
  }
  const Value& v = ctx.graph.value(node->inputs[index]);
  if (!v.is_constant() || (v.dtype != DType::kI32 && v.dtype != DType::kI64)) {
    return Status::Error(std::string("needs its ") + what + " as a constant int32 tensor; '" +
                         v.name + "' is not");
  }
  Ints values(static_cast<size_t>(v.elements()));
  for (size_t k = 0; k < values.size(); ++k) {
    if (v.dtype == DType::kI32) {
      int32_t x;
      std::memcpy(&x, v.data->data() + 4 * k, 4);
      values[k] = x;
    } else {
      std::memcpy(&values[k], v.data->data() + 8 * k, 8);
    }
  }
  node->inputs.erase(node->inputs.begin() + static_cast<std::ptrdiff_t>(index));
  return values;
}

Status ConvertNothing(const TfliteConvertContext&, Node*) { return Status::Ok(); }

Status ConvertActivationOnly(const TfliteConvertContext& ctx, Node* node) {
  return SetActivation(ctx, 0, node);
}

// Padding (slot 0) and stride (height in slot 2, width in slot 1): how Conv2DOptions,
// DepthwiseConv2DOptions and Pool2DOptions all begin.
Status SetPaddingAndStride(const TfliteConvertContext& ctx, Node* node) {
  MF_RETURN_IF_ERROR(SetPadding(Opt<int8_t>(ctx, 0, 0), node));
  node->attrs.Set("stride", Ints{Opt<int32_t>(ctx, 2, 1), Opt<int32_t>(ctx, 1, 1)});
  return Status::Ok();
}

Status ConvertConv2D(const TfliteConvertContext& ctx, Node* node) {
  MF_RETURN_IF_ERROR(SetPaddingAndStride(ctx, node));
  node->attrs.Set("dilation", Ints{Opt<int32_t>(ctx, 5, 1), Opt<int32_t>(ctx, 4, 1)});
  return SetActivation(ctx, 3, node);
}

Status ConvertDepthwise(const TfliteConvertContext& ctx, Node* node) {
  MF_RETURN_IF_ERROR(SetPaddingAndStride(ctx, node));
  node->attrs.Set("dilation", Ints{Opt<int32_t>(ctx, 6, 1), Opt<int32_t>(ctx, 5, 1)});
  // The multiplier follows from the filter shape; TFLite files sometimes store 0 or 1 here.
  return SetActivation(ctx, 4, node);
}

Status ConvertPool(const TfliteConvertContext& ctx, Node* node) {
  MF_RETURN_IF_ERROR(SetPaddingAndStride(ctx, node));
  node->attrs.Set("filter", Ints{Opt<int32_t>(ctx, 4, 1), Opt<int32_t>(ctx, 3, 1)});
  return SetActivation(ctx, 5, node);
}

Status ConvertFullyConnected(const TfliteConvertContext& ctx, Node* node) {
  if (Opt<int8_t>(ctx, 1, 0) != 0) {
    return Status::Error("shuffled fully-connected weights are not supported");
  }
  node->attrs.Set("keep_num_dims", int64_t{Opt<uint8_t>(ctx, 2, 0) != 0});
  return SetActivation(ctx, 0, node);
}

// The output's element type, for ops whose output type the file decides.
std::string OutputTypeName(const TfliteConvertContext& ctx, const Node& node) {
  return std::string(DTypeName(ctx.graph.value(node.outputs[0]).dtype));
}

Status ConvertSoftmax(const TfliteConvertContext& ctx, Node* node) {
  node->attrs.Set("beta", static_cast<double>(Opt<float>(ctx, 0, 1.0f)));
  node->attrs.Set("output_dtype", OutputTypeName(ctx, *node));
  return Status::Ok();
}

Status ConvertTypeChange(const TfliteConvertContext& ctx, Node* node) {
  node->attrs.Set("dtype", OutputTypeName(ctx, *node));
  return Status::Ok();
}

Status ConvertConcat(const TfliteConvertContext& ctx, Node* node) {
  node->attrs.Set("axis", int64_t{Opt<int32_t>(ctx, 0, 0)});
  MF_ASSIGN_OR_RETURN(std::string act, Activation(Opt<int8_t>(ctx, 1, 0)));
  if (act != "none") return Status::Error("a fused activation on CONCATENATION is not supported");
  return Status::Ok();
}

// RESHAPE and SQUEEZE: the target is the output tensor's shape, as TFLM uses it.
Status ConvertReshape(const TfliteConvertContext& ctx, Node* node) {
  node->inputs.resize(1);
  node->attrs.Set("shape", ctx.graph.value(node->outputs[0]).shape);
  return Status::Ok();
}

Status ConvertPad(const TfliteConvertContext& ctx, Node* node) {
  const bool has_value = node->inputs.size() > 2;
  MF_ASSIGN_OR_RETURN(Ints pads, TakeConstantInts(ctx, node, 1, "paddings"));
  node->attrs.Set("paddings", pads);
  const Value& out = ctx.graph.value(node->outputs[0]);
  double fill = 0.0;
  if (out.quant && !out.quant->zero_point.empty()) {
    fill = static_cast<double>(out.quant->zero_point[0]);
  }
  if (has_value) {
    const Value& v = ctx.graph.value(node->inputs[1]);
    if (!v.is_constant() || v.elements() != 1) {
      return Status::Error("PADV2 needs a constant scalar pad value");
    }
    if (v.dtype == DType::kF32) {
      float f;
      std::memcpy(&f, v.data->data(), 4);
      fill = f;
    } else if (v.dtype == DType::kI8) {
      fill = static_cast<double>(static_cast<int8_t>((*v.data)[0]));
    }
    node->inputs.resize(1);
  }
  node->attrs.Set("value", fill);
  return Status::Ok();
}

Status ConvertMean(const TfliteConvertContext& ctx, Node* node) {
  MF_ASSIGN_OR_RETURN(Ints axes, TakeConstantInts(ctx, node, 1, "axes"));
  node->attrs.Set("axes", axes);
  node->attrs.Set("keepdims", int64_t{Opt<uint8_t>(ctx, 0, 0) != 0});
  return Status::Ok();
}

Status ConvertTranspose(const TfliteConvertContext& ctx, Node* node) {
  MF_ASSIGN_OR_RETURN(Ints perm, TakeConstantInts(ctx, node, 1, "permutation"));
  node->attrs.Set("perm", perm);
  return Status::Ok();
}

// REVERSE_V2: the constant axis input, negative axes counted from the end.
Status ConvertReverse(const TfliteConvertContext& ctx, Node* node) {
  MF_ASSIGN_OR_RETURN(Ints axes, TakeConstantInts(ctx, node, 1, "axis"));
  const auto rank = static_cast<int64_t>(ctx.graph.value(node->inputs[0]).shape.size());
  for (int64_t& axis : axes) axis += axis < 0 ? rank : 0;
  node->attrs.Set("axes", axes);
  return Status::Ok();
}

Status ConvertSvdf(const TfliteConvertContext& ctx, Node* node) {
  node->attrs.Set("rank", int64_t{Opt<int32_t>(ctx, 0, 1)});
  return SetActivation(ctx, 1, node);
}

// UNIDIRECTIONAL_SEQUENCE_LSTM: the cell gate's activation (TANH, code 4, is the one TFLite
// writes; TFLM's kernel computes tanh or sigmoid only), the cell clip and the layout. The
// projection clip and asymmetric_quantize_inputs only matter to variants TFLM refuses.
Status ConvertLstm(const TfliteConvertContext& ctx, Node* node) {
  const auto activation = Opt<int8_t>(ctx, 0, 0);
  if (activation != 4) {
    return Status::Error("LSTM cell activation " + std::to_string(activation) +
                         " is not supported (TFLM's LSTM computes TANH, code 4)");
  }
  const auto cell_clip = Opt<float>(ctx, 1, 0.0f);
  if (!std::isfinite(cell_clip)) return Status::Error("LSTM cell clip is not finite");
  node->attrs.Set("cell_activation", std::string("tanh"));
  node->attrs.Set("cell_clip", static_cast<double>(cell_clip));
  node->attrs.Set("time_major", int64_t{Opt<uint8_t>(ctx, 3, 0) != 0});
  return Status::Ok();
}

Status ConvertLeakyRelu(const TfliteConvertContext& ctx, Node* node) {
  node->attrs.Set("alpha", static_cast<double>(Opt<float>(ctx, 0, 0.2f)));
  return Status::Ok();
}

// RESIZE_NEAREST_NEIGHBOR: the constant size input [height, width] and both flags.
Status ConvertResizeNearest(const TfliteConvertContext& ctx, Node* node) {
  MF_ASSIGN_OR_RETURN(Ints size, TakeConstantInts(ctx, node, 1, "size"));
  node->attrs.Set("size", size);
  node->attrs.Set("align_corners", int64_t{Opt<uint8_t>(ctx, 0, 0) != 0});
  node->attrs.Set("half_pixel_centers", int64_t{Opt<uint8_t>(ctx, 1, 0) != 0});
  return Status::Ok();
}

// RESIZE_BILINEAR: the constant size input [height, width]; align_corners and
// half_pixel_centers follow the two deprecated size fields of ResizeBilinearOptions.
Status ConvertResizeBilinear(const TfliteConvertContext& ctx, Node* node) {
  MF_ASSIGN_OR_RETURN(Ints size, TakeConstantInts(ctx, node, 1, "size"));
  node->attrs.Set("size", size);
  node->attrs.Set("align_corners", int64_t{Opt<uint8_t>(ctx, 2, 0) != 0});
  node->attrs.Set("half_pixel_centers", int64_t{Opt<uint8_t>(ctx, 3, 0) != 0});
  return Status::Ok();
}

// TRANSPOSE_CONV: (output_shape, weights, input[, bias]) becomes (input, weights[, bias]).
// TFLM ignores the output_shape tensor and sizes the output from the output tensor, and so
// does memfold ("output_shape" is the output tensor's shape).
Status ConvertTransposeConv(const TfliteConvertContext& ctx, Node* node) {
  if (node->inputs.size() != 3 && node->inputs.size() != 4)
    return Status::Error("TRANSPOSE_CONV needs (output_shape, weights, input[, bias])");
  if (node->inputs[1] == kNoValue || node->inputs[2] == kNoValue)
    return Status::Error("TRANSPOSE_CONV needs its weights and input");
  std::vector<ValueId> inputs = {node->inputs[2], node->inputs[1]};
  if (node->inputs.size() == 4 && node->inputs[3] != kNoValue) inputs.push_back(node->inputs[3]);
  node->inputs = std::move(inputs);
  MF_RETURN_IF_ERROR(SetPaddingAndStride(ctx, node));
  node->attrs.Set("output_shape", ctx.graph.value(node->outputs[0]).shape);
  return SetActivation(ctx, 3, node);
}

// MIRROR_PAD: the constant paddings input; MirrorPadOptions.mode REFLECT (0) or SYMMETRIC (1).
Status ConvertMirrorPad(const TfliteConvertContext& ctx, Node* node) {
  MF_ASSIGN_OR_RETURN(Ints pads, TakeConstantInts(ctx, node, 1, "paddings"));
  node->attrs.Set("paddings", pads);
  const int8_t mode = Opt<int8_t>(ctx, 0, 0);
  if (mode != 0 && mode != 1)
    return Status::Error("has mode " + std::to_string(mode) +
                         ", neither REFLECT (0) nor SYMMETRIC (1)");
  node->attrs.Set("mode", std::string(mode == 0 ? "reflect" : "symmetric"));
  return Status::Ok();
}

// BATCH_TO_SPACE_ND (input, block_shape, crops) and SPACE_TO_BATCH_ND (input, block_shape,
// paddings): both parameter inputs constant, read into attributes.
Status ConvertBlocks(const TfliteConvertContext& ctx, Node* node, const char* amounts) {
  if (node->inputs.size() != 3)
    return Status::Error(std::string("needs (input, block_shape, ") + amounts + ")");
  MF_ASSIGN_OR_RETURN(Ints block, TakeConstantInts(ctx, node, 1, "block_shape"));
  MF_ASSIGN_OR_RETURN(Ints pairs, TakeConstantInts(ctx, node, 1, amounts));
  node->attrs.Set("block_shape", block);
  node->attrs.Set(amounts, pairs);
  return Status::Ok();
}
Status ConvertBatchToSpace(const TfliteConvertContext& ctx, Node* node) {
  return ConvertBlocks(ctx, node, "crops");
}
Status ConvertSpaceToBatch(const TfliteConvertContext& ctx, Node* node) {
  return ConvertBlocks(ctx, node, "paddings");
}

Status ConvertBlockSize(const TfliteConvertContext& ctx, Node* node) {
  node->attrs.Set("block_size", int64_t{Opt<int32_t>(ctx, 0, 0)});
  return Status::Ok();
}

// The rank of the node's input `index`.
int64_t RankOf(const TfliteConvertContext& ctx, const Node& node, size_t index) {
  return static_cast<int64_t>(ctx.graph.value(node.inputs[index]).shape.size());
}

// GATHER (params, indices): GatherOptions axis (negative counts from params' end) and
// batch_dims (negative counts from the indices' end), kept non-negative.
Status ConvertGather(const TfliteConvertContext& ctx, Node* node) {
  if (node->inputs.size() != 2 || node->inputs[0] == kNoValue || node->inputs[1] == kNoValue)
    return Status::Error("GATHER needs (params, indices)");
  int64_t axis = Opt<int32_t>(ctx, 0, 0), batch_dims = Opt<int32_t>(ctx, 1, 0);
  if (axis < 0) axis += RankOf(ctx, *node, 0);
  if (batch_dims < 0) batch_dims += RankOf(ctx, *node, 1);
  node->attrs.Set("axis", axis);
  node->attrs.Set("batch_dims", batch_dims);
  return Status::Ok();
}

// A single constant axis taken from input `index`, wrapped into [0, rank).
Result<int64_t> TakeAxis(const TfliteConvertContext& ctx, Node* node, size_t index, int64_t rank) {
  MF_ASSIGN_OR_RETURN(Ints axis, TakeConstantInts(ctx, node, index, "axis"));
  if (axis.size() != 1) return Status::Error("needs one axis, has " + std::to_string(axis.size()));
  return axis[0] < 0 ? axis[0] + rank : axis[0];
}

// CUMSUM (input, axis): the constant axis (negative from the end) and CumsumOptions'
// exclusive and reverse.
Status ConvertCumsum(const TfliteConvertContext& ctx, Node* node) {
  MF_ASSIGN_OR_RETURN(const int64_t axis, TakeAxis(ctx, node, 1, RankOf(ctx, *node, 0)));
  node->attrs.Set("axis", axis);
  node->attrs.Set("exclusive", int64_t{Opt<uint8_t>(ctx, 0, 0) != 0});
  node->attrs.Set("reverse", int64_t{Opt<uint8_t>(ctx, 1, 0) != 0});
  return Status::Ok();
}

// BATCH_MATMUL (lhs, rhs): BatchMatMulOptions' adj_x (slot 0) and adj_y (slot 1).
// asymmetric_quantize_inputs (slot 2) only selects TFLite's hybrid float x int8 kernel, which
// TFLM does not have (both operands share a type). TFLM's Prepare also wants the output's type
// to be the operands' and, for int16, its zero point 0.
Status ConvertBatchMatMul(const TfliteConvertContext& ctx, Node* node) {
  node->attrs.Set("adj_x", int64_t{Opt<uint8_t>(ctx, 0, 0) != 0});
  node->attrs.Set("adj_y", int64_t{Opt<uint8_t>(ctx, 1, 0) != 0});
  if (node->inputs.size() != 2 || node->outputs.size() != 1)
    return Status::Error("BATCH_MATMUL takes two inputs and gives one output");
  const Value& lhs = ctx.graph.value(node->inputs[0]);
  const Value& out = ctx.graph.value(node->outputs[0]);
  if (out.dtype != lhs.dtype)
    return Status::Error("BATCH_MATMUL's output type " + std::string(DTypeName(out.dtype)) +
                         " is not its operands' " + std::string(DTypeName(lhs.dtype)));
  if (out.dtype == DType::kI8 || out.dtype == DType::kI16) {
    if (!out.quant || out.quant->scale.size() != 1 || !(out.quant->scale[0] > 0.0f))
      return Status::Error("a quantised BATCH_MATMUL needs one positive output scale");
    if (out.dtype == DType::kI16 && !out.quant->zero_point.empty() && out.quant->zero_point[0] != 0)
      return Status::Error("an int16 BATCH_MATMUL needs output zero point 0 (TFLM)");
  }
  return Status::Ok();
}

Status ConvertSlice(const TfliteConvertContext& ctx, Node* node) {
  MF_ASSIGN_OR_RETURN(Ints begin, TakeConstantInts(ctx, node, 1, "begin"));
  MF_ASSIGN_OR_RETURN(Ints size, TakeConstantInts(ctx, node, 1, "size"));
  node->attrs.Set("begin", begin);
  node->attrs.Set("size", size);
  return Status::Ok();
}

// SPLIT: (axis, input), num_splits equal parts.
Status ConvertSplit(const TfliteConvertContext& ctx, Node* node) {
  if (node->inputs.size() != 2) return Status::Error("SPLIT needs (axis, input)");
  MF_ASSIGN_OR_RETURN(const int64_t axis, TakeAxis(ctx, node, 0, RankOf(ctx, *node, 1)));
  const Shape& in = ctx.graph.value(node->inputs[0]).shape;
  const int64_t parts = Opt<int32_t>(ctx, 0, 0);
  if (axis < 0 || axis >= static_cast<int64_t>(in.size()) ||
      parts != static_cast<int64_t>(node->outputs.size()) ||
      in[static_cast<size_t>(axis)] % parts != 0) {
    return Status::Error(
        "SPLIT needs an axis of the input and num_splits (one per output) "
        "dividing it");
  }
  node->attrs.Set("axis", axis);
  node->attrs.Set("sizes", Ints(static_cast<size_t>(parts), in[static_cast<size_t>(axis)] / parts));
  return Status::Ok();
}

// SPLIT_V: (input, size_splits, axis); one size may be -1, the rest of the axis.
Status ConvertSplitV(const TfliteConvertContext& ctx, Node* node) {
  if (node->inputs.size() != 3) return Status::Error("SPLIT_V needs (input, size_splits, axis)");
  MF_ASSIGN_OR_RETURN(const int64_t axis, TakeAxis(ctx, node, 2, RankOf(ctx, *node, 0)));
  MF_ASSIGN_OR_RETURN(Ints sizes, TakeConstantInts(ctx, node, 1, "size_splits"));
  const Shape& in = ctx.graph.value(node->inputs[0]).shape;
  if (axis < 0 || axis >= static_cast<int64_t>(in.size()))
    return Status::Error("SPLIT_V's axis is not an axis of its input");
  const int64_t dim = in[static_cast<size_t>(axis)];
  int64_t known = 0;
  for (int64_t s : sizes) {
    if (s > dim) return Status::Error("SPLIT_V has a size beyond its axis");
    known += s < 0 ? 0 : s;  // at most sizes * dim: no overflow
  }
  for (int64_t& s : sizes) s = s < 0 ? dim - known : s;
  node->attrs.Set("axis", axis);
  node->attrs.Set("sizes", sizes);
  return Status::Ok();
}

// PACK (values_count, axis) and UNPACK (num, axis): a negative axis counts from the end of the
// packed tensor.
Status ConvertPack(const TfliteConvertContext& ctx, Node* node) {
  const int64_t axis = Opt<int32_t>(ctx, 1, 0);
  node->attrs.Set("axis", axis < 0 ? axis + RankOf(ctx, *node, 0) + 1 : axis);
  return Status::Ok();
}

Status ConvertUnpack(const TfliteConvertContext& ctx, Node* node) {
  int64_t axis = Opt<int32_t>(ctx, 1, 0);
  const Shape& in = ctx.graph.value(node->inputs[0]).shape;
  if (axis < 0) axis += static_cast<int64_t>(in.size());
  if (axis < 0 || axis >= static_cast<int64_t>(in.size()) ||
      in[static_cast<size_t>(axis)] != static_cast<int64_t>(node->outputs.size())) {
    return Status::Error("UNPACK needs an axis whose size is its number of outputs");
  }
  node->attrs.Set("axis", axis);
  return Status::Ok();
}

// STRIDED_SLICE: (input, begin, end, strides), each axis resolved here as TFLM does at run time.
Status ConvertStridedSlice(const TfliteConvertContext& ctx, Node* node) {
  // TFLM's kernel ignores ellipsis_mask, new_axis_mask and offset (BuildStridedSliceParams).
  MF_ASSIGN_OR_RETURN(Ints begin, TakeConstantInts(ctx, node, 1, "begin"));
  MF_ASSIGN_OR_RETURN(Ints end, TakeConstantInts(ctx, node, 1, "end"));
  MF_ASSIGN_OR_RETURN(Ints strides, TakeConstantInts(ctx, node, 1, "strides"));
  const Shape& in = ctx.graph.value(node->inputs[0]).shape;
  if (begin.size() != end.size() || begin.size() != strides.size() || begin.size() > in.size())
    return Status::Error(
        "STRIDED_SLICE needs begin, end and strides of one length, at most the rank");
  for (const Ints* v : {&begin, &end, &strides}) {  // TFLM reads them as int32
    for (int64_t x : *v) {
      if (x < std::numeric_limits<int32_t>::lowest() || x > std::numeric_limits<int32_t>::max())
        return Status::Error("STRIDED_SLICE's begin, end and strides must fit in int32");
    }
  }
  const auto begin_mask = Opt<int32_t>(ctx, 0, 0), end_mask = Opt<int32_t>(ctx, 1, 0);
  const auto shrink_mask = Opt<int32_t>(ctx, 4, 0);
  Ints starts(in.size()), steps(in.size(), 1), counts(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    const bool given = d < begin.size();  // trailing axes are taken whole
    if (given && strides[d] == 0) return Status::Error("STRIDED_SLICE has a zero stride");
    const uint32_t bit = 1u << d;
    steps[d] = given ? strides[d] : 1;
    counts[d] =
        ResolveStridedAxis(in[d], given ? begin[d] : 0, given ? end[d] : in[d], steps[d],
                           !given || (begin_mask & bit) != 0, !given || (end_mask & bit) != 0,
                           given && (shrink_mask & bit) != 0, &starts[d]);
  }
  node->attrs.Set("begin", starts);
  node->attrs.Set("strides", steps);
  node->attrs.Set("counts", counts);
  node->attrs.Set("shape", ctx.graph.value(node->outputs[0]).shape);
  return Status::Ok();
}

// ARG_MAX / ARG_MIN: the constant axis input; indices of the output tensor's type.
Status ConvertArgMinMax(const TfliteConvertContext& ctx, Node* node, bool max) {
  MF_ASSIGN_OR_RETURN(const int64_t axis, TakeAxis(ctx, node, 1, RankOf(ctx, *node, 0)));
  node->attrs.Set("axis", axis);
  node->attrs.Set("max", int64_t{max ? 1 : 0});
  node->attrs.Set("output_dtype", OutputTypeName(ctx, *node));
  return Status::Ok();
}
Status ConvertArgMax(const TfliteConvertContext& ctx, Node* node) {
  return ConvertArgMinMax(ctx, node, true);
}
Status ConvertArgMin(const TfliteConvertContext& ctx, Node* node) {
  return ConvertArgMinMax(ctx, node, false);
}

Status ConvertShape(const TfliteConvertContext& ctx, Node* node) {
  node->attrs.Set("output_dtype", OutputTypeName(ctx, *node));
  return Status::Ok();
}

// FILL: (dims, value); the dims are the output tensor's shape.
Status ConvertFill(const TfliteConvertContext& ctx, Node* node) {
  if (node->inputs.size() != 2) return Status::Error("FILL needs (dims, value)");
  node->inputs.erase(node->inputs.begin());
  node->attrs.Set("shape", ctx.graph.value(node->outputs[0]).shape);
  return Status::Ok();
}

const std::vector<TfliteOpMapping>& Table() {
  static const std::vector<TfliteOpMapping> table = {
      {0, "ADD", "add", 11, {1, 1}, ConvertActivationOnly},
      {1, "AVERAGE_POOL_2D", "avg_pool2d", 5, {1, 4, 4, 4, 4, 1}, ConvertPool},
      {2, "CONCATENATION", "concat", 10, {4, 1}, ConvertConcat},
      {3, "CONV_2D", "conv2d", 1, {1, 4, 4, 1, 4, 4}, ConvertConv2D},
      {4, "DEPTHWISE_CONV_2D", "depthwise_conv2d", 2, {1, 4, 4, 4, 1, 4, 4}, ConvertDepthwise},
      {5, "DEPTH_TO_SPACE", "depth_to_space", 94, {4}, ConvertBlockSize},
      {6, "DEQUANTIZE", "dequantize", 0, {}, ConvertTypeChange},
      {8, "FLOOR", "floor", 0, {}, ConvertNothing},
      {9, "FULLY_CONNECTED", "fully_connected", 8, {1, 1, 1, 1}, ConvertFullyConnected},
      {11, "L2_NORMALIZATION", "l2_normalization", 12, {1}, ConvertActivationOnly},
      {14, "LOGISTIC", "sigmoid", 0, {}, ConvertNothing},
      {17, "MAX_POOL_2D", "max_pool2d", 5, {1, 4, 4, 4, 4, 1}, ConvertPool},
      {18, "MUL", "mul", 21, {1}, ConvertActivationOnly},
      {19, "RELU", "relu", 0, {}, ConvertNothing},
      {21, "RELU6", "relu6", 0, {}, ConvertNothing},
      {22, "RESHAPE", "reshape", 17, {0}, ConvertReshape},
      {23, "RESIZE_BILINEAR", "resize_bilinear", 15, {4, 4, 1, 1}, ConvertResizeBilinear},
      {25, "SOFTMAX", "softmax", 9, {4}, ConvertSoftmax},
      {26, "SPACE_TO_DEPTH", "space_to_depth", 19, {4}, ConvertBlockSize},
      {27, "SVDF", "svdf", 6, {4, 1, 1}, ConvertSvdf},
      {28, "TANH", "tanh", 0, {}, ConvertNothing},
      {34, "PAD", "pad", 22, {}, ConvertPad},
      {36, "GATHER", "gather_axis", 23, {4, 4}, ConvertGather},
      {37, "BATCH_TO_SPACE_ND", "batch_to_space_nd", 24, {}, ConvertBatchToSpace},
      {38, "SPACE_TO_BATCH_ND", "space_to_batch_nd", 25, {}, ConvertSpaceToBatch},
      {39, "TRANSPOSE", "transpose", 26, {}, ConvertTranspose},
      {40, "MEAN", "mean", 27, {1}, ConvertMean},
      {41, "SUB", "sub", 28, {1, 1}, ConvertActivationOnly},
      {42, "DIV", "div", 29, {1}, ConvertActivationOnly},
      {43, "SQUEEZE", "reshape", 0, {}, ConvertReshape},
      {44,
       "UNIDIRECTIONAL_SEQUENCE_LSTM",
       "unidirectional_sequence_lstm",
       71,
       {1, 4, 4, 1, 1, 1},
       ConvertLstm},
      {45, "STRIDED_SLICE", "strided_slice", 32, {4, 4, 4, 4, 4, 1}, ConvertStridedSlice},
      {47, "EXP", "exp", 0, {}, ConvertNothing},
      {49, "SPLIT", "split", 35, {4}, ConvertSplit},
      {50, "LOG_SOFTMAX", "log_softmax", 36, {}, ConvertNothing},
      {55, "MAXIMUM", "max", 0, {}, ConvertNothing},
      {53, "CAST", "cast", 37, {1, 1}, ConvertTypeChange},
      {54, "PRELU", "prelu", 0, {}, ConvertNothing},
      {56, "ARG_MAX", "arg_min_max", 40, {1}, ConvertArgMax},
      {57, "MINIMUM", "min", 0, {}, ConvertNothing},
      {58, "LESS", "less", 41, {}, ConvertNothing},
      {59, "NEG", "neg", 0, {}, ConvertNothing},
      {60, "PADV2", "pad", 0, {}, ConvertPad},
      {61, "GREATER", "greater", 44, {}, ConvertNothing},
      {62, "GREATER_EQUAL", "greater_equal", 45, {}, ConvertNothing},
      {63, "LESS_EQUAL", "less_equal", 46, {}, ConvertNothing},
      {65, "SLICE", "slice", 0, {}, ConvertSlice},
      {67, "TRANSPOSE_CONV", "transpose_conv", 49, {1, 4, 4, 1, 1}, ConvertTransposeConv},
      {70, "EXPAND_DIMS", "reshape", 0, {}, ConvertReshape},
      {71, "EQUAL", "equal", 53, {}, ConvertNothing},
      {72, "NOT_EQUAL", "not_equal", 54, {}, ConvertNothing},
      {73, "LOG", "log", 0, {}, ConvertNothing},
      {74, "SUM", "sum", 27, {1}, ConvertMean},
      {75, "SQRT", "sqrt", 0, {}, ConvertNothing},
      {76, "RSQRT", "rsqrt", 0, {}, ConvertNothing},
      {77, "SHAPE", "shape_of", 55, {1}, ConvertShape},
      {79, "ARG_MIN", "arg_min_max", 57, {1}, ConvertArgMin},
      {82, "REDUCE_MAX", "reduce_max", 27, {1}, ConvertMean},
      {83, "PACK", "pack", 59, {4, 4}, ConvertPack},
      {84, "LOGICAL_OR", "logical_or", 60, {}, ConvertNothing},
      {86, "LOGICAL_AND", "logical_and", 62, {}, ConvertNothing},
      {87, "LOGICAL_NOT", "logical_not", 63, {}, ConvertNothing},
      {88, "UNPACK", "unpack", 64, {4, 4}, ConvertUnpack},
      {89, "REDUCE_MIN", "reduce_min", 27, {1}, ConvertMean},
      {92, "SQUARE", "square", 0, {}, ConvertNothing},
      {93, "ZEROS_LIKE", "zeros_like", 67, {}, ConvertNothing},
      {94, "FILL", "fill", 68, {}, ConvertFill},
      {97, "RESIZE_NEAREST_NEIGHBOR", "resize_nearest_neighbor", 74, {1, 1}, ConvertResizeNearest},
      {98, "LEAKY_RELU", "leaky_relu", 75, {4}, ConvertLeakyRelu},
      {99, "SQUARED_DIFFERENCE", "squared_difference", 0, {}, ConvertNothing},
      {100, "MIRROR_PAD", "mirror_pad", 77, {1}, ConvertMirrorPad},
      {101, "ABS", "abs", 0, {}, ConvertNothing},
      {102, "SPLIT_V", "split", 79, {4}, ConvertSplitV},
      {104, "CEIL", "ceil", 0, {}, ConvertNothing},
      {105, "REVERSE_V2", "reverse", 81, {}, ConvertReverse},
      {111, "ELU", "elu", 0, {}, ConvertNothing},
      {114, "QUANTIZE", "quantize", 0, {}, ConvertTypeChange},
      {116, "ROUND", "round", 0, {}, ConvertNothing},
      {117, "HARD_SWISH", "hard_swish", 0, {}, ConvertNothing},
      {123, "SELECT_V2", "select_v2", 98, {}, ConvertNothing},
      {126, "BATCH_MATMUL", "tflite_batch_matmul", 101, {1, 1, 1}, ConvertBatchMatMul},
      {128, "CUMSUM", "cumsum", 102, {1, 1}, ConvertCumsum},
  };
  return table;
}

}  // namespace

const TfliteOpMapping* FindTfliteOp(int32_t code) {
  for (const TfliteOpMapping& m : Table()) {
    if (m.code == code) return &m;
  }
  return nullptr;
}

const TfliteOpMapping* FindTfliteOpFor(std::string_view op) {
  for (const TfliteOpMapping& m : Table()) {
    if (m.op == op) return &m;
  }
  return nullptr;
}

int64_t ResolveStridedAxis(int64_t dim, int64_t begin, int64_t end, int64_t stride, bool begin_all,
                           bool end_all, bool shrink, int64_t* start) {
  if (dim == 0) {
    *start = 0;
    return 0;
  }
  constexpr int64_t kLow = std::numeric_limits<int32_t>::lowest();
  constexpr int64_t kHigh = std::numeric_limits<int32_t>::max();
  auto clamp = [&](int64_t v) {
    if (v < 0) v += dim;
    return stride > 0 ? std::clamp<int64_t>(v, 0, dim) : std::clamp<int64_t>(v, -1, dim - 1);
  };
  *start = clamp(begin_all ? (stride > 0 ? kLow : kHigh) : begin);
  if (shrink) return 1;
  const int64_t stop = clamp(end_all ? (stride > 0 ? kHigh : kLow) : end);
  const int64_t span = stride > 0 ? stop - *start : *start - stop;
  const int64_t step = stride > 0 ? stride : -stride;
  return std::max<int64_t>(0, (span + step - 1) / step);
}

std::string TfliteOpLabel(int32_t code, const std::string& custom_code) {
  if (code == kCustom) return "CUSTOM \"" + custom_code + "\"";
  const std::string_view name = TfliteBuiltinName(code);
  return name.empty() ? "BUILTIN_" + std::to_string(code) : std::string(name);
}

std::string_view TfliteBuiltinName(int32_t code) {
  if (code < 0 || code >= static_cast<int32_t>(std::size(kBuiltinNames))) return {};
  return kBuiltinNames[code];
}

int32_t TfliteBuiltinCount() { return static_cast<int32_t>(std::size(kBuiltinNames)); }

}  // namespace memfold
