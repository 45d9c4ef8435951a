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

template <typename A>
void TransposeConvF32(const KernelContext& ctx) {
  const ShapeView in = ctx.inputs[0].shape, filter = ctx.inputs[1].shape;
  const ShapeView out = ctx.outputs[0].shape;
  const TransposeConvGeometry g = TransposeConvGeometryOf(ctx.attrs, filter, out);
  const ActivationRange act = KernelActivation(ctx.attrs);
  In<A, float> x{ctx.inputs[0].ptr<float>()}, w{ctx.inputs[1].ptr<float>()};
  const bool has_bias = HasBias(ctx);
  In<A, float> bias = BiasInput<A, float>(ctx);
  Out<A, float> y{OutputOf<A, float>(ctx.outputs[0])};
  const int64_t n = ctx.outputs[0].elements(), out_c = out[3];
  for (int64_t i = 0; i < n; ++i) y.Set(i, 0.0f);
  ForEachTransposeConvTap(in, filter, out, g, [&](int64_t xi, int64_t wi, int64_t yi) {
    y.Set(yi, y[yi] + x[xi] * w[wi]);
  });
  for (int64_t i = 0; i < n; ++i) {
    float acc = y[i];
    if (has_bias) acc += bias[i % out_c];
    y.Set(i, std::min(std::max(acc, act.min), act.max));
  }
}

template <typename A>
void TransposeConvI8(const KernelContext& ctx) {
  const ShapeView in = ctx.inputs[0].shape, filter = ctx.inputs[1].shape;
  const ShapeView out = ctx.outputs[0].shape;
  const TransposeConvGeometry g = TransposeConvGeometryOf(ctx.attrs, filter, out);
  const int32_t input_offset = -ZeroPoint(ctx.inputs[0]);
  const int32_t output_offset = ZeroPoint(ctx.outputs[0]);
  In<A, int8_t> x{ctx.inputs[0].ptr<int8_t>()}, w{ctx.inputs[1].ptr<int8_t>()};
  const bool has_bias = HasBias(ctx);
  In<A, int32_t> bias = BiasInput<A, int32_t>(ctx);
  Out<A, int8_t> y{OutputOf<A, int8_t>(ctx.outputs[0])};
  Out<A, int32_t> acc{reinterpret_cast<int32_t*>(ctx.scratch[0])};
  const int64_t n = ctx.outputs[0].elements(), out_c = out[3];
  // Sums wrap as TFLM's int32 arithmetic does on its targets (no undefined behaviour for a
  // hostile model; real models never come near the limit).
  auto wrapping_add = [](int32_t a, int32_t b) {
    return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
  };
  for (int64_t i = 0; i < n; ++i) acc.Set(i, 0);
  ForEachTransposeConvTap(in, filter, out, g, [&](int64_t xi, int64_t wi, int64_t yi) {
    acc.Set(yi, wrapping_add(acc[yi], (int32_t{x[xi]} + input_offset) * int32_t{w[wi]}));
  });
  for (int64_t i = 0; i < n; ++i) {
    const auto c = static_cast<size_t>(i % out_c);
    int32_t v = acc[i];
    if (has_bias) v = wrapping_add(v, bias[static_cast<int64_t>(c)]);
    v = MultiplyByQuantizedMultiplier(v, ctx.prepared[c],
                                      ctx.prepared[static_cast<size_t>(out_c) + c]);
    v = wrapping_add(v, output_offset);
    y.Set(i, static_cast<int8_t>(std::min<int32_t>(std::max<int32_t>(v, -128), 127)));
  }
}

