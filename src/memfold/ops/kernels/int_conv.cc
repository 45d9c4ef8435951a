// int8 convolution, depthwise convolution, fully-connected and pooling kernels (see
// int_kernels.h). Multipliers are computed per call from the values' quantisation, in the
// precision TFLM's Prepare uses; the loops are those of the reference_integer_ops kernels.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/int_kernels.h"
#include "memfold/ops/kernels/kernel_util.h"
#include "memfold/ops/kernels/quant_math.h"
#include "memfold/ops/kernels/window_loops.h"

namespace memfold {
namespace {

// Per-output-channel multipliers as PopulateConvolutionQuantizationParams computes them: a
// per-tensor filter scale is broadcast to every channel; the product is taken in double.
struct ChannelMultipliers {
  std::vector<int32_t> multiplier;
  std::vector<int> shift;
};

ChannelMultipliers PerChannelMultipliers(const KernelContext& ctx, int64_t channels) {
  const float input_scale = Scale(*ctx.inputs[0].value);
  const float output_scale = Scale(*ctx.outputs[0].value);
  const Value& filter = *ctx.inputs[1].value;
  const std::vector<float> filter_scales =
      filter.quant ? filter.quant->scale : std::vector<float>{1.0f};
  const bool per_channel = filter_scales.size() > 1;
  ChannelMultipliers m;
  m.multiplier.resize(static_cast<size_t>(channels));
  m.shift.resize(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    const float scale = per_channel ? filter_scales[static_cast<size_t>(c)] : filter_scales[0];
    const double effective = static_cast<double>(input_scale) * static_cast<double>(scale) /
                             static_cast<double>(output_scale);
    QuantizeMultiplier(effective, &m.multiplier[static_cast<size_t>(c)],
                       &m.shift[static_cast<size_t>(c)]);
  }
  return m;
}

int8_t ClampToInt8(int32_t acc, const QuantRange& range) {
  acc = std::max(acc, range.min);
  acc = std::min(acc, range.max);
  return static_cast<int8_t>(acc);
}

// The output stage of conv, depthwise conv and fully-connected: the biased accumulator of
// channel c rescaled by its multiplier, shifted by the output zero point, clamped to int8.
struct Requantizer {
  ChannelMultipliers mult;
  int32_t output_offset;
  QuantRange range;

  int8_t operator()(int32_t acc, size_t c) const {
    acc = MultiplyByQuantizedMultiplier(acc, mult.multiplier[c], mult.shift[c]);
    acc += output_offset;
    return ClampToInt8(acc, range);
  }
};

// Arithmetic of reference_integer_ops::ConvPerChannel and DepthwiseConvPerChannel: products of
// the filter and the offset input summed in tap order, then bias and requantisation.
template <typename A>
class Int8ConvMath {
 public:
  using Acc = int32_t;

  // Output channels are the last output dimension (NHWC).
  explicit Int8ConvMath(const KernelContext& ctx)
      : requantize_{PerChannelMultipliers(ctx, ctx.outputs[0].shape()[3]),
                    ZeroPoint(*ctx.outputs[0].value), OutputRange(ctx)},
        input_offset_(-ZeroPoint(*ctx.inputs[0].value)),
        x_{ctx.inputs[0].ptr<int8_t>()},
        w_{ctx.inputs[1].ptr<int8_t>()},
        has_bias_(HasBias(ctx)),
        bias_(BiasInput<A, int32_t>(ctx)),
        y_{OutputOf<A, int8_t>(ctx.outputs[0])} {}

  int32_t Mac(int32_t acc, int64_t x_index, int64_t w_index) const {
    const int32_t input_val = x_[x_index];
    const int32_t filter_val = w_[w_index];
    return acc + filter_val * (input_val + input_offset_);
  }

  void Emit(int64_t y_index, int64_t oc, int32_t acc) const {
    // Wrapping add, as the int32 hardware TFLM targets does: a hostile bias must not be undefined
    // behaviour (found by the fuzzer); real models never come near the limit.
    if (has_bias_)
      acc = static_cast<int32_t>(static_cast<uint32_t>(acc) + static_cast<uint32_t>(bias_[oc]));
    y_.Set(y_index, requantize_(acc, static_cast<size_t>(oc)));
  }

