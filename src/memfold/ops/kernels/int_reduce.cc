// Integer mean and sum (TFLM reduce_common.cc EvalIntegerMean and EvalSum, which always call
// reference_ops::QuantizedMeanOrSum in reduce.h, even when input and output share scale and zero
// point; older TFLite took a truncating reference_ops::Mean shortcut in that case).
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <span>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/convert_kernels.h"
#include "memfold/ops/kernels/quant_math.h"

namespace memfold {
namespace {

// The reduced axes as TFLM's ResolveAxis leaves them: negatives wrapped, duplicates dropped.
std::array<bool, kMaxRank> ReducedAxes(ShapeView in, std::span<const int64_t> axes) {
  const auto rank = static_cast<int64_t>(in.size());
  std::array<bool, kMaxRank> reduced{};
  for (int64_t a : axes) reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  return reduced;
}

// QuantizedMeanOrSum with compute_sum = false: 1/count folded into the multiplier (rounded
// down after a left shift of up to 32 bits).
void FoldCount(int64_t count, int32_t* multiplier, int* shift) {
  int count_shift = 63 - std::countl_zero(static_cast<uint64_t>(count));
  count_shift = std::min(count_shift, 32);
  count_shift = std::min(count_shift, 31 + *shift);
  count_shift = std::max(count_shift, 0);  // only reachable for scale ratios below 2^-31
  *multiplier = static_cast<int32_t>((static_cast<int64_t>(*multiplier) << count_shift) / count);
  *shift -= count_shift;
}

template <typename A, typename T>
void MeanOrSumQuantized(const KernelContext& ctx, bool compute_sum) {
  const TensorArg& in_value = ctx.inputs[0];
  const TensorArg& out_value = ctx.outputs[0];
  const ShapeView in = in_value.shape;
  const std::array<bool, kMaxRank> reduced = ReducedAxes(in, ctx.attrs.Ints("axes"));
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  Out<A, int32_t> sum{reinterpret_cast<int32_t*>(ctx.scratch[0])};
  const int64_t outputs = ctx.outputs[0].elements();

  // Reset output data and sums, interleaved as TFLM does.
  for (int64_t i = 0; i < outputs; ++i) {
    y.Set(i, T());
    sum.Set(i, 0);
  }
  // QuantizedMeanOrSum returns here when the input is empty, the output already zeroed.
  if (ctx.inputs[0].elements() == 0) return;

  // ReduceSumImpl: input in row-major order; the sum index is the row-major offset over the
  // dimensions that are kept.
  const size_t rank = in.size();
  RankArray sum_stride{};
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    if (reduced[d]) continue;
    sum_stride[d] = stride;
    stride *= in[d];
  }
  RankArray coord{};
  const int64_t n = ctx.inputs[0].elements();
  int64_t s = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t value = x[i];
    sum.Set(s, static_cast<int32_t>(static_cast<uint32_t>(sum[s]) + static_cast<uint32_t>(value)));
    for (size_t d = rank; d-- > 0;) {
      s += sum_stride[d];
      if (++coord[d] < in[d]) break;
      s -= sum_stride[d] * in[d];
      coord[d] = 0;
    }
  }

  int64_t count = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (reduced[d]) count *= in[d];
  }
  if (count == 0) return;

  int32_t multiplier = 0;
  int shift = 0;
  QuantizeMultiplier(static_cast<double>(Scale(in_value)) / static_cast<double>(Scale(out_value)),
                     &multiplier, &shift);
  if (!compute_sum) FoldCount(count, &multiplier, &shift);

  const int32_t in_zero_point = ZeroPoint(in_value);
  const int32_t out_zero_point = ZeroPoint(out_value);
  constexpr int32_t kMin = std::numeric_limits<T>::min();
  constexpr int32_t kMax = std::numeric_limits<T>::max();
  for (int64_t i = 0; i < outputs; ++i) {
    const auto shifted =
        static_cast<int32_t>(static_cast<int64_t>(sum[i]) - int64_t{in_zero_point} * count);
    int32_t value = MultiplyByQuantizedMultiplier(shifted, multiplier, shift) + out_zero_point;
    value = std::min(std::max(value, kMin), kMax);
    y.Set(i, static_cast<T>(value));
  }
}

}  // namespace

template <typename A, typename T>
void MeanQuantized(const KernelContext& ctx) {
  MeanOrSumQuantized<A, T>(ctx, false);
}
template <typename A, typename T>
void SumQuantized(const KernelContext& ctx) {
  MeanOrSumQuantized<A, T>(ctx, true);
}

MF_INSTANTIATE_KERNEL_T(SumQuantized, int8_t)
MF_INSTANTIATE_KERNEL_T(SumQuantized, int16_t)
MF_INSTANTIATE_KERNEL_T(MeanQuantized, int8_t)
MF_INSTANTIATE_KERNEL_T(MeanQuantized, int16_t)

}  // namespace memfold
