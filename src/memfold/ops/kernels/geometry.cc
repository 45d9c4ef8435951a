// The arithmetic kernels of geometry_kernels.h: RESIZE_BILINEAR, TRANSPOSE_CONV, CUMSUM and
// L2_NORMALIZATION, float and int8. Freestanding.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/geometry_kernels.h"
#include "memfold/ops/kernels/kernel_util.h"
#include "memfold/ops/kernels/quant_math.h"

namespace memfold {

template <typename A>
void ResizeBilinearF32(const KernelContext& ctx) {
  const ShapeView in_shape = ctx.inputs[0].shape, out_shape = ctx.outputs[0].shape;
  const Nhwc in = Nhwc::Of(in_shape), out = Nhwc::Of(out_shape);
  In<A, float> x{ctx.inputs[0].ptr<float>()};
  Out<A, float> y{OutputOf<A, float>(ctx.outputs[0])};
  ForEachBilinearPixel(
      in_shape, out_shape, ctx.attrs.Int("align_corners") != 0,
      ctx.attrs.Int("half_pixel_centers") != 0, false,
      [&](int64_t b, int32_t oy, int32_t ox, const BilinearTap& ty, const BilinearTap& tx) {
        // The weights exactly as TFLM writes them: (1 - (pos - lower)) and (pos - lower).
        const float dy = ty.position - static_cast<float>(ty.lower);
        const float dx = tx.position - static_cast<float>(tx.lower);
        for (int64_t c = 0; c < in.c; ++c) {
          const float value = x[in(b, ty.lower, tx.lower, c)] * (1 - dy) * (1 - dx) +
                              x[in(b, ty.upper, tx.lower, c)] * dy * (1 - dx) +
                              x[in(b, ty.lower, tx.upper, c)] * (1 - dy) * dx +
                              x[in(b, ty.upper, tx.upper, c)] * dy * dx + 0.0f;
          y.Set(out(b, oy, ox, c), value);
        }
      });
}

template <typename A>
void ResizeBilinearI8(const KernelContext& ctx) {
  const ShapeView in_shape = ctx.inputs[0].shape, out_shape = ctx.outputs[0].shape;
  const Nhwc in = Nhwc::Of(in_shape), out = Nhwc::Of(out_shape);
  In<A, int8_t> x{ctx.inputs[0].ptr<int8_t>()};
  Out<A, int8_t> y{OutputOf<A, int8_t>(ctx.outputs[0])};
  constexpr int64_t kOne = 1 << 10;
  ForEachBilinearPixel(
      in_shape, out_shape, ctx.attrs.Int("align_corners") != 0,
      ctx.attrs.Int("half_pixel_centers") != 0, true,
      [&](int64_t b, int32_t oy, int32_t ox, const BilinearTap& ty, const BilinearTap& tx) {
        const int64_t dy = ty.position_10 - kOne * ty.lower;
        const int64_t dx = tx.position_10 - kOne * tx.lower;
        for (int64_t c = 0; c < in.c; ++c) {
          const int64_t sum = int64_t{x[in(b, ty.lower, tx.lower, c)]} * (kOne - dy) * (kOne - dx) +
                              int64_t{x[in(b, ty.upper, tx.lower, c)]} * dy * (kOne - dx) +
                              int64_t{x[in(b, ty.lower, tx.upper, c)]} * (kOne - dy) * dx +
                              int64_t{x[in(b, ty.upper, tx.upper, c)]} * dy * dx;
          // TFLM's default (double-rounding) build: half away from zero, then truncation.
          const int64_t round = sum > 0 ? (int64_t{1} << 19) : -(int64_t{1} << 19);
          y.Set(out(b, oy, ox, c), static_cast<int8_t>((sum + round) / (int64_t{1} << 20)));
        }
      });
}

MF_INSTANTIATE_KERNEL(ResizeBilinearF32)
MF_INSTANTIATE_KERNEL(ResizeBilinearI8)

}  // namespace memfold