 private:
  Requantizer requantize_;
  int32_t input_offset_;
  In<A, int8_t> x_, w_;
  bool has_bias_;
  In<A, int32_t> bias_;
  Out<A, int8_t> y_;
};

}  // namespace

template <typename A>
void Conv2DI8(const KernelContext& ctx) {
  ConvLoop(ctx, Int8ConvMath<A>(ctx));
}

template <typename A>
void DepthwiseConv2DI8(const KernelContext& ctx) {
  DepthwiseConvLoop(ctx, Int8ConvMath<A>(ctx));
}

namespace {

// CalculateOpDataFullyConnected: per-channel filters take the conv path (double product); a
// per-tensor filter goes through GetQuantizedConvolutionMultipler, whose product of the two
// scales is rounded to float before the division in double (one multiplier, index 0).
ChannelMultipliers FullyConnectedMultipliers(const KernelContext& ctx, bool per_channel,
                                             int64_t out_depth) {
  if (per_channel) return PerChannelMultipliers(ctx, out_depth);
  const Value& filter = *ctx.inputs[1].value;
  const double input_product_scale =
      static_cast<double>(Scale(*ctx.inputs[0].value) * Scale(filter));
  const double real_multiplier =
      input_product_scale / static_cast<double>(Scale(*ctx.outputs[0].value));
  ChannelMultipliers mult{{0}, {0}};
  QuantizeMultiplier(real_multiplier, &mult.multiplier[0], &mult.shift[0]);
  return mult;
}

}  // namespace

template <typename A>
void FullyConnectedI8(const KernelContext& ctx) {
  const Shape& w_shape = ctx.inputs[1].shape();
  const int64_t out_depth = w_shape[0], depth = w_shape[1];
  const int64_t batches = ctx.outputs[0].elements() / std::max<int64_t>(1, out_depth);
  const Value& filter = *ctx.inputs[1].value;
  const bool per_channel = filter.quant && filter.quant->per_channel();
  const Requantizer requantize{FullyConnectedMultipliers(ctx, per_channel, out_depth),
                               ZeroPoint(*ctx.outputs[0].value), OutputRange(ctx)};
  const int32_t input_offset = -ZeroPoint(*ctx.inputs[0].value);
  // Per-channel filters are symmetric (reference FullyConnectedPerChannel has no filter offset).
  const int32_t filter_offset = per_channel ? 0 : -ZeroPoint(filter);
  In<A, int8_t> x{ctx.inputs[0].ptr<int8_t>()};
  In<A, int8_t> w{ctx.inputs[1].ptr<int8_t>()};
  const bool has_bias = HasBias(ctx);
  In<A, int32_t> bias = BiasInput<A, int32_t>(ctx);
  Out<A, int8_t> y{OutputOf<A, int8_t>(ctx.outputs[0])};
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t oc = 0; oc < out_depth; ++oc) {
      int32_t acc = 0;
      for (int64_t d = 0; d < depth; ++d) {
        const int32_t input_val = x[b * depth + d];
        const int32_t filter_val = w[oc * depth + d];
        acc += (filter_val + filter_offset) * (input_val + input_offset);
      }
      if (has_bias) acc += bias[oc];
      y.Set(oc + out_depth * b, requantize(acc, per_channel ? static_cast<size_t>(oc) : 0));
    }
  }
}

namespace {

// The int8 pool loop: `finish` maps the int32 accumulator and the window size to the value
// that is clamped to the output range.
template <typename A, typename Fold, typename Finish>
void PoolI8(const KernelContext& ctx, int32_t init, Fold fold, Finish finish) {
  const QuantRange range = OutputRange(ctx);
  PoolLoop<A, int8_t>(ctx, init, fold, [&](int32_t acc, int64_t count) {
    return ClampToInt8(finish(acc, static_cast<int32_t>(count)), range);
  });
}

}  // namespace

template <typename A>
void AvgPool2DI8(const KernelContext& ctx) {
  PoolI8<A>(
      ctx, 0, [](int32_t acc, int32_t v) { return acc + v; },
      [](int32_t acc, int32_t count) {
        // TFLM fails the op on an empty window; memfold's windows are never empty.
        if (count == 0) return int32_t{0};
        // Round to nearest, ties away from zero, with C++'s truncating division.
        return acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
      });
}

template <typename A>
void MaxPool2DI8(const KernelContext& ctx) {
  PoolI8<A>(
      ctx, std::numeric_limits<int8_t>::lowest(),
      [](int32_t acc, int32_t v) { return std::max(acc, v); },
      [](int32_t acc, int32_t) { return acc; });
}

MF_INSTANTIATE_KERNEL(Conv2DI8)
MF_INSTANTIATE_KERNEL(DepthwiseConv2DI8)
MF_INSTANTIATE_KERNEL(FullyConnectedI8)
MF_INSTANTIATE_KERNEL(AvgPool2DI8)
MF_INSTANTIATE_KERNEL(MaxPool2DI8)

}  // namespace memfold
