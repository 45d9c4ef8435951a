// Shape and element-type inference, FLOP costs and scratch sizes of the float32 training ops:
// activation and softmax gradients, losses, reduce_sum, conv / depthwise / pool backprops,
// gather / scatter_add, batch and layer normalisation, dropout and the optimizer steps.
//
// Each inference function checks its inputs and attributes and reports in one line what is
// wrong and what the op expects (as infer.h does for the forward ops). Layouts are NHWC for
// images and [out, kh, kw, in] / [1, kh, kw, channels * multiplier] for filters, exactly as in
// the forward ops, so a gradient builder can copy the forward node's attributes.
//
// Complexity: O(rank) per call. Costs are O(rank); the scratch function is O(1).
// Preconditions: the registry has filled attribute defaults and checked attribute types
// (CheckAndFillAttrs), and every required input is present.
#pragma once

#include <cstdint>
#include <vector>

#include "memfold/ops/registry.h"

namespace memfold {

// (dy, y) -> dx of dy's shape; both f32 with equal shapes. relu_grad, tanh_grad, sigmoid_grad,
// dropout_grad (y = the mask). softmax_grad additionally needs rank >= 1.
Status InferUnaryGrad(const InferContext& ctx, std::vector<TensorType>* out);
Status InferSoftmaxGrad(const InferContext& ctx, std::vector<TensorType>* out);

// softmax_cross_entropy: logits [N, C] f32, labels [N] i32 -> loss [] f32.
Status InferSoftmaxCrossEntropy(const InferContext& ctx, std::vector<TensorType>* out);
// softmax_cross_entropy_grad: dloss [] (one element), logits [N, C], labels [N] -> [N, C].
Status InferSoftmaxCrossEntropyGrad(const InferContext& ctx, std::vector<TensorType>* out);
// mse_loss: pred, target (equal shapes, f32) -> loss [].
Status InferMseLoss(const InferContext& ctx, std::vector<TensorType>* out);
// mse_loss_grad: dloss [], pred, target -> dpred of pred's shape.
Status InferMseLossGrad(const InferContext& ctx, std::vector<TensorType>* out);
// reduce_sum: f32 x, attrs axes (may be negative, duplicates allowed), keepdims.
Status InferReduceSum(const InferContext& ctx, std::vector<TensorType>* out);

// conv2d_backprop_input: dy [N, OH, OW, OC], w [OC, KH, KW, IC], attr input_shape [N, H, W, IC]
// -> dx [N, H, W, IC]. Groups = 1 only; activation must be "none".
Status InferConv2DBackpropInput(const InferContext& ctx, std::vector<TensorType>* out);
// conv2d_backprop_filter: x [N, H, W, IC], dy [N, OH, OW, OC], attr filter_shape
// [OC, KH, KW, IC] -> dw of filter_shape. Groups = 1 only; activation must be "none".
Status InferConv2DBackpropFilter(const InferContext& ctx, std::vector<TensorType>* out);
// depthwise_conv2d_backprop_input: dy [N, OH, OW, C*M], w [1, KH, KW, C*M], attr input_shape
// [N, H, W, C] -> dx.
Status InferDepthwiseBackpropInput(const InferContext& ctx, std::vector<TensorType>* out);
// depthwise_conv2d_backprop_filter: x [N, H, W, C], dy [N, OH, OW, C*M], attr filter_shape
// [1, KH, KW, C*M] -> dw.
Status InferDepthwiseBackpropFilter(const InferContext& ctx, std::vector<TensorType>* out);
// max_pool2d_grad: dy (the pool's output shape), x [N, H, W, C] -> dx of x's shape.
Status InferMaxPool2DGrad(const InferContext& ctx, std::vector<TensorType>* out);
// avg_pool2d_grad: dy, attr input_shape [N, H, W, C] -> dx; activation must be "none".
Status InferAvgPool2DGrad(const InferContext& ctx, std::vector<TensorType>* out);

// gather: table [V, D] f32 (V >= 1), ids [...] i32 or i64 -> [..., D].
Status InferGather(const InferContext& ctx, std::vector<TensorType>* out);
// scatter_add: dy [..., D] f32, ids [...] i32 or i64, attr rows >= 1 -> [rows, D].
Status InferScatterAdd(const InferContext& ctx, std::vector<TensorType>* out);

// Batch normalisation over channel axis `axis` (attribute, default -1: channels last).
// batch_norm_train: x [..., C, ...], gamma, beta, running_mean, running_var [C]
// -> (y of x's shape, saved_mean [C], saved_invstd [C]).
Status InferBatchNormTrain(const InferContext& ctx, std::vector<TensorType>* out);
// batch_norm_apply: x [..., C, ...], gamma, beta, saved_mean, saved_invstd [C] -> y.
Status InferBatchNormApply(const InferContext& ctx, std::vector<TensorType>* out);
// batch_norm_grad: dy, x [..., C, ...], gamma, saved_mean, saved_invstd [C] -> (dx, dgamma, dbeta).
Status InferBatchNormGrad(const InferContext& ctx, std::vector<TensorType>* out);
// layer_norm: x [..., D], gamma, beta [D] -> (y, mean [rows], invstd [rows]), rows = numel / D.
Status InferLayerNorm(const InferContext& ctx, std::vector<TensorType>* out);
// layer_norm_grad: dy, x [..., D], gamma [D], mean, invstd [rows] -> (dx, dgamma, dbeta).
Status InferLayerNormGrad(const InferContext& ctx, std::vector<TensorType>* out);
// dropout: x f32, attr rate in [0, 1) -> (y, mask), both of x's shape.
Status InferDropout(const InferContext& ctx, std::vector<TensorType>* out);

// sgd_momentum: param, grad, velocity (equal shapes, f32) -> (param_out, velocity_out).
Status InferSgdMomentum(const InferContext& ctx, std::vector<TensorType>* out);
// adam: param, grad, m, v (equal shapes, f32), attr step >= 1 -> (param_out, m_out, v_out).
Status InferAdam(const InferContext& ctx, std::vector<TensorType>* out);

// Costs (a multiply-add is two FLOPs, as in cost.h).
// Conv and depthwise backprops: the forward conv's FLOPs (2 * dy elements * per-output MACs).
Cost ConvBackpropCost(const Graph& graph, const Node& node);
// Pool gradients: one FLOP per window element per dy element.
Cost PoolGradCost(const Graph& graph, const Node& node);
// scatter_add: one add per dy element; gather: data movement only.
Cost ScatterAddCost(const Graph& graph, const Node& node);
// reduce_sum, losses, norms, dropout, optimizers: a small constant number of FLOPs per
// element of the largest input.
Cost ReduceSumCost(const Graph& graph, const Node& node);  // 1 per input element
Cost LossCost(const Graph& graph, const Node& node);       // 4 per input element
Cost NormCost(const Graph& graph, const Node& node);       // 8 per input element
Cost OptimizerCost(const Graph& graph, const Node& node);  // 4 (sgd) or 12 (adam) per parameter

// The im2col workspace of conv2d_gemm and its two gradients (kernels/host_gemm.h
// ConvColumnScratchBytes): none for a pointwise convolution.
std::vector<int64_t> Conv2DGemmScratch(const Graph& graph, const Node& node);
std::vector<int64_t> Conv2DBackpropInputScratch(const Graph& graph, const Node& node);
std::vector<int64_t> Conv2DBackpropFilterScratch(const Graph& graph, const Node& node);

}  // namespace memfold
