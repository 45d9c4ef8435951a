// float32 element-wise unary and broadcasting binary kernels (see float_kernels.h).
#include <algorithm>
#include <cmath>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/float_kernels.h"
#include "memfold/ops/kernels/kernel_util.h"

namespace memfold {
namespace {

// Broadcasting binary op (the order of reference_ops BroadcastAdd6DSlow and its siblings) with the
// fused activation.
template <typename A, typename F>
void Binary(const KernelContext& ctx, F f) {
  const ActivationRange act = KernelActivation(ctx.attrs);
  In<A, float> a{ctx.inputs[0].ptr<float>()};
  In<A, float> b{ctx.inputs[1].ptr<float>()};
  Out<A, float> y{OutputOf<A, float>(ctx.outputs[0])};
  ForEachBroadcastIndex(ctx, [&](int64_t i, int64_t ia, int64_t ib) {
    y.Set(i, std::min(std::max(f(a[ia], b[ib]), act.min), act.max));
  });
}

}  // namespace

template <typename A>
void ReluF32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, [](float v) { return v < 0.0f ? 0.0f : v; });
}
template <typename A>
void Relu6F32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, [](float v) { return v > 6.0f ? 6.0f : (v < 0.0f ? 0.0f : v); });
}
template <typename A>
void TanhF32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, [](float v) { return std::tanh(v); });
}
template <typename A>
void SigmoidF32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, [](float v) { return TfliteLogistic(v); });
}
template <typename A>
void ExpF32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, [](float v) { return std::exp(v); });
}
template <typename A>
void NegF32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, [](float v) { return -v; });
}
template <typename A>
void HardSwishF32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, [](float v) { return v * std::min(6.0f, std::max(0.0f, v + 3.0f)) / 6.0f; });
}

template <typename A>
void SiluF32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, [](float v) { return v / (1.0f + std::exp(-v)); });
}

template <typename A>
void GeluF32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, [](float v) { return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f)); });
}

template <typename A>
void GeluTanhF32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, [](float v) {
    return 0.5f * v * (1.0f + std::tanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));
  });
}

template <typename A>
void ErfF32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, [](float v) { return std::erf(v); });
}

template <typename A>
void SoftplusF32(const KernelContext& ctx) {
  // log(1 + exp(v)) without overflow: exp of a non-positive number only.
  UnaryF32<A>(ctx, [](float v) {
    return v > 0.0f ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
  });
}

template <typename A>
void SignF32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, [](float v) { return v > 0.0f ? 1.0f : (v < 0.0f ? -1.0f : v); });
}

template <typename A>
void AbsF32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, [](float v) { return std::abs(v); });
}
template <typename A>
void SqrtF32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, [](float v) { return std::sqrt(v); });
}
template <typename A>
void RsqrtF32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, [](float v) { return 1.0f / std::sqrt(v); });
}
template <typename A>
void SquareF32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, [](float v) { return v * v; });
}
template <typename A>
void LogF32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, [](float v) { return std::log(v); });
}
template <typename A>
void FloorF32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, [](float v) { return std::floor(v); });
}
template <typename A>
void CeilF32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, [](float v) { return std::ceil(v); });
}
template <typename A>
void RoundF32(const KernelContext& ctx) {
  // TFLM's RoundToNearest: halves to even (tf.round), by floor and the parity of the floor.
  UnaryF32<A>(ctx, [](float v) {
    const float floor_value = std::floor(v);
    const float diff = v - floor_value;
    if (diff < 0.5f || (diff == 0.5f && static_cast<int64_t>(floor_value) % 2 == 0))
      return floor_value;
    return floor_value + 1.0f;
  });
}
template <typename A>
void LeakyReluF32(const KernelContext& ctx) {
  // reference_ops::LeakyRelu: alpha may be above 1 or negative, so no max().
  const auto alpha = static_cast<float>(ctx.attrs.Float("alpha"));
  UnaryF32<A>(ctx, [alpha](float v) { return v > 0.0f ? v : v * alpha; });
}

template <typename A>
void EluF32(const KernelContext& ctx) {
  UnaryF32<A>(ctx, [](float v) { return v < 0.0f ? std::expm1(v) : v; });
}

