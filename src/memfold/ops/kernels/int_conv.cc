// int8 and int16 convolution, depthwise convolution, fully-connected and pooling kernels (see
// int_kernels.h; the one-group int8 conv, the int8 depthwise conv and fully-connected run
// int8_simd.h's where their prepare stored its records, the loops here otherwise).
// Requantisation multipliers come from the op's prepare (int_prepare.h); the loops are those of the
// reference_integer_ops kernels. Freestanding.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/int8_simd.h"
#include "memfold/ops/kernels/int_kernels.h"
#include "memfold/ops/kernels/kernel_util.h"
#include "memfold/ops/kernels/quant_math.h"
#include "memfold/ops/kernels/window_loops.h"

namespace memfold {
namespace {

// The per-channel multipliers and shifts an int8 prepare stored: channels of each.
struct ChannelMultipliers {
  std::span<const int32_t> multiplier;
  std::span<const int32_t> shift;
  static ChannelMultipliers Of(const KernelContext& ctx) {
    const size_t channels = ctx.prepared.size() / 2;
    return {ctx.prepared.first(channels), ctx.prepared.subspan(channels)};
  }
};

// The output stage of conv, depthwise conv and fully-connected: the biased accumulator of
// channel c rescaled by its multiplier, shifted by the output zero point, clamped to int8.
struct Requantizer {
  ChannelMultipliers mult;
  int32_t output_offset;
  QuantRange range;

  template <typename Acc>
  int32_t Scaled(Acc acc, size_t c) const {
    const int32_t scaled = MultiplyByQuantizedMultiplier(acc, mult.multiplier[c], mult.shift[c]);
    return std::min(std::max(scaled + output_offset, range.min), range.max);
  }
  int8_t operator()(int32_t acc, size_t c) const { return static_cast<int8_t>(Scaled(acc, c)); }
};

// acc + term: wrapping in 32 bits, as the int32 hardware TFLM targets does (a hostile bias must
// not be undefined behaviour, found by the fuzzer; real models never come near the limit);
// plain in 64 bits.
inline int32_t AddToAcc(int32_t acc, int64_t term) {
  return WrapAdd(acc, static_cast<int32_t>(term));
}
inline int64_t AddToAcc(int64_t acc, int64_t term) { return acc + term; }

// Arithmetic of reference_integer_ops::ConvPerChannel and DepthwiseConvPerChannel: products of
// the filter and the offset input summed in tap order, then bias and requantisation. X is the
// activation type (int8; or int16, symmetric: offsets 0), Bias the bias and accumulator type
// (int32 for int8; int32 or int64 for int16, TFLM's AccumScalar).
template <typename A, typename X, typename Bias>
class IntConvMath {
 public:
  using Acc = Bias;

  // Output channels are the last output dimension (NHWC).
  explicit IntConvMath(const KernelContext& ctx)
      : requantize_{ChannelMultipliers::Of(ctx), ZeroPoint(ctx.outputs[0]), OutputRange(ctx)},
        input_offset_(-ZeroPoint(ctx.inputs[0])),
        x_{ctx.inputs[0].ptr<X>()},
        w_{ctx.inputs[1].ptr<int8_t>()},
        has_bias_(HasBias(ctx)),
        bias_(BiasInput<A, Bias>(ctx)),
        y_{OutputOf<A, X>(ctx.outputs[0])} {}

  Acc Mac(Acc acc, int64_t x_index, int64_t w_index) const {
    const int32_t input_val = x_[x_index];
    const int32_t filter_val = w_[w_index];
    return acc + filter_val * (input_val + input_offset_);
  }

  void Emit(int64_t y_index, int64_t oc, Acc acc) const {
    if (has_bias_) acc = AddToAcc(acc, bias_[oc]);
    y_.Set(y_index, static_cast<X>(requantize_.Scaled(acc, static_cast<size_t>(oc))));
  }

