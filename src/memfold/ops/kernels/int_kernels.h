// int8 CPU kernels, bit-exact with TensorFlow Lite Micro's reference kernels: activations int8
// (asymmetric, zero point in the value's quantisation), weights int8 (per-channel for conv and
// depthwise conv, per-tensor or per-channel for fully-connected), bias int32. Each kernel
// computes its requantisation multipliers from the Values' quantisation exactly as the TFLM
// Prepare does (same float/double precision, same rounding), then follows the loop order of
// the reference kernel named beside it, reading and writing tensors only through In/Out.
//
// Preconditions: shapes and attributes were checked by the op's inference function; every
// int8 tensor carries per-tensor quantisation (scale, zero point).
#pragma once

#include "memfold/ops/kernels/kernel_context.h"

namespace memfold {

// reference_integer_ops::ConvPerChannel: batch, out_y, out_x, out_channel; filter_y,
// filter_x, in_channel. Multiplier per output channel = double(in_scale) *
// double(filter_scale[c]) / double(out_scale) (PopulateConvolutionQuantizationParams).
template <typename A>
void Conv2DI8(const KernelContext& ctx);
// reference_integer_ops::DepthwiseConvPerChannel: batch, out_y, out_x, in_channel, m;
// filter_y, filter_x.
template <typename A>
void DepthwiseConv2DI8(const KernelContext& ctx);
// The 16x8 forms (int16 activations, symmetric; int8 filters; int64 or int32 bias and
// accumulator: TFLM's ConvPerChannel / DepthwiseConvPerChannel<AccumScalar>), same loops and
// per-channel multipliers.
template <typename A>
void Conv2DI16(const KernelContext& ctx);
template <typename A>
void DepthwiseConv2DI16(const KernelContext& ctx);
// reference_integer_ops::FullyConnected (per-tensor filter: multiplier =
// double(float(in_scale * filter_scale)) / double(out_scale)) or FullyConnectedPerChannel.
template <typename A>
void FullyConnectedI8(const KernelContext& ctx);
// The same on int16 input with int8 weights (16x8): int64 accumulators with an int64 or absent
// bias, int32 ones with an int32 bias (TFLM's requires_int32_accum).
template <typename A>
void FullyConnectedI16(const KernelContext& ctx);
// reference_integer_ops::AveragePool / MaxPool on int8 and int16 (T): batch, out_y, out_x,
// channel over the clipped window; the average rounds half away from zero with integer division.
template <typename A, typename T>
void AvgPool2DInt(const KernelContext& ctx);
template <typename A, typename T>
void MaxPool2DInt(const KernelContext& ctx);

// reference_integer_ops::Add / BroadcastAdd6DSlow and reference_ops::Sub /
// BroadcastQuantSubSlow (inputs rescaled to a common scale after a left shift of 20, or 15 for
// int16 outputs), reference_integer_ops::Mul / BroadcastMul4DSlow. T is int8_t or int16_t.
// Output in row-major order.
template <typename A, typename T>
void AddInt(const KernelContext& ctx);
template <typename A, typename T>
void SubInt(const KernelContext& ctx);
template <typename A, typename T>
void MulInt(const KernelContext& ctx);

// reference_ops::Softmax<int8_t, int8_t or int16_t> (gemmlowp fixed-point exp, Q5.26 scaled
// differences, Q12 accumulator): per row the max, then the sum of exps, then the outputs.
// The output type is the output value's dtype (i8: zero point -128, scale 1/256; i16: zero
// point -32768, scale 1/65536, as TFLM's Prepare requires).
template <typename A>
void SoftmaxI8(const KernelContext& ctx);
// reference_ops::SoftmaxInt16 (input and output zero points 0, output scale 1/32768): per row the
// max; exp of each difference from TFLM's 513-entry exp table (differences scaled to [-10, 0]);
// the sum's reciprocal from its 1 / (1 + x) table; the products rounded to Q0.15. Prepared by
// PrepareSoftmaxI16: [input multiplier, input left shift, exp table, reciprocal table].
inline constexpr size_t kSoftmaxI16LutSize = 513;
template <typename A>
void SoftmaxI16(const KernelContext& ctx);

// reference_integer_ops::Logistic and Tanh on int8 (gemmlowp fixed point, input rescaled to
// Q4.27 and saturated beyond its radius) and on int16 (the sigmoid table), with the rescaling
// of PrepareSigmoidInt / PrepareTanhInt.
template <typename A>
void SigmoidI8(const KernelContext& ctx);
template <typename A>
void TanhI8(const KernelContext& ctx);
template <typename A>
void SigmoidI16(const KernelContext& ctx);
template <typename A>
void TanhI16(const KernelContext& ctx);
// RELU (ReluQuantized: requantised to the output's scale, clamped at its zero point) and RELU6
// (Relu6Quantized: the input's values clamped to its quantised 0 and 6) on int8 and int16, with
// PrepareReluInt / PrepareRelu6Int.
template <typename A, typename T>
void ReluInt(const KernelContext& ctx);
template <typename A, typename T>
void Relu6Int(const KernelContext& ctx);
// reference_ops::HardSwish on int8, 16-bit fixed point, with PrepareHardSwishI8.
template <typename A>
void HardSwishI8(const KernelContext& ctx);
// reference_integer_ops::LeakyRelu (QuantizeLeakyRelu) on int8 and int16 (T), multipliers from
// PrepareLeakyReluInt.
template <typename A, typename T>
void LeakyReluInt(const KernelContext& ctx);
// ABS on int8 and int16 (elementwise.cc AbsEvalQuantized): |q - input zero point|, rescaled to
// the output scale (QuantizeMultiplier of float in_scale / out_scale) when the scales differ,
// plus the output zero point, clamped to T.
template <typename A, typename T>
void AbsInt(const KernelContext& ctx);
// RSQRT on int8 and int16 (elementwise.cc RsqrtEvalQuantized): 1 / sqrt(q - input zero point)
// by GetInvSqrtQuantizedMultiplierExp, rescaled by QuantizeMultiplier(1 / (sqrt(in_scale) *
// out_scale)) through a 2^20 intermediate, plus the output zero point, clamped to T. At the zero
// point the output is T's maximum, as TFLM's; below it (TFLM fails the invoke: "only defined for
// positive values") too.
template <typename A, typename T>
void RsqrtInt(const KernelContext& ctx);
// SQUARED_DIFFERENCE on int8 and int16 (squared_difference.cc): both inputs shifted left (7
// bits for int8, none for int16) and brought to twice the larger input scale, the difference
// squared and rescaled to the output (QuantizeMultiplier of (2 max scale)^2 / (2^(2 shift)
// out_scale)), broadcast as BroadcastBinaryFunction4DSlow.
template <typename A, typename T>
void SquaredDifferenceInt(const KernelContext& ctx);

}  // namespace memfold
