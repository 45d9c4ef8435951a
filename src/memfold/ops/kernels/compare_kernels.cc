// Comparison, logical, select and fill kernels (see compare_kernels.h).
#include "memfold/ops/kernels/compare_kernels.h"

#include <array>
#include <cstdint>
#include <span>
#include <type_traits>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/kernel_util.h"
#include "memfold/ops/kernels/quant_math.h"

namespace memfold {
namespace {

// out = f(a, b) as a boolean byte, inputs 0 and 1 broadcast. int8 operands are first brought
// to a common scale as ComparisonWithScaling does: (x - zero point) << 8 times the input's
// multiplier (the prepared [multiplier, shift] of each input, then their offsets).
template <typename A, typename T, typename F>
void BooleanOf(const KernelContext& ctx, F f) {
  In<A, T> a{ctx.inputs[0].ptr<T>()};
  In<A, T> b{ctx.inputs[1].ptr<T>()};
  Out<A, uint8_t> y{OutputOf<A, uint8_t>(ctx.outputs[0])};
  if constexpr (std::is_same_v<T, int8_t>) {
    const std::span<const int32_t> p = ctx.prepared;
    auto scaled = [&](int8_t v, size_t k) {
      const int32_t shifted = (p[4 + k] + int32_t{v}) * (1 << 8);
      return MultiplyByQuantizedMultiplierSmallerThanOneExp(shifted, p[2 * k], p[2 * k + 1]);
    };
    ForEachBroadcastIndex(ctx, [&](int64_t i, int64_t ia, int64_t ib) {
      y.Set(i, static_cast<uint8_t>(f(scaled(a[ia], 0), scaled(b[ib], 1)) ? 1 : 0));
    });
  } else {
    ForEachBroadcastIndex(ctx, [&](int64_t i, int64_t ia, int64_t ib) {
      y.Set(i, static_cast<uint8_t>(f(a[ia], b[ib]) ? 1 : 0));
    });
  }
}

}  // namespace

template <typename A, typename T>
void Equal(const KernelContext& ctx) {
  BooleanOf<A, T>(ctx, [](auto a, auto b) { return a == b; });
}
template <typename A, typename T>
void NotEqual(const KernelContext& ctx) {
  BooleanOf<A, T>(ctx, [](auto a, auto b) { return a != b; });
}
template <typename A, typename T>
void Less(const KernelContext& ctx) {
  BooleanOf<A, T>(ctx, [](auto a, auto b) { return a < b; });
}
template <typename A, typename T>
void LessEqual(const KernelContext& ctx) {
  BooleanOf<A, T>(ctx, [](auto a, auto b) { return a <= b; });
}
template <typename A, typename T>
void Greater(const KernelContext& ctx) {
  BooleanOf<A, T>(ctx, [](auto a, auto b) { return a > b; });
}
template <typename A, typename T>
void GreaterEqual(const KernelContext& ctx) {
  BooleanOf<A, T>(ctx, [](auto a, auto b) { return a >= b; });
}
template <typename A>
void LogicalAnd(const KernelContext& ctx) {
  BooleanOf<A, uint8_t>(ctx, [](uint8_t a, uint8_t b) { return a != 0 && b != 0; });
}
template <typename A>
void LogicalOr(const KernelContext& ctx) {
  BooleanOf<A, uint8_t>(ctx, [](uint8_t a, uint8_t b) { return a != 0 || b != 0; });
}
template <typename A>
void LogicalNot(const KernelContext& ctx) {
  In<A, uint8_t> x{ctx.inputs[0].ptr<uint8_t>()};
  Out<A, uint8_t> y{OutputOf<A, uint8_t>(ctx.outputs[0])};
  const int64_t n = ctx.outputs[0].elements();
  for (int64_t i = 0; i < n; ++i) y.Set(i, static_cast<uint8_t>(x[i] == 0 ? 1 : 0));
}

namespace {

template <typename A, typename T>
void SelectOf(const KernelContext& ctx) {
  In<A, uint8_t> cond{ctx.inputs[0].ptr<uint8_t>()};
  In<A, T> x{ctx.inputs[1].ptr<T>()};
  In<A, T> y{ctx.inputs[2].ptr<T>()};
  Out<A, T> out{OutputOf<A, T>(ctx.outputs[0])};
  ForEachBroadcast<3>(ctx, {0, 1, 2}, [&](int64_t i, const std::array<int64_t, 3>& at) {
    out.Set(i, cond[at[0]] != 0 ? x[at[1]] : y[at[2]]);
  });
}

}  // namespace

template <typename A>
void SelectV2(const KernelContext& ctx) {
  // The registry finds kernels by input 0's type, here always the boolean condition.
  VisitElementType(ctx.inputs[1].dtype, [&](auto sample) { SelectOf<A, decltype(sample)>(ctx); });
}

template <typename A, typename T>
void ZerosLike(const KernelContext& ctx) {
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  const int64_t n = ctx.outputs[0].elements();
  for (int64_t i = 0; i < n; ++i) y.Set(i, T{0});
}

#define MF_INSTANTIATE_COMPARE(T)          \
  MF_INSTANTIATE_KERNEL_T(Equal, T)        \
  MF_INSTANTIATE_KERNEL_T(NotEqual, T)     \
  MF_INSTANTIATE_KERNEL_T(Less, T)         \
  MF_INSTANTIATE_KERNEL_T(LessEqual, T)    \
  MF_INSTANTIATE_KERNEL_T(Greater, T)      \
  MF_INSTANTIATE_KERNEL_T(GreaterEqual, T) \
  MF_INSTANTIATE_KERNEL_T(ZerosLike, T)
MF_INSTANTIATE_COMPARE(float)
MF_INSTANTIATE_COMPARE(int8_t)
MF_INSTANTIATE_COMPARE(uint8_t)
MF_INSTANTIATE_COMPARE(int16_t)
MF_INSTANTIATE_COMPARE(int32_t)
MF_INSTANTIATE_COMPARE(int64_t)
#undef MF_INSTANTIATE_COMPARE
MF_INSTANTIATE_KERNEL(LogicalAnd)
MF_INSTANTIATE_KERNEL(LogicalOr)
MF_INSTANTIATE_KERNEL(LogicalNot)
MF_INSTANTIATE_KERNEL(SelectV2)

}  // namespace memfold