template <typename A>
void AddF32(const KernelContext& ctx) {
  Binary<A>(ctx, [](float a, float b) { return a + b; });
}
template <typename A>
void SubF32(const KernelContext& ctx) {
  Binary<A>(ctx, [](float a, float b) { return a - b; });
}
template <typename A>
void MulF32(const KernelContext& ctx) {
  Binary<A>(ctx, [](float a, float b) { return a * b; });
}
template <typename A>
void DivF32(const KernelContext& ctx) {
  Binary<A>(ctx, [](float a, float b) { return a / b; });
}
template <typename A>
void SquaredDifferenceF32(const KernelContext& ctx) {
  Binary<A>(ctx, [](float a, float b) {
    const float d = a - b;
    return d * d;
  });
}
template <typename A>
void PreluF32(const KernelContext& ctx) {
  Binary<A>(ctx, [](float x, float alpha) { return x >= 0.0f ? x : x * alpha; });
}
// maximum_minimum.cc's MaximumMinimumBroadcastSlow: no fused activation, raw values (int8 and
// int16 operands share the output's quantisation, so no rescaling).
template <typename A, typename T, typename F>
void RawBinary(const KernelContext& ctx, F f) {
  In<A, T> a{ctx.inputs[0].ptr<T>()};
  In<A, T> b{ctx.inputs[1].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  ForEachBroadcastIndex(ctx, [&](int64_t i, int64_t ia, int64_t ib) { y.Set(i, f(a[ia], b[ib])); });
}
template <typename A, typename T>
void Maximum(const KernelContext& ctx) {
  RawBinary<A, T>(ctx, [](T a, T b) { return a > b ? a : b; });
}
template <typename A, typename T>
void Minimum(const KernelContext& ctx) {
  RawBinary<A, T>(ctx, [](T a, T b) { return a < b ? a : b; });
}

MF_INSTANTIATE_KERNEL(ReluF32)
MF_INSTANTIATE_KERNEL(Relu6F32)
MF_INSTANTIATE_KERNEL(TanhF32)
MF_INSTANTIATE_KERNEL(SigmoidF32)
MF_INSTANTIATE_KERNEL(ExpF32)
MF_INSTANTIATE_KERNEL(NegF32)
MF_INSTANTIATE_KERNEL(HardSwishF32)
MF_INSTANTIATE_KERNEL(SiluF32)
MF_INSTANTIATE_KERNEL(GeluF32)
MF_INSTANTIATE_KERNEL(GeluTanhF32)
MF_INSTANTIATE_KERNEL(ErfF32)
MF_INSTANTIATE_KERNEL(SoftplusF32)
MF_INSTANTIATE_KERNEL(SignF32)
MF_INSTANTIATE_KERNEL(AbsF32)
MF_INSTANTIATE_KERNEL(SqrtF32)
MF_INSTANTIATE_KERNEL(RsqrtF32)
MF_INSTANTIATE_KERNEL(SquareF32)
MF_INSTANTIATE_KERNEL(LogF32)
MF_INSTANTIATE_KERNEL(FloorF32)
MF_INSTANTIATE_KERNEL(CeilF32)
MF_INSTANTIATE_KERNEL(RoundF32)
MF_INSTANTIATE_KERNEL(LeakyReluF32)
MF_INSTANTIATE_KERNEL(SquaredDifferenceF32)
MF_INSTANTIATE_KERNEL(EluF32)
MF_INSTANTIATE_KERNEL(PreluF32)
MF_INSTANTIATE_KERNEL(AddF32)
MF_INSTANTIATE_KERNEL(SubF32)
MF_INSTANTIATE_KERNEL(MulF32)
MF_INSTANTIATE_KERNEL(DivF32)
MF_INSTANTIATE_KERNEL_T(Maximum, float)
MF_INSTANTIATE_KERNEL_T(Maximum, int8_t)
MF_INSTANTIATE_KERNEL_T(Maximum, int16_t)
MF_INSTANTIATE_KERNEL_T(Minimum, float)
MF_INSTANTIATE_KERNEL_T(Minimum, int8_t)
MF_INSTANTIATE_KERNEL_T(Minimum, int16_t)

}  // namespace memfold