// reference_integer_ops::TransposeConv on int16 input and int8 filter (16x8): int64 sums of the
// products (the input's zero point is 0) in scratch, then an int64 bias (TFLM converts an int16
// bias to int64; an int32 one is read as int32), requantised per channel with no output offset
// and clamped to the output range.
template <typename A>
void TransposeConvI16(const KernelContext& ctx) {
  const ShapeView in = ctx.inputs[0].shape, filter = ctx.inputs[1].shape;
  const ShapeView out = ctx.outputs[0].shape;
  const TransposeConvGeometry g = TransposeConvGeometryOf(ctx.attrs, filter, out);
  In<A, int16_t> x{ctx.inputs[0].ptr<int16_t>()};
  In<A, int8_t> w{ctx.inputs[1].ptr<int8_t>()};
  Out<A, int16_t> y{OutputOf<A, int16_t>(ctx.outputs[0])};
  Out<A, int64_t> acc{reinterpret_cast<int64_t*>(ctx.scratch[0])};
  const QuantRange range = OutputRange(ctx);
  const int64_t n = ctx.outputs[0].elements(), out_c = out[3];
  for (int64_t i = 0; i < n; ++i) acc.Set(i, 0);
  ForEachTransposeConvTap(in, filter, out, g, [&](int64_t xi, int64_t wi, int64_t yi) {
    acc.Set(yi, acc[yi] + int64_t{x[xi]} * int64_t{w[wi]});
  });
  auto bias = [&](int64_t c) -> int64_t {
    switch (HasBias(ctx) ? ctx.inputs[2].dtype : DType::kF32) {
      case DType::kI64:
        return BiasInput<A, int64_t>(ctx)[c];
      case DType::kI32:
        return BiasInput<A, int32_t>(ctx)[c];
      case DType::kI16:
        return BiasInput<A, int16_t>(ctx)[c];
      default:
        return 0;
    }
  };
  for (int64_t i = 0; i < n; ++i) {
    const auto c = static_cast<size_t>(i % out_c);
    const int32_t v =
        MultiplyByQuantizedMultiplier(acc[i] + bias(static_cast<int64_t>(c)), ctx.prepared[c],
                                      ctx.prepared[static_cast<size_t>(out_c) + c]);
    y.Set(i, static_cast<int16_t>(std::clamp(v, range.min, range.max)));
  }
}

template <typename A>
void CumsumF32(const KernelContext& ctx) {
  const bool exclusive = ctx.attrs.Int("exclusive") != 0;
  In<A, float> x{ctx.inputs[0].ptr<float>()};
  Out<A, float> y{OutputOf<A, float>(ctx.outputs[0])};
  float sum = 0;
  ForEachCumsumStep(ctx.inputs[0].shape, ctx.attrs.Int("axis"), ctx.attrs.Int("reverse") != 0,
                    [&](int64_t i, bool first) {
                      if (first) sum = 0;
                      if (exclusive) {
                        y.Set(i, sum);
                        sum += x[i];
                      } else {
                        sum += x[i];
                        y.Set(i, sum);
                      }
                    });
}

namespace {

// TFLM's quantised CumSum shifts its inputs left by 20 bits (kCumSumIntegerShift).
constexpr int kCumsumLeftShift = 20;

}  // namespace

template <typename A>
void CumsumI8(const KernelContext& ctx) {
  const bool exclusive = ctx.attrs.Int("exclusive") != 0;
  const int32_t input_offset = -ZeroPoint(ctx.inputs[0]);
  const int32_t output_offset = ZeroPoint(ctx.outputs[0]);
  const int32_t in_multiplier = ctx.prepared[0], out_multiplier = ctx.prepared[2];
  const int in_shift = ctx.prepared[1], out_shift = ctx.prepared[3];
  auto scaled = [&](int32_t value) {
    return MultiplyByQuantizedMultiplierSmallerThanOneExp(value * (1 << kCumsumLeftShift),
                                                          in_multiplier, in_shift);
  };
  In<A, int8_t> x{ctx.inputs[0].ptr<int8_t>()};
  Out<A, int8_t> y{OutputOf<A, int8_t>(ctx.outputs[0])};
  auto emit = [&](int64_t i, int32_t sum) {
    const int32_t raw =
        MultiplyByQuantizedMultiplierSmallerThanOneExp(sum, out_multiplier, out_shift);
    y.Set(i, static_cast<int8_t>(std::clamp<int32_t>(WrapAdd(raw, output_offset), -128, 127)));
  };
  // Each run starts from the rescaled input offset, as TFLM's accumulator does.
  int32_t sum = 0;
  ForEachCumsumStep(ctx.inputs[0].shape, ctx.attrs.Int("axis"), ctx.attrs.Int("reverse") != 0,
                    [&](int64_t i, bool first) {
                      if (first) sum = scaled(input_offset);
                      if (exclusive) {
                        emit(i, sum);
                        sum = WrapAdd(sum, scaled(input_offset + x[i]));
                      } else {
                        sum = WrapAdd(sum, scaled(input_offset + x[i]));
                        emit(i, sum);
                      }
                    });
}