 private:
  Requantizer requantize_;
  int32_t input_offset_;
  In<A, X> x_;
  In<A, int8_t> w_;
  bool has_bias_;
  In<A, Bias> bias_;
  Out<A, X> y_;
};

// Runs `loop` with the int16 math of the node's bias type (int64 when absent).
template <typename A, typename Loop>
void WithInt16Math(const KernelContext& ctx, Loop loop) {
  if (HasBias(ctx) && ctx.inputs[2].dtype == DType::kI32) {
    loop(IntConvMath<A, int16_t, int32_t>(ctx));
  } else {
    loop(IntConvMath<A, int16_t, int64_t>(ctx));
  }
}

}  // namespace

// One group, the common case, runs the SIMD kernel; grouped convs the reference loop.
template <typename A>
void Conv2DI8(const KernelContext& ctx) {
  if (Int8ConvIsSimd(ctx.inputs[0].shape[3], ctx.inputs[1].shape[3]) &&
      HasSimdRecords(ctx, ctx.outputs[0].shape[3])) {
    return Conv2DI8Simd<A>(ctx);
  }
  ConvLoop(ctx, IntConvMath<A, int8_t, int32_t>(ctx));
}

template <typename A>
void DepthwiseConv2DI8(const KernelContext& ctx) {
  if (HasSimdRecords(ctx, ctx.outputs[0].shape[3])) return DepthwiseConv2DI8Simd<A>(ctx);
  DepthwiseConvLoop(ctx, IntConvMath<A, int8_t, int32_t>(ctx));
}

namespace {

// reference_integer_ops::FullyConnected(PerChannel): per batch and output channel, the filter
// row's products with the offset input (a per-tensor filter's offset too), then bias and
// requantisation. X is the activation type; Acc the accumulator and bias type (int32 for int8;
// int32 or int64 for int16, TFLM's AccumScalar).
template <typename A, typename X, typename Acc>
void FullyConnectedLoop(const KernelContext& ctx) {
  const TensorArg& filter = ctx.inputs[1];
  const int64_t out_depth = filter.shape[0], depth = filter.shape[1];
  const bool per_channel = filter.quant.per_channel();
  const Requantizer requantize{ChannelMultipliers::Of(ctx), ZeroPoint(ctx.outputs[0]),
                               OutputRange(ctx)};
  const int32_t x_off = -ZeroPoint(ctx.inputs[0]);
  const int32_t w_off = per_channel ? 0 : -ZeroPoint(filter);
  const In<A, X> x{ctx.inputs[0].ptr<X>()};
  const In<A, int8_t> w{filter.ptr<int8_t>()};
  const bool has_bias = HasBias(ctx);
  const In<A, Acc> bias = BiasInput<A, Acc>(ctx);
  const Out<A, X> y = OutputOf<A, X>(ctx.outputs[0]);
  const int64_t batches = ctx.outputs[0].elements() / std::max<int64_t>(1, out_depth);
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t oc = 0; oc < out_depth; ++oc) {
      Acc acc = 0;
      for (int64_t d = 0; d < depth; ++d) {
        const int32_t product =
            WrapMul(WrapAdd(w[oc * depth + d], w_off), WrapAdd(x[b * depth + d], x_off));
        acc = AddToAcc(acc, product);
      }
      if (has_bias) acc = AddToAcc(acc, bias[oc]);
      const size_t channel = per_channel ? static_cast<size_t>(oc) : 0;
      y.Set(b * out_depth + oc, static_cast<X>(requantize.Scaled(acc, channel)));
    }
  }
}

}  // namespace

template <typename A>
void FullyConnectedI8(const KernelContext& ctx) {
  const TensorArg& filter = ctx.inputs[1];
  if (HasSimdRecords(ctx, filter.quant.per_channel() ? filter.shape[0] : 1))
    return FullyConnectedI8Simd<A>(ctx);
  FullyConnectedLoop<A, int8_t, int32_t>(ctx);
}

template <typename A>
void FullyConnectedI16(const KernelContext& ctx) {
  if (HasBias(ctx) && ctx.inputs[2].dtype == DType::kI32) {
    FullyConnectedLoop<A, int16_t, int32_t>(ctx);
  } else {
    FullyConnectedLoop<A, int16_t, int64_t>(ctx);
  }
}

template <typename A>
void Conv2DI16(const KernelContext& ctx) {
  WithInt16Math<A>(ctx, [&](const auto& math) { ConvLoop(ctx, math); });
}

template <typename A>
void DepthwiseConv2DI16(const KernelContext& ctx) {
  WithInt16Math<A>(ctx, [&](const auto& math) { DepthwiseConvLoop(ctx, math); });
}

namespace {

// The integer pool loop: `finish` maps the int32 accumulator and the window size to the value
// that is clamped to the output range.
template <typename A, typename T, typename Fold, typename Finish>
void PoolInt(const KernelContext& ctx, int32_t init, Fold fold, Finish finish) {
  const QuantRange range = OutputRange(ctx);
  PoolLoop<A, T>(ctx, init, fold, [&](int32_t acc, int64_t count) {
    return static_cast<T>(
        std::clamp(finish(acc, static_cast<int32_t>(count)), range.min, range.max));
  });
}

}  // namespace

template <typename A, typename T>
void AvgPool2DInt(const KernelContext& ctx) {
  PoolInt<A, T>(
      ctx, 0, [](int32_t acc, int32_t v) { return acc + v; },
      [](int32_t acc, int32_t count) {
        // TFLM fails the op on an empty window; memfold's windows are never empty.
        if (count == 0) return int32_t{0};
        // Round to nearest, ties away from zero, with C++'s truncating division.
        return acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
      });
}

template <typename A, typename T>
void MaxPool2DInt(const KernelContext& ctx) {
  PoolInt<A, T>(
      ctx, std::numeric_limits<T>::lowest(),
      [](int32_t acc, int32_t v) { return std::max(acc, v); },
      [](int32_t acc, int32_t) { return acc; });
}

MF_INSTANTIATE_KERNEL(Conv2DI8)
MF_INSTANTIATE_KERNEL(DepthwiseConv2DI8)
MF_INSTANTIATE_KERNEL(FullyConnectedI8)
MF_INSTANTIATE_KERNEL(FullyConnectedI16)
MF_INSTANTIATE_KERNEL(Conv2DI16)
MF_INSTANTIATE_KERNEL(DepthwiseConv2DI16)
MF_INSTANTIATE_KERNEL_T(AvgPool2DInt, int8_t)
MF_INSTANTIATE_KERNEL_T(AvgPool2DInt, int16_t)
MF_INSTANTIATE_KERNEL_T(MaxPool2DInt, int8_t)
MF_INSTANTIATE_KERNEL_T(MaxPool2DInt, int16_t)

}  // namespace memfold
