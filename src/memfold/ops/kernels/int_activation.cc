// int8 and int16 LOGISTIC and TANH, as TFLM's logistic.cc and tanh.cc run them
// (reference_integer_ops::Logistic / Tanh), with the input rescaling their Prepare computes
// (PrepareSigmoidInt / PrepareTanhInt: [multiplier, left shift, input radius, input zero point]);
// and RELU / RELU6 as activations.cc runs them (ReluQuantized requantises into the output's
// scale; Relu6Quantized clamps the input's own values). One pass in element order; O(elements).
#include <algorithm>
#include <cstdint>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/int_kernels.h"
#include "memfold/ops/kernels/quant_math.h"

namespace memfold {
namespace {

// int8: inputs beyond the radius saturate; the rest are rescaled to Q4.27, mapped by `f` to
// Q0.31 and rounded to the output's 8 (logistic) or 7 (tanh) fraction bits plus `offset`.
template <typename A, typename F>
void Int8Activation(const KernelContext& ctx, int fraction_bits, int32_t offset, F f) {
  const int32_t multiplier = ctx.prepared[0], shift = ctx.prepared[1];
  const int32_t radius = ctx.prepared[2], zero_point = ctx.prepared[3];
  In<A, int8_t> in{ctx.inputs[0].ptr<int8_t>()};
  Out<A, int8_t> out{OutputOf<A, int8_t>(ctx.outputs[0])};
  const int64_t n = ctx.outputs[0].elements();
  for (int64_t i = 0; i < n; ++i) {
    const int32_t x = int32_t{in[i]} - zero_point;
    int32_t y = 0;
    if (x <= -radius) {
      y = -128;
    } else if (x >= radius) {
      y = 127;
    } else {
      const int32_t q4 = MultiplyByQuantizedMultiplier(x, multiplier, shift);
      y = RoundingDivideByPOT(f(q4), 31 - fraction_bits) + offset;
      y = std::min(std::max(y, int32_t{-128}), int32_t{127});
    }
    out.Set(i, static_cast<int8_t>(y));
  }
}

template <typename A, typename F>
void Int16Activation(const KernelContext& ctx, F f) {
  const int32_t multiplier = ctx.prepared[0], shift = ctx.prepared[1];
  In<A, int16_t> in{ctx.inputs[0].ptr<int16_t>()};
  Out<A, int16_t> out{OutputOf<A, int16_t>(ctx.outputs[0])};
  const int64_t n = ctx.outputs[0].elements();
  for (int64_t i = 0; i < n; ++i) out.Set(i, f(in[i], multiplier, shift));
}

}  // namespace

template <typename A>
void SigmoidI8(const KernelContext& ctx) {
  Int8Activation<A>(ctx, 8, -128, [](int32_t q4) { return FixedLogistic(q4, 4); });
}
template <typename A>
void TanhI8(const KernelContext& ctx) {
  Int8Activation<A>(ctx, 7, 0, [](int32_t q4) { return FixedTanh(q4, 4); });
}
template <typename A>
void SigmoidI16(const KernelContext& ctx) {
  Int16Activation<A>(ctx, SigmoidInt16);
}
template <typename A>
void TanhI16(const KernelContext& ctx) {
  Int16Activation<A>(ctx, TanhInt16);
}

template <typename A, typename T>
void ReluInt(const KernelContext& ctx) {
  const int32_t multiplier = ctx.prepared[0], shift = ctx.prepared[1];
  const int32_t lo = ctx.prepared[2], hi = ctx.prepared[3];
  const int32_t in_zero = ctx.prepared[4], out_zero = ctx.prepared[5];
  In<A, T> in{ctx.inputs[0].ptr<T>()};
  Out<A, T> out{OutputOf<A, T>(ctx.outputs[0])};
  const int64_t n = ctx.outputs[0].elements();
  for (int64_t i = 0; i < n; ++i) {
    const int32_t v =
        out_zero + MultiplyByQuantizedMultiplier(int32_t{in[i]} - in_zero, multiplier, shift);
    out.Set(i, static_cast<T>(std::min(hi, std::max(lo, v))));
  }
}

template <typename A, typename T>
void Relu6Int(const KernelContext& ctx) {
  const auto zero = static_cast<T>(ctx.prepared[0]), six = static_cast<T>(ctx.prepared[1]);
  In<A, T> in{ctx.inputs[0].ptr<T>()};
  Out<A, T> out{OutputOf<A, T>(ctx.outputs[0])};
  const int64_t n = ctx.outputs[0].elements();
  for (int64_t i = 0; i < n; ++i) {
    const T v = in[i];
    out.Set(i, v > six ? six : (v < zero ? zero : v));
  }
}

MF_INSTANTIATE_KERNEL_T(ReluInt, int8_t)
MF_INSTANTIATE_KERNEL_T(ReluInt, int16_t)
MF_INSTANTIATE_KERNEL_T(Relu6Int, int8_t)
MF_INSTANTIATE_KERNEL_T(Relu6Int, int16_t)
MF_INSTANTIATE_KERNEL(SigmoidI8)
MF_INSTANTIATE_KERNEL(TanhI8)
MF_INSTANTIATE_KERNEL(SigmoidI16)
MF_INSTANTIATE_KERNEL(TanhI16)

}  // namespace memfold
