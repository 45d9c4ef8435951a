// The kernels of batch_matmul_kernels.h: TFLite's BATCH_MATMUL on float32, int8 and int16.
// Freestanding.
#include <algorithm>
#include <cstdint>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/batch_matmul_kernels.h"
#include "memfold/ops/kernels/kernel_util.h"
#include "memfold/ops/kernels/quant_math.h"

namespace memfold {
namespace {

BatchMatMulGeometry GeometryOf(const KernelContext& ctx) {
  return BatchMatMulGeometry::Of(ctx.inputs[0].shape, ctx.inputs[1].shape,
                                 ctx.attrs.Int("adj_x") != 0, ctx.attrs.Int("adj_y") != 0);
}

// reference_ops::BatchMatMul<T, AccumT> with FullyConnectedParams: the RHS plays the filter
// (offset -rhs_zp), the LHS the input (offset -lhs_zp).
template <typename A, typename T, typename Accum>
void QuantizedBatchMatMul(const KernelContext& ctx) {
  const BatchMatMulGeometry g = GeometryOf(ctx);
  const Accum lhs_offset = -ZeroPoint(ctx.inputs[0]);
  const Accum rhs_offset = -ZeroPoint(ctx.inputs[1]);
  const int32_t out_offset = ZeroPoint(ctx.outputs[0]);
  const int32_t multiplier = ctx.prepared[0];
  const int shift = ctx.prepared[1];
  constexpr int32_t lo = -(int32_t{1} << (sizeof(T) * 8 - 1));
  constexpr int32_t hi = (int32_t{1} << (sizeof(T) * 8 - 1)) - 1;
  In<A, T> lhs{ctx.inputs[0].ptr<T>()};
  In<A, T> rhs{ctx.inputs[1].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  ForEachBatchMatMulOutput(g, [&](int64_t o, int64_t l, int64_t r) {
    Accum total = 0;
    for (int64_t k = 0; k < g.depth; ++k) {
      const Accum lv = lhs[l + k * g.lhs_depth_stride];
      const Accum rv = rhs[r + k * g.rhs_depth_stride];
      const Accum product = (rv + rhs_offset) * (lv + lhs_offset);
      // int32 sums wrap as on TFLM's targets instead of being undefined for hostile depths.
      if constexpr (sizeof(Accum) == 4) {
        total = static_cast<Accum>(static_cast<uint32_t>(total) + static_cast<uint32_t>(product));
      } else {
        total += product;
      }
    }
    int32_t scaled = MultiplyByQuantizedMultiplier(total, multiplier, shift);
    scaled += out_offset;
    y.Set(o, static_cast<T>(std::clamp(scaled, lo, hi)));
  });
}

}  // namespace

template <typename A>
void TfliteBatchMatMulF32(const KernelContext& ctx) {
  const BatchMatMulGeometry g = GeometryOf(ctx);
  In<A, float> lhs{ctx.inputs[0].ptr<float>()};
  In<A, float> rhs{ctx.inputs[1].ptr<float>()};
  Out<A, float> y{OutputOf<A, float>(ctx.outputs[0])};
  ForEachBatchMatMulOutput(g, [&](int64_t o, int64_t l, int64_t r) {
    float total = 0;
    for (int64_t k = 0; k < g.depth; ++k) {
      const float lv = lhs[l + k * g.lhs_depth_stride];
      const float rv = rhs[r + k * g.rhs_depth_stride];
      total += rv * lv;
    }
    y.Set(o, total);
  });
}

template <typename A>
void TfliteBatchMatMulI8(const KernelContext& ctx) {
  QuantizedBatchMatMul<A, int8_t, int32_t>(ctx);
}

template <typename A>
void TfliteBatchMatMulI16(const KernelContext& ctx) {
  QuantizedBatchMatMul<A, int16_t, int64_t>(ctx);
}

MF_INSTANTIATE_KERNEL(TfliteBatchMatMulF32)
MF_INSTANTIATE_KERNEL(TfliteBatchMatMulI8)
MF_INSTANTIATE_KERNEL(TfliteBatchMatMulI16)

}  // namespace memfold