namespace {

// The rows of the last axis: [rows, depth].
struct Rows {
  int64_t rows, depth;
  static Rows Of(const TensorArg& t) {
    const int64_t depth = t.shape.empty() ? 1 : t.shape.back();
    return {depth == 0 ? 0 : t.elements() / depth, depth};
  }
};

}  // namespace

template <typename A>
void L2NormalizationF32(const KernelContext& ctx) {
  const Rows r = Rows::Of(ctx.inputs[0]);
  In<A, float> x{ctx.inputs[0].ptr<float>()};
  Out<A, float> y{OutputOf<A, float>(ctx.outputs[0])};
  constexpr float kEpsilon = 1e-6f;
  for (int64_t i = 0; i < r.rows; ++i) {
    float squared = 0;
    for (int64_t c = 0; c < r.depth; ++c) {
      const float v = x[r.depth * i + c];
      squared += v * v;
    }
    const float norm = std::max(std::sqrt(squared), kEpsilon);
    for (int64_t c = 0; c < r.depth; ++c) y.Set(r.depth * i + c, x[r.depth * i + c] / norm);
  }
}

template <typename A>
void L2NormalizationI8(const KernelContext& ctx) {
  const Rows r = Rows::Of(ctx.inputs[0]);
  const int32_t zero_point = ZeroPoint(ctx.inputs[0]);
  In<A, int8_t> x{ctx.inputs[0].ptr<int8_t>()};
  Out<A, int8_t> y{OutputOf<A, int8_t>(ctx.outputs[0])};
  constexpr int kOutputScale = 7;  // outputs in 1/128
  constexpr int kReverseShift = -1;
  for (int64_t i = 0; i < r.rows; ++i) {
    int32_t squared = 0;
    for (int64_t c = 0; c < r.depth; ++c) {
      const int32_t v = x[r.depth * i + c] - zero_point;
      squared = WrapAdd(squared, v * v);  // safe for 2^16 elements; wraps beyond, as TFLM
    }
    int32_t multiplier = 0;
    int shift = 0;
    GetInvSqrtQuantizedMultiplierExp(squared, kReverseShift, &multiplier, &shift);
    for (int64_t c = 0; c < r.depth; ++c) {
      const int32_t v = x[r.depth * i + c] - zero_point;
      const int32_t scaled = MultiplyByQuantizedMultiplier(v, multiplier, shift + kOutputScale);
      y.Set(r.depth * i + c, static_cast<int8_t>(std::clamp<int32_t>(scaled, -128, 127)));
    }
  }
}

MF_INSTANTIATE_KERNEL(ResizeBilinearF32)
MF_INSTANTIATE_KERNEL(ResizeBilinearI8)
MF_INSTANTIATE_KERNEL(TransposeConvF32)
MF_INSTANTIATE_KERNEL(TransposeConvI8)
MF_INSTANTIATE_KERNEL(TransposeConvI16)
MF_INSTANTIATE_KERNEL(CumsumF32)
MF_INSTANTIATE_KERNEL(CumsumI8)
MF_INSTANTIATE_KERNEL(L2NormalizationF32)
MF_INSTANTIATE_KERNEL(L2NormalizationI8)

}  // namespace memfold
