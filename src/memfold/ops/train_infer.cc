#include "memfold/ops/train_infer.h"

#include <algorithm>
#include <string>

#include "memfold/ops/channel_axis.h"
#include "memfold/ops/cost.h"
#include "memfold/ops/infer.h"
#include "memfold/ops/kernels/host/host_gemm.h"
#include "memfold/ops/window.h"

namespace memfold {
namespace {

std::string Dims(const Shape& shape) { return "[" + ShapeString(shape) + "]"; }

std::string Quoted(const Value& v) { return "'" + v.name + "'"; }

Status RequireF32(const Value& v, const char* what) {
  if (v.dtype == DType::kF32) return Status::Ok();
  return Status::Error(std::string(what) + " " + Quoted(v) + " must be f32, is " +
                       std::string(DTypeName(v.dtype)));
}

Status RequireI32(const Value& v, const char* what) {
  if (v.dtype == DType::kI32) return Status::Ok();
  return Status::Error(std::string(what) + " " + Quoted(v) + " must be i32, is " +
                       std::string(DTypeName(v.dtype)));
}

// Row ids: int32, or int64 as PyTorch's indices are.
Status RequireIds(const Value& v) {
  if (v.dtype == DType::kI32 || v.dtype == DType::kI64) return Status::Ok();
  return Status::Error("ids " + Quoted(v) + " must be i32 or i64, is " +
                       std::string(DTypeName(v.dtype)));
}

Status RequireRank(const Value& v, size_t rank, const char* what) {
  if (v.shape.size() == rank) return Status::Ok();
  return Status::Error(std::string(what) + " " + Quoted(v) + " must have rank " +
                       std::to_string(rank) + ", has " + Dims(v.shape));
}

Status RequireShape(const Value& v, const Shape& shape, const char* what) {
  if (v.shape == shape) return Status::Ok();
  return Status::Error(std::string(what) + " " + Quoted(v) + " must have shape " + Dims(shape) +
                       ", has " + Dims(v.shape));
}

// A loss gradient's incoming dloss: a single f32 element (rank 0 preferred).
Status RequireScalar(const Value& v, const char* what) {
  MF_RETURN_IF_ERROR(RequireF32(v, what));
  if (v.elements() == 1 && v.shape.size() <= 1) return Status::Ok();
  return Status::Error(std::string(what) + " " + Quoted(v) + " must be a scalar, has " +
                       Dims(v.shape));
}

Status RequireNoActivation(const InferContext& ctx) {
  const std::string& act = ctx.node.attrs.Str("activation");
  if (act == "none") return Status::Ok();
  return Status::Error(ctx.node.op + " supports activation 'none' only, has '" + act +
                       "'; apply the activation's gradient as its own op first");
}

// A 4-value NHWC / filter shape attribute, all dimensions non-negative.
Result<Shape> ShapeAttr(const InferContext& ctx, const char* name) {
  const auto& dims = ctx.node.attrs.Ints(name);
  if (dims.size() != 4 || *std::min_element(dims.begin(), dims.end()) < 0) {
    return Status::Error("attribute '" + std::string(name) + "' needs 4 non-negative values, has " +
                         Dims(dims));
  }
  return Shape(dims);
}

// The forward window of a conv with input [N, H, W, *] and a filter of kh x kw, checked
// against the incoming gradient dy [N, OH, OW, OC].
Status CheckConvGeometry(const InferContext& ctx, const Shape& input, int64_t kh, int64_t kw,
                         const Value& dy, int64_t out_c) {
  MF_ASSIGN_OR_RETURN(Window2D win, ComputeWindow(ctx.node.attrs, input[1], input[2], kh, kw));
  const Shape expected{input[0], win.out_h, win.out_w, out_c};
  if (dy.shape != expected) {
    return Status::Error("gradient " + Quoted(dy) + " has shape " + Dims(dy.shape) +
                         " but the forward op with input " + Dims(input) + " and a " +
                         std::to_string(kh) + "x" + std::to_string(kw) + " window produces " +
                         Dims(expected));
  }
  return Status::Ok();
}

// Depthwise filter [1, KH, KW, C*M] for C input channels and the optional multiplier attr.
Status CheckDepthwiseFilter(const InferContext& ctx, const Shape& filter, int64_t in_c) {
  const int64_t out_c = filter[3];
  const int64_t multiplier = ctx.node.attrs.Int("multiplier");
  if (filter[0] != 1 || in_c == 0 || out_c % in_c != 0 ||
      (multiplier != 0 && out_c != in_c * multiplier)) {
    return Status::Error("depthwise filter " + Dims(filter) + " must be [1, kh, kw, " +
                         std::to_string(in_c) + " x multiplier]");
  }
  return Status::Ok();
}

// [N, H, W, C] pool geometry: dy must be the pool's output shape.
Status CheckPoolGeometry(const InferContext& ctx, const Shape& input, const Value& dy) {
  const auto& filter = ctx.node.attrs.Ints("filter");
  if (filter.size() != 2) return Status::Error("attribute 'filter' needs 2 values [h, w]");
  return CheckConvGeometry(ctx, input, filter[0], filter[1], dy, input[3]);
}

// Per-channel parameter vectors of a normalisation: [C] f32 each.
Status RequireVectors(const InferContext& ctx, size_t first, size_t last, int64_t length,
                      const char* what) {
  for (size_t k = first; k <= last; ++k) {
    MF_RETURN_IF_ERROR(RequireF32(ctx.in(k), what));
    MF_RETURN_IF_ERROR(RequireShape(ctx.in(k), {length}, what));
  }
  return Status::Ok();
}

Status RequireSameShapesF32(const InferContext& ctx, size_t count) {
  for (size_t k = 0; k < count; ++k) {
    MF_RETURN_IF_ERROR(RequireF32(ctx.in(k), "input"));
    if (k > 0) MF_RETURN_IF_ERROR(RequireShape(ctx.in(k), ctx.in(0).shape, "input"));
  }
  return Status::Ok();
}

int64_t Channels(const Shape& shape) { return shape.empty() ? 1 : shape.back(); }

// Checks a batch normalisation's float input x (input `x_index`) and its per-channel vectors
// (inputs first_vector..4) along the node's "axis" attribute; returns the channel count.
Result<int64_t> BatchNormChannels(const InferContext& ctx, size_t x_index, size_t first_vector) {
  const Value& x = ctx.in(x_index);
  MF_RETURN_IF_ERROR(RequireF32(x, "input"));
  const int64_t axis = ctx.node.attrs.Int("axis");
  if (ResolveAxis(x.shape, axis) < 0) {
    return Status::Error(ctx.node.op + " channel axis " + std::to_string(axis) +
                         " is outside an input of rank " + std::to_string(x.shape.size()));
  }
  const int64_t channels = LayoutOf(x.shape, axis).channels;
  MF_RETURN_IF_ERROR(RequireVectors(ctx, first_vector, 4, channels, "per-channel input"));
  return channels;
}

int64_t LargestInput(const Graph& graph, const Node& node) {
  int64_t largest = 0;
  for (ValueId in : node.inputs) {
    if (in != kNoValue) largest = std::max(largest, graph.value(in).elements());
  }
  return largest;
}

Cost PerElement(const Graph& graph, const Node& node, double flops_per_element) {
  return StepCost(graph, node, flops_per_element, LargestInput(graph, node), 1);
}

}  // namespace

Status InferUnaryGrad(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_RETURN_IF_ERROR(RequireSameShapesF32(ctx, 2));
  out->push_back({DType::kF32, ctx.in(0).shape});
  return Status::Ok();
}

Status InferSoftmaxGrad(const InferContext& ctx, std::vector<TensorType>* out) {
  if (ctx.in(0).shape.empty())
    return Status::Error("softmax_grad needs rank >= 1 (softmax runs over the last axis)");
  return InferUnaryGrad(ctx, out);
}

Status InferSoftmaxCrossEntropy(const InferContext& ctx, std::vector<TensorType>* out) {
  const Value& logits = ctx.in(0);
  const Value& labels = ctx.in(1);
  MF_RETURN_IF_ERROR(RequireF32(logits, "logits"));
  MF_RETURN_IF_ERROR(RequireRank(logits, 2, "logits [N, C]"));
  MF_RETURN_IF_ERROR(RequireI32(labels, "labels"));
  MF_RETURN_IF_ERROR(RequireShape(labels, {logits.shape[0]}, "labels"));
  if (logits.shape[1] < 1)
    return Status::Error("logits " + Quoted(logits) + " need at least one class, have " +
                         Dims(logits.shape));
  out->push_back({DType::kF32, {}});
  return Status::Ok();
}

Status InferSoftmaxCrossEntropyGrad(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_RETURN_IF_ERROR(RequireScalar(ctx.in(0), "dloss"));
  InferContext forward{ctx.node, {ctx.inputs[1], ctx.inputs[2]}};
  std::vector<TensorType> loss;
  MF_RETURN_IF_ERROR(InferSoftmaxCrossEntropy(forward, &loss));
  out->push_back({DType::kF32, ctx.in(1).shape});
  return Status::Ok();
}

Status InferMseLoss(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_RETURN_IF_ERROR(RequireF32(ctx.in(0), "prediction"));
  MF_RETURN_IF_ERROR(RequireF32(ctx.in(1), "target"));
  MF_RETURN_IF_ERROR(RequireShape(ctx.in(1), ctx.in(0).shape, "target"));
  out->push_back({DType::kF32, {}});
  return Status::Ok();
}

Status InferMseLossGrad(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_RETURN_IF_ERROR(RequireScalar(ctx.in(0), "dloss"));
  InferContext forward{ctx.node, {ctx.inputs[1], ctx.inputs[2]}};
  std::vector<TensorType> loss;
  MF_RETURN_IF_ERROR(InferMseLoss(forward, &loss));
  out->push_back({DType::kF32, ctx.in(1).shape});
  return Status::Ok();
}

Status InferReduceSum(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_RETURN_IF_ERROR(RequireF32(ctx.in(0), "input"));
  return InferMean(ctx, out);  // same axes / keepdims rules as mean
}

Status InferConv2DBackpropInput(const InferContext& ctx, std::vector<TensorType>* out) {
  const Value& dy = ctx.in(0);
  const Value& w = ctx.in(1);
  MF_RETURN_IF_ERROR(RequireF32(dy, "gradient"));
  MF_RETURN_IF_ERROR(RequireF32(w, "filter"));
  MF_RETURN_IF_ERROR(RequireRank(dy, 4, "gradient [N, OH, OW, OC]"));
  MF_RETURN_IF_ERROR(RequireRank(w, 4, "filter [OC, KH, KW, IC]"));
  MF_RETURN_IF_ERROR(RequireNoActivation(ctx));
  MF_ASSIGN_OR_RETURN(Shape input, ShapeAttr(ctx, "input_shape"));
  if (w.shape[3] != input[3]) {
    return Status::Error("filter " + Dims(w.shape) + " has " + std::to_string(w.shape[3]) +
                         " input channels but input_shape " + Dims(input) + " has " +
                         std::to_string(input[3]) + "; only groups = 1 is supported");
  }
  MF_RETURN_IF_ERROR(CheckConvGeometry(ctx, input, w.shape[1], w.shape[2], dy, w.shape[0]));
  out->push_back({DType::kF32, input});
  return Status::Ok();
}

Status InferConv2DBackpropFilter(const InferContext& ctx, std::vector<TensorType>* out) {
  const Value& x = ctx.in(0);
  const Value& dy = ctx.in(1);
  MF_RETURN_IF_ERROR(RequireF32(x, "input"));
  MF_RETURN_IF_ERROR(RequireF32(dy, "gradient"));
  MF_RETURN_IF_ERROR(RequireRank(x, 4, "input [N, H, W, IC]"));
  MF_RETURN_IF_ERROR(RequireRank(dy, 4, "gradient [N, OH, OW, OC]"));
  MF_RETURN_IF_ERROR(RequireNoActivation(ctx));
  MF_ASSIGN_OR_RETURN(Shape filter, ShapeAttr(ctx, "filter_shape"));
  if (filter[3] != x.shape[3]) {
    return Status::Error("filter_shape " + Dims(filter) + " has " + std::to_string(filter[3]) +
                         " input channels but input " + Quoted(x) + " " + Dims(x.shape) + " has " +
                         std::to_string(x.shape[3]) + "; only groups = 1 is supported");
  }
  MF_RETURN_IF_ERROR(CheckConvGeometry(ctx, x.shape, filter[1], filter[2], dy, filter[0]));
  out->push_back({DType::kF32, filter});
  return Status::Ok();
}

Status InferDepthwiseBackpropInput(const InferContext& ctx, std::vector<TensorType>* out) {
  const Value& dy = ctx.in(0);
  const Value& w = ctx.in(1);
  MF_RETURN_IF_ERROR(RequireF32(dy, "gradient"));
  MF_RETURN_IF_ERROR(RequireF32(w, "filter"));
  MF_RETURN_IF_ERROR(RequireRank(dy, 4, "gradient [N, OH, OW, C*M]"));
  MF_RETURN_IF_ERROR(RequireRank(w, 4, "filter [1, KH, KW, C*M]"));
  MF_RETURN_IF_ERROR(RequireNoActivation(ctx));
  MF_ASSIGN_OR_RETURN(Shape input, ShapeAttr(ctx, "input_shape"));
  MF_RETURN_IF_ERROR(CheckDepthwiseFilter(ctx, w.shape, input[3]));
  MF_RETURN_IF_ERROR(CheckConvGeometry(ctx, input, w.shape[1], w.shape[2], dy, w.shape[3]));
  out->push_back({DType::kF32, input});
  return Status::Ok();
}

Status InferDepthwiseBackpropFilter(const InferContext& ctx, std::vector<TensorType>* out) {
  const Value& x = ctx.in(0);
  const Value& dy = ctx.in(1);
  MF_RETURN_IF_ERROR(RequireF32(x, "input"));
  MF_RETURN_IF_ERROR(RequireF32(dy, "gradient"));
  MF_RETURN_IF_ERROR(RequireRank(x, 4, "input [N, H, W, C]"));
  MF_RETURN_IF_ERROR(RequireRank(dy, 4, "gradient [N, OH, OW, C*M]"));
  MF_RETURN_IF_ERROR(RequireNoActivation(ctx));
  MF_ASSIGN_OR_RETURN(Shape filter, ShapeAttr(ctx, "filter_shape"));
  MF_RETURN_IF_ERROR(CheckDepthwiseFilter(ctx, filter, x.shape[3]));
  MF_RETURN_IF_ERROR(CheckConvGeometry(ctx, x.shape, filter[1], filter[2], dy, filter[3]));
  out->push_back({DType::kF32, filter});
  return Status::Ok();
}

Status InferMaxPool2DGrad(const InferContext& ctx, std::vector<TensorType>* out) {
  const Value& dy = ctx.in(0);
  const Value& x = ctx.in(1);
  MF_RETURN_IF_ERROR(RequireF32(dy, "gradient"));
  MF_RETURN_IF_ERROR(RequireF32(x, "input"));
  MF_RETURN_IF_ERROR(RequireRank(x, 4, "input [N, H, W, C]"));
  MF_RETURN_IF_ERROR(ParseActivation(ctx.node.attrs).status());
  MF_RETURN_IF_ERROR(CheckPoolGeometry(ctx, x.shape, dy));
  out->push_back({DType::kF32, x.shape});
  return Status::Ok();
}

Status InferAvgPool2DGrad(const InferContext& ctx, std::vector<TensorType>* out) {
  const Value& dy = ctx.in(0);
  MF_RETURN_IF_ERROR(RequireF32(dy, "gradient"));
  MF_RETURN_IF_ERROR(RequireNoActivation(ctx));
  MF_ASSIGN_OR_RETURN(Shape input, ShapeAttr(ctx, "input_shape"));
  MF_RETURN_IF_ERROR(CheckPoolGeometry(ctx, input, dy));
  out->push_back({DType::kF32, input});
  return Status::Ok();
}

Status InferGather(const InferContext& ctx, std::vector<TensorType>* out) {
  const Value& table = ctx.in(0);
  const Value& ids = ctx.in(1);
  MF_RETURN_IF_ERROR(RequireF32(table, "table"));
  MF_RETURN_IF_ERROR(RequireRank(table, 2, "table [V, D]"));
  MF_RETURN_IF_ERROR(RequireIds(ids));
  if (table.shape[0] < 1)
    return Status::Error("table " + Quoted(table) + " needs at least one row, has " +
                         Dims(table.shape));
  Shape shape = ids.shape;
  shape.push_back(table.shape[1]);
  out->push_back({DType::kF32, shape});
  return Status::Ok();
}

Status InferScatterAdd(const InferContext& ctx, std::vector<TensorType>* out) {
  const Value& dy = ctx.in(0);
  const Value& ids = ctx.in(1);
  MF_RETURN_IF_ERROR(RequireF32(dy, "gradient"));
  MF_RETURN_IF_ERROR(RequireIds(ids));
  if (dy.shape.size() != ids.shape.size() + 1 ||
      !std::equal(ids.shape.begin(), ids.shape.end(), dy.shape.begin())) {
    return Status::Error("gradient " + Quoted(dy) + " " + Dims(dy.shape) +
                         " must be the ids' shape " + Dims(ids.shape) + " plus a row dimension");
  }
  const int64_t rows = ctx.node.attrs.Int("rows");
  if (rows < 1)
    return Status::Error("attribute 'rows' must be at least 1, is " + std::to_string(rows));
  out->push_back({DType::kF32, {rows, dy.shape.back()}});
  return Status::Ok();
}

Status InferBatchNormTrain(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_ASSIGN_OR_RETURN(const int64_t c, BatchNormChannels(ctx, 0, 1));
  out->push_back({DType::kF32, ctx.in(0).shape});
  out->push_back({DType::kF32, {c}});
  out->push_back({DType::kF32, {c}});
  return Status::Ok();
}

Status InferBatchNormApply(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_RETURN_IF_ERROR(BatchNormChannels(ctx, 0, 1).status());
  out->push_back({DType::kF32, ctx.in(0).shape});
  return Status::Ok();
}

Status InferBatchNormGrad(const InferContext& ctx, std::vector<TensorType>* out) {
  const Value& x = ctx.in(1);
  MF_RETURN_IF_ERROR(RequireF32(ctx.in(0), "gradient"));
  MF_RETURN_IF_ERROR(RequireShape(ctx.in(0), x.shape, "gradient"));
  MF_ASSIGN_OR_RETURN(const int64_t c, BatchNormChannels(ctx, 1, 2));
  out->push_back({DType::kF32, x.shape});
  out->push_back({DType::kF32, {c}});
  out->push_back({DType::kF32, {c}});
  return Status::Ok();
}

Status InferLayerNorm(const InferContext& ctx, std::vector<TensorType>* out) {
  const Value& x = ctx.in(0);
  MF_RETURN_IF_ERROR(RequireF32(x, "input"));
  if (x.shape.empty())
    return Status::Error("layer_norm needs input of rank >= 1 (normalises the last axis)");
  const int64_t d = Channels(x.shape);
  MF_RETURN_IF_ERROR(RequireVectors(ctx, 1, 2, d, "scale/offset"));
  const int64_t rows = d == 0 ? 0 : x.elements() / d;
  out->push_back({DType::kF32, x.shape});
  out->push_back({DType::kF32, {rows}});
  out->push_back({DType::kF32, {rows}});
  return Status::Ok();
}

Status InferLayerNormGrad(const InferContext& ctx, std::vector<TensorType>* out) {
  const Value& x = ctx.in(1);
  MF_RETURN_IF_ERROR(RequireF32(x, "input"));
  MF_RETURN_IF_ERROR(RequireF32(ctx.in(0), "gradient"));
  MF_RETURN_IF_ERROR(RequireShape(ctx.in(0), x.shape, "gradient"));
  if (x.shape.empty()) return Status::Error("layer_norm_grad needs input of rank >= 1");
  const int64_t d = Channels(x.shape);
  const int64_t rows = d == 0 ? 0 : x.elements() / d;
  MF_RETURN_IF_ERROR(RequireVectors(ctx, 2, 2, d, "scale"));
  MF_RETURN_IF_ERROR(RequireVectors(ctx, 3, 4, rows, "per-row statistic"));
  out->push_back({DType::kF32, x.shape});
  out->push_back({DType::kF32, {d}});
  out->push_back({DType::kF32, {d}});
  return Status::Ok();
}

Status InferDropout(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_RETURN_IF_ERROR(RequireF32(ctx.in(0), "input"));
  const double rate = ctx.node.attrs.Float("rate");
  if (!(rate >= 0.0 && rate < 1.0)) {
    return Status::Error("dropout rate must be in [0, 1), is " + std::to_string(rate));
  }
  out->push_back({DType::kF32, ctx.in(0).shape});
  out->push_back({DType::kF32, ctx.in(0).shape});
  return Status::Ok();
}

Status InferSgdMomentum(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_RETURN_IF_ERROR(RequireSameShapesF32(ctx, 3));
  out->push_back({DType::kF32, ctx.in(0).shape});
  out->push_back({DType::kF32, ctx.in(0).shape});
  return Status::Ok();
}

Status InferAdam(const InferContext& ctx, std::vector<TensorType>* out) {
  MF_RETURN_IF_ERROR(RequireSameShapesF32(ctx, 4));
  const int64_t step = ctx.node.attrs.Int("step");
  if (step < 1) return Status::Error("adam step counts from 1, is " + std::to_string(step));
  const double beta1 = ctx.node.attrs.Float("beta1"), beta2 = ctx.node.attrs.Float("beta2");
  if (!(beta1 >= 0.0 && beta1 < 1.0 && beta2 >= 0.0 && beta2 < 1.0)) {
    return Status::Error("adam beta1 and beta2 must be in [0, 1), are " + std::to_string(beta1) +
                         " and " + std::to_string(beta2));
  }
  for (int k = 0; k < 3; ++k) out->push_back({DType::kF32, ctx.in(0).shape});
  return Status::Ok();
}

Cost ConvBackpropCost(const Graph& graph, const Node& node) {
  // dy is input 0 of the *_backprop_input ops and input 1 of the *_backprop_filter ops.
  const bool filter_grad = node.op.ends_with("_filter");
  const Value& dy = graph.value(node.inputs[filter_grad ? 1 : 0]);
  const Shape& filter =
      filter_grad ? graph.value(node.outputs[0]).shape : graph.value(node.inputs[1]).shape;
  return StepCost(graph, node, 2.0, dy.elements(),
                  ConvMacsPerOutput(filter, node.op.starts_with("depthwise")));
}

Cost PoolGradCost(const Graph& graph, const Node& node) {
  const auto& filter = node.attrs.Ints("filter");
  return StepCost(graph, node, 1.0, graph.value(node.inputs[0]).elements(), filter[0] * filter[1]);
}

Cost ScatterAddCost(const Graph& graph, const Node& node) {
  return StepCost(graph, node, 1.0, graph.value(node.inputs[0]).elements(), 1);
}

Cost ReduceSumCost(const Graph& graph, const Node& node) { return PerElement(graph, node, 1.0); }
Cost LossCost(const Graph& graph, const Node& node) { return PerElement(graph, node, 4.0); }
Cost NormCost(const Graph& graph, const Node& node) { return PerElement(graph, node, 8.0); }
Cost OptimizerCost(const Graph& graph, const Node& node) {
  return PerElement(graph, node, node.op == "adam" ? 12.0 : 4.0);
}

namespace {

std::vector<int64_t> ConvColumnScratch(const Shape& x, const Shape& y, const Shape& filter) {
  const int64_t bytes = ConvColumnScratchBytes(x, y, filter);
  if (bytes == 0) return {};
  return {bytes};
}

}  // namespace

std::vector<int64_t> Conv2DGemmScratch(const Graph& graph, const Node& node) {
  return ConvColumnScratch(graph.value(node.inputs[0]).shape, graph.value(node.outputs[0]).shape,
                           graph.value(node.inputs[1]).shape);
}

std::vector<int64_t> Conv2DBackpropInputScratch(const Graph& graph, const Node& node) {
  return ConvColumnScratch(graph.value(node.outputs[0]).shape, graph.value(node.inputs[0]).shape,
                           graph.value(node.inputs[1]).shape);
}

std::vector<int64_t> Conv2DBackpropFilterScratch(const Graph& graph, const Node& node) {
  return ConvColumnScratch(graph.value(node.inputs[0]).shape, graph.value(node.inputs[1]).shape,
                           graph.value(node.outputs[0]).shape);
}

}  // namespace memfold
