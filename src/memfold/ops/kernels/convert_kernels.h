// Type conversions and integer reductions, bit for bit as TensorFlow Lite Micro's reference
// kernels compute them. Each kernel is registered under the element type of its first input and
// picks its arithmetic from the output's type; all follow the loop order of the TFLM kernel named
// beside them (see access.h for why that matters) and are explicitly instantiated for `Direct`
// and `Traced`.
//
// Quantisation parameters are the per-tensor scale and zero point of the node's input and output
// values (absent parameters read as scale 1, zero point 0).
#pragma once

#include <cstdint>

#include "memfold/ops/kernels/kernel_context.h"

namespace memfold {

// quantize from float32 (reference_ops::AffineQuantize): q = round(x / scale) + zero_point with
// float division and rounding half away from zero, clamped to the output type (int8 or int16).
// One read then one write per element, increasing index. O(n).
template <typename A>
void QuantizeF32(const KernelContext& ctx);

// quantize between integer types (reference_ops::Requantize): the multiplier is
// QuantizeMultiplier(double(in_scale) / double(out_scale)); q = MultiplyByQuantizedMultiplier(
// x - in_zp) + out_zp, clamped to the output type. `T` is the input element type (int8, uint8,
// int16, int32); the output may be int8, uint8, int16 or int32 as TFLM allows. An int8 <-> uint8
// conversion of equal scale whose zero points differ by 128 flips the sign bit, as TFLM does.
// One read then one write per element, increasing index. O(n).
template <typename A, typename T>
void Requantize(const KernelContext& ctx);

// dequantize (reference_ops::Dequantize): y = float(scale) * float(x - zero_point) in float
// arithmetic. `T` is int8, uint8 or int16. One read then one write per element. O(n).
template <typename A, typename T>
void Dequantize(const KernelContext& ctx);

// mean of int8 / int16 (TFLM reduce_common.cc EvalIntegerMean -> reference_ops::
// QuantizedMeanOrSum, used even when input and output share scale and zero point). Scratch 0
// holds one int32 running sum per output element. Zero the output and the sums, walk the input in
// row-major order adding into the sums, then write each output once: (sum - count * input zero
// point) rescaled by QuantizeMultiplier(in_scale / out_scale) with 1/count folded into the
// multiplier (rounded, not truncated), plus the output zero point, clamped.
// O(input + output).
template <typename A, typename T>
void MeanQuantized(const KernelContext& ctx);
// sum of int8 / int16: the same with compute_sum = true (no 1/count in the multiplier).
template <typename A, typename T>
void SumQuantized(const KernelContext& ctx);

// Scratch of mean: TFLM requests output elements * 4 bytes for int8 and int16 inputs, nothing
// for float.
}  // namespace memfold
