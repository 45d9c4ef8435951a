// float32 CPU kernels. Each follows the loop order and arithmetic of the TensorFlow Lite
// (Micro) reference kernel named beside it, so results match TFLM bit for bit and memory is
// visited in the order the safe-overlap models assume. All are templates over an access
// policy (see access.h), explicitly instantiated for `Direct` in their .cc files.
//
// Preconditions: shapes and attributes were checked by the op's inference function.
#pragma once

#include "memfold/ops/kernels/kernel_context.h"

namespace memfold {

// Element-wise unary (reference_ops::Relu, Relu6, Tanh, Logistic, Exp, Neg, HardSwish):
// one read then one write per element, increasing index.
template <typename A>
void ReluF32(const KernelContext& ctx);
template <typename A>
void Relu6F32(const KernelContext& ctx);
template <typename A>
void TanhF32(const KernelContext& ctx);
template <typename A>
void SigmoidF32(const KernelContext& ctx);
template <typename A>
void ExpF32(const KernelContext& ctx);
template <typename A>
void NegF32(const KernelContext& ctx);
template <typename A>
void HardSwishF32(const KernelContext& ctx);
template <typename A>
void SiluF32(const KernelContext& ctx);
template <typename A>
void GeluF32(const KernelContext& ctx);
// ONNX's Gelu(approximate="tanh"), Erf, Softplus (log(1 + exp(x)), without overflow) and Sign
// (0 and NaN kept).
template <typename A>
void GeluTanhF32(const KernelContext& ctx);
template <typename A>
void ErfF32(const KernelContext& ctx);
template <typename A>
void SoftplusF32(const KernelContext& ctx);
template <typename A>
void SignF32(const KernelContext& ctx);
// TFLM's elementwise.cc, floor.cc, ceil.cc, round.cc (halves to even) and leaky_relu.cc
// (x > 0 ? x : alpha * x), one element after another.
template <typename A>
void AbsF32(const KernelContext& ctx);
template <typename A>
void SqrtF32(const KernelContext& ctx);
template <typename A>
void RsqrtF32(const KernelContext& ctx);
template <typename A>
void SquareF32(const KernelContext& ctx);
template <typename A>
void LogF32(const KernelContext& ctx);
template <typename A>
void FloorF32(const KernelContext& ctx);
template <typename A>
void CeilF32(const KernelContext& ctx);
template <typename A>
void RoundF32(const KernelContext& ctx);
template <typename A>
void LeakyReluF32(const KernelContext& ctx);
// elu.cc: x < 0 ? expm1(x) : x.
template <typename A>
void EluF32(const KernelContext& ctx);
// prelu.cc: x >= 0 ? x : x * alpha, alpha (input 1) broadcast.
template <typename A>
void PreluF32(const KernelContext& ctx);
// log_softmax.cc over the last axis: x - max - log(sum(exp(x - max))).
template <typename A>
void LogSoftmaxF32(const KernelContext& ctx);
// reduce.cc: SUM, REDUCE_MAX, REDUCE_MIN over attribute "axes" (input in row-major order);
// max and min also on int8 and int16, on the raw values (TFLM requires input and output to share
// their quantisation).
template <typename A>
void SumF32(const KernelContext& ctx);
template <typename A, typename T>
void ReduceMax(const KernelContext& ctx);
template <typename A, typename T>
void ReduceMin(const KernelContext& ctx);
// arg_min_max.cc along "axis" ("max" 1 or 0), int32 or int64 indices.
template <typename A, typename T>
void ArgMinMax(const KernelContext& ctx);
// cast.cc (static_cast to the output's type), shape.cc and fill.cc.
template <typename A, typename T>
void Cast(const KernelContext& ctx);
template <typename A, typename T>
void ShapeOf(const KernelContext& ctx);
template <typename A, typename T>
void Fill(const KernelContext& ctx);
// squared_difference.cc: (a - b)^2, broadcasting.
template <typename A>
void SquaredDifferenceF32(const KernelContext& ctx);

// Broadcasting binary (reference_ops::Add / BroadcastAdd6DSlow and friends): output in
// row-major order, fused activation clamp.
template <typename A>
void AddF32(const KernelContext& ctx);
template <typename A>
void SubF32(const KernelContext& ctx);
template <typename A>
void MulF32(const KernelContext& ctx);
template <typename A>
void DivF32(const KernelContext& ctx);
// MAXIMUM / MINIMUM (maximum_minimum.cc): broadcasting, no activation; float32, and int8 / int16
// on the raw values.
template <typename A, typename T>
void Maximum(const KernelContext& ctx);
template <typename A, typename T>
void Minimum(const KernelContext& ctx);

// reference_ops::FullyConnected: for batch, for output channel: dot product over depth.
template <typename A>
void FullyConnectedF32(const KernelContext& ctx);

// reference_ops::Conv: batch, out_y, out_x, out_channel; filter_y, filter_x, in_channel.
template <typename A>
void Conv2DF32(const KernelContext& ctx);
// reference_ops::DepthwiseConv: batch, out_y, out_x, in_channel, multiplier; filter_y, filter_x.
template <typename A>
void DepthwiseConv2DF32(const KernelContext& ctx);
// reference_ops::AveragePool / MaxPool: batch, out_y, out_x, channel; clipped window.
template <typename A>
void AvgPool2DF32(const KernelContext& ctx);
template <typename A>
void MaxPool2DF32(const KernelContext& ctx);

// TFLM reduce.cc Mean: the 4-D keep-dims mean over H and W sums per (batch, channel);
// every other case accumulates row-major into the output, then divides.
template <typename A>
void MeanF32(const KernelContext& ctx);
// reference_ops::Softmax float: per row max, exp into the output, divide by the sum.
template <typename A>
void SoftmaxF32(const KernelContext& ctx);

// Data movement, element type agnostic (instantiated for 1, 2, 4 and 8 byte elements):
// reference Concatenation (outer, input, inner copy), Slice, Transpose and Pad all write the
// output in row-major order.
template <typename A, typename T>
void Concat(const KernelContext& ctx);
template <typename A, typename T>
void Slice(const KernelContext& ctx);
template <typename A, typename T>
void Transpose(const KernelContext& ctx);
// reference_ops::Reverse (REVERSE_V2): the input mirrored along every axis of 'axes'.
template <typename A, typename T>
void Reverse(const KernelContext& ctx);
template <typename A, typename T>
void Pad(const KernelContext& ctx);
template <typename A, typename T>
void BroadcastTo(const KernelContext& ctx);
// reference_ops::ResizeNearestNeighbor: for batch, out_y, out_x, the input pixel's channels
// (GetNearestNeighbor: floor of (out + 0.5 if half_pixel_centers) * scale, std::round when
// align_corners, clamped to the input).
template <typename A, typename T>
void ResizeNearest(const KernelContext& ctx);
// reference_ops::DepthToSpace (loop over the output) and SpaceToDepth (loop over the input).
template <typename A, typename T>
void DepthToSpace(const KernelContext& ctx);
template <typename A, typename T>
void SpaceToDepth(const KernelContext& ctx);
// reference_ops::StridedSlice with start, stride and count per axis resolved at import: the
// output in row-major order.
template <typename A, typename T>
void StridedSlice(const KernelContext& ctx);
// PackImpl (input by input), UnpackImpl (output by output), SplitImpl (outer block by block,
// every output's share in turn) along attribute "axis".
template <typename A, typename T>
void Pack(const KernelContext& ctx);
template <typename A, typename T>
void Unpack(const KernelContext& ctx);
template <typename A, typename T>
void Split(const KernelContext& ctx);

}  // namespace memfold
