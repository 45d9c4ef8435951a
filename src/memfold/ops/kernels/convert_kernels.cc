#include "memfold/ops/kernels/convert_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/quant_math.h"

namespace memfold {
namespace {

// static_cast<int32_t>(float) as x86-64 executes it (cvttss2si): values outside the int32 range
// and NaN give INT32_MIN. TFLM's host build relies on that for infinities.
int32_t TruncateToInt32LikeX86(float value) {
  if (!(value >= -2147483648.0f && value < 2147483648.0f))
    return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(value);
}

template <typename A, typename Q>
void AffineQuantize(const KernelContext& ctx) {
  const float scale = Scale(ctx.outputs[0]);
  const int32_t zero_point = ZeroPoint(ctx.outputs[0]);
  constexpr int32_t kMin = std::numeric_limits<Q>::min();
  constexpr int32_t kMax = std::numeric_limits<Q>::max();
  In<A, float> x{ctx.inputs[0].ptr<float>()};
  Out<A, Q> y{OutputOf<A, Q>(ctx.outputs[0])};
  const int64_t n = ctx.outputs[0].elements();
  for (int64_t i = 0; i < n; ++i) {
    const float value = x[i];
    const int32_t unclamped =
        WrapAdd(TruncateToInt32LikeX86(std::round(value / scale)), zero_point);
    y.Set(i, static_cast<Q>(std::min(std::max(unclamped, kMin), kMax)));
  }
}

template <typename A, typename T, typename Q>
void RequantizeTo(const KernelContext& ctx) {
  const TensorArg& in = ctx.inputs[0];
  const TensorArg& out = ctx.outputs[0];
  int32_t multiplier = 0;
  int shift = 0;
  QuantizeMultiplier(static_cast<double>(Scale(in)) / static_cast<double>(Scale(out)), &multiplier,
                     &shift);
  const int32_t in_zero_point = ZeroPoint(in);
  const int32_t out_zero_point = ZeroPoint(out);
  constexpr int32_t kMin = std::numeric_limits<Q>::min();
  constexpr int32_t kMax = std::numeric_limits<Q>::max();
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  Out<A, Q> y{OutputOf<A, Q>(ctx.outputs[0])};
  const int64_t n = ctx.outputs[0].elements();
  // TFLM's fast path for int8 <-> uint8 at equal scale (a sign-bit flip) gives the same values as
  // the general formula, which is exact for a multiplier of one; one loop serves both.
  for (int64_t i = 0; i < n; ++i) {
    const int32_t centred = static_cast<int32_t>(static_cast<uint32_t>(static_cast<int32_t>(x[i])) -
                                                 static_cast<uint32_t>(in_zero_point));
    const int32_t value =
        WrapAdd(MultiplyByQuantizedMultiplier(centred, multiplier, shift), out_zero_point);
    y.Set(i, static_cast<Q>(std::max(std::min(value, kMax), kMin)));
  }
}

}  // namespace

template <typename A>
void QuantizeF32(const KernelContext& ctx) {
  switch (ctx.outputs[0].dtype) {
    case DType::kI8:
      AffineQuantize<A, int8_t>(ctx);
      break;
    case DType::kI16:
      AffineQuantize<A, int16_t>(ctx);
      break;
    default:
      break;  // TFLM's Prepare refuses other output types
  }
}

template <typename A, typename T>
void Requantize(const KernelContext& ctx) {
  switch (ctx.outputs[0].dtype) {
    case DType::kI8:
      RequantizeTo<A, T, int8_t>(ctx);
      break;
    case DType::kU8:
      RequantizeTo<A, T, uint8_t>(ctx);
      break;
    case DType::kI16:
      RequantizeTo<A, T, int16_t>(ctx);
      break;
    case DType::kI32:
      RequantizeTo<A, T, int32_t>(ctx);
      break;
    default:
      break;
  }
}

template <typename A, typename T>
void Dequantize(const KernelContext& ctx) {
  const float scale = Scale(ctx.inputs[0]);
  const int32_t zero_point = ZeroPoint(ctx.inputs[0]);
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  Out<A, float> y{OutputOf<A, float>(ctx.outputs[0])};
  const int64_t n = ctx.outputs[0].elements();
  for (int64_t i = 0; i < n; ++i) {
    const int32_t centred = static_cast<int32_t>(x[i]) - zero_point;
    y.Set(i, scale * static_cast<float>(centred));
  }
}

MF_INSTANTIATE_KERNEL(QuantizeF32)
MF_INSTANTIATE_KERNEL_T(Requantize, int8_t)
MF_INSTANTIATE_KERNEL_T(Requantize, uint8_t)
MF_INSTANTIATE_KERNEL_T(Requantize, int16_t)
MF_INSTANTIATE_KERNEL_T(Requantize, int32_t)
MF_INSTANTIATE_KERNEL_T(Dequantize, int8_t)
MF_INSTANTIATE_KERNEL_T(Dequantize, uint8_t)
MF_INSTANTIATE_KERNEL_T(Dequantize, int16_t)

}  // namespace memfold
