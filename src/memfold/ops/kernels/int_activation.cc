// int8 and int16 LOGISTIC and TANH, as TFLM's logistic.cc and tanh.cc run them
// (reference_integer_ops::Logistic / Tanh), with the input rescaling their Prepare computes
// (PrepareSigmoidInt / PrepareTanhInt: [multiplier, left shift, input radius, input zero point]);
// and RELU / RELU6 as activations.cc runs them (ReluQuantized requantises into the output's
// scale; Relu6Quantized clamps the input's own values); and int8 HARD_SWISH as reference_ops::
// HardSwish computes it in 16-bit fixed point. One pass in element order; O(elements).
#include <algorithm>
#include <cstdint>
#include <span>

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

namespace {

// gemmlowp's 16-bit SaturatingRoundingDoublingHighMul, and TFLite's SaturatingDoublingHighMul
// (the same without the rounding nudge, truncating toward zero).
int16_t RoundingHighMul16(int16_t a, int16_t b) {
  if (a == b && a == INT16_MIN) return INT16_MAX;
  const int32_t ab = int32_t{a} * int32_t{b};
  const int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
  return static_cast<int16_t>((ab + nudge) / (1 << 15));
}
int16_t HighMul16(int16_t a, int16_t b) {
  if (a == b && a == INT16_MIN) return INT16_MAX;
  return static_cast<int16_t>(int32_t{a} * int32_t{b} / (1 << 15));
}
int16_t SaturatingLeftShift16(int16_t v, int amount) {
  const int64_t r = int64_t{v} * (int64_t{1} << amount);
  return static_cast<int16_t>(std::min<int64_t>(std::max<int64_t>(r, INT16_MIN), INT16_MAX));
}

}  // namespace

// reference_ops::HardSwish<int8_t>: x on a 2^7 finer input scale, times the output multiplier
// (pre-shift output scale); the "relu-ish" factor min(max((x + 3) / 6, 0), 1) from x rescaled so
// that 3.0 is 2^15, saturating; their product (without rounding), the output shift, the zero
// point. Prepared: [input zero point, output zero point, output multiplier (16 bits), its
// exponent, relu-ish multiplier (16 bits), its exponent].
template <typename A>
void HardSwishI8(const KernelContext& ctx) {
  const std::span<const int32_t> p = ctx.prepared;
  const auto out_multiplier = static_cast<int16_t>(p[2]),
             reluish_multiplier = static_cast<int16_t>(p[4]);
  const int32_t out_exponent = p[3], reluish_exponent = p[5];
  In<A, int8_t> in{ctx.inputs[0].ptr<int8_t>()};
  Out<A, int8_t> out{OutputOf<A, int8_t>(ctx.outputs[0])};
  const int64_t n = ctx.outputs[0].elements();
  for (int64_t i = 0; i < n; ++i) {
    const auto x = static_cast<int16_t>(int32_t{in[i]} - p[0]);
    const auto hires = static_cast<int16_t>(x * (1 << 7));
    const int16_t preshift = RoundingHighMul16(hires, out_multiplier);
    int16_t reluish = hires;
    if (reluish_exponent > 0) reluish = SaturatingLeftShift16(reluish, reluish_exponent - 1);
    reluish = RoundingHighMul16(reluish, reluish_multiplier);
    if (reluish_exponent > 0) reluish = SaturatingLeftShift16(reluish, 1);
    if (reluish_exponent < 0)
      reluish = static_cast<int16_t>(RoundingDivideByPOT(reluish, -reluish_exponent));
    reluish = static_cast<int16_t>((int32_t{reluish} + (1 << 15)) >> 1);
    const int16_t product = HighMul16(reluish, preshift);
    int32_t y = RoundingDivideByPOT(product, -out_exponent) + p[1];
    y = std::min(std::max(y, int32_t{-128}), int32_t{127});
    out.Set(i, static_cast<int8_t>(y));
  }
}

MF_INSTANTIATE_KERNEL(HardSwishI8)
MF_INSTANTIATE_KERNEL_T(ReluInt, int8_t)
MF_INSTANTIATE_KERNEL_T(ReluInt, int16_t)
MF_INSTANTIATE_KERNEL_T(Relu6Int, int8_t)
MF_INSTANTIATE_KERNEL_T(Relu6Int, int16_t)
MF_INSTANTIATE_KERNEL(SigmoidI8)
MF_INSTANTIATE_KERNEL(TanhI8)
MF_INSTANTIATE_KERNEL(SigmoidI16)
MF_INSTANTIATE_KERNEL(TanhI16)

}  // namespace memfold
