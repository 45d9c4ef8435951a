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
#include "memfold/ops/kernels/quant_math.h"
#include "memfold/ops/window.h"

namespace memfold {
namespace {

// NHWC index helper.
struct Nhwc {
  int64_t h, w, c;
  int64_t operator()(int64_t b, int64_t y, int64_t x, int64_t ch) const {
    return ((b * h + y) * w + x) * c + ch;
  }
};

Window2D WindowOf(const KernelContext& ctx, int64_t k_h, int64_t k_w) {
  const Shape& in = ctx.inputs[0].shape();
  return ComputeWindow(ctx.node.attrs, in[1], in[2], k_h, k_w).value();
}

QuantRange OutputRange(const KernelContext& ctx) {
  const Value& out = *ctx.outputs[0].value;
  const std::string activation =
      ctx.node.attrs.Has("activation") ? ctx.node.attrs.Str("activation") : "none";
  return QuantizedActivationRange(activation, out.dtype, Scale(out), ZeroPoint(out));
}

bool HasBias(const KernelContext& ctx) { return ctx.inputs.size() > 2 && ctx.inputs[2]; }

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

}  // namespace

template <typename A>
void Conv2DI8(const KernelContext& ctx) {
  const Shape& in = ctx.inputs[0].shape();
  const Shape& f = ctx.inputs[1].shape();  // [out_c, k_h, k_w, filter_in_c]
  const Window2D win = WindowOf(ctx, f[1], f[2]);
  const int64_t batches = in[0], in_c = in[3], out_c = f[0], filter_c = f[3];
  const int64_t per_group = out_c / (in_c / filter_c);
  const ChannelMultipliers mult = PerChannelMultipliers(ctx, out_c);
  const int32_t input_offset = -ZeroPoint(*ctx.inputs[0].value);
  const int32_t output_offset = ZeroPoint(*ctx.outputs[0].value);
  const QuantRange range = OutputRange(ctx);
  const Nhwc x_at{in[1], in[2], in_c}, y_at{win.out_h, win.out_w, out_c}, f_at{f[1], f[2], f[3]};
  In<A, int8_t> x{ctx.inputs[0].ptr<int8_t>()};
  In<A, int8_t> w{ctx.inputs[1].ptr<int8_t>()};
  const bool has_bias = HasBias(ctx);
  In<A, int32_t> bias{has_bias ? ctx.inputs[2].ptr<int32_t>() : nullptr};
  Out<A, int8_t> y{ctx.outputs[0].ptr<int8_t>()};
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t oy = 0; oy < win.out_h; ++oy) {
      const int64_t y0 = oy * win.stride_h - win.pad_top;
      for (int64_t ox = 0; ox < win.out_w; ++ox) {
        const int64_t x0 = ox * win.stride_w - win.pad_left;
        for (int64_t oc = 0; oc < out_c; ++oc) {
          const int64_t group = oc / per_group;
          int32_t acc = 0;
          for (int64_t fy = 0; fy < f[1]; ++fy) {
            const int64_t iy = y0 + win.dil_h * fy;
            for (int64_t fx = 0; fx < f[2]; ++fx) {
              const int64_t ix = x0 + win.dil_w * fx;
              if (iy < 0 || iy >= in[1] || ix < 0 || ix >= in[2]) continue;
              for (int64_t ic = 0; ic < filter_c; ++ic) {
                const int32_t input_val = x[x_at(b, iy, ix, ic + group * filter_c)];
                const int32_t filter_val = w[f_at(oc, fy, fx, ic)];
                acc += filter_val * (input_val + input_offset);
              }
            }
          }
          if (has_bias) acc += bias[oc];
          const auto c = static_cast<size_t>(oc);
          acc = MultiplyByQuantizedMultiplier(acc, mult.multiplier[c], mult.shift[c]);
          acc += output_offset;
          y.Set(y_at(b, oy, ox, oc), ClampToInt8(acc, range));
        }
      }
    }
  }
}

template <typename A>
void DepthwiseConv2DI8(const KernelContext& ctx) {
  const Shape& in = ctx.inputs[0].shape();
  const Shape& f = ctx.inputs[1].shape();  // [1, k_h, k_w, out_c]
  const Window2D win = WindowOf(ctx, f[1], f[2]);
  const int64_t batches = in[0], in_c = in[3], out_c = f[3], depth_mult = out_c / in_c;
  const ChannelMultipliers mult = PerChannelMultipliers(ctx, out_c);
  const int32_t input_offset = -ZeroPoint(*ctx.inputs[0].value);
  const int32_t output_offset = ZeroPoint(*ctx.outputs[0].value);
  const QuantRange range = OutputRange(ctx);
  const Nhwc x_at{in[1], in[2], in_c}, y_at{win.out_h, win.out_w, out_c}, f_at{f[1], f[2], f[3]};
  In<A, int8_t> x{ctx.inputs[0].ptr<int8_t>()};
  In<A, int8_t> w{ctx.inputs[1].ptr<int8_t>()};
  const bool has_bias = HasBias(ctx);
  In<A, int32_t> bias{has_bias ? ctx.inputs[2].ptr<int32_t>() : nullptr};
  Out<A, int8_t> y{ctx.outputs[0].ptr<int8_t>()};
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t oy = 0; oy < win.out_h; ++oy) {
      for (int64_t ox = 0; ox < win.out_w; ++ox) {
        for (int64_t ic = 0; ic < in_c; ++ic) {
          for (int64_t m = 0; m < depth_mult; ++m) {
            const int64_t oc = m + ic * depth_mult;
            const int64_t x0 = ox * win.stride_w - win.pad_left;
            const int64_t y0 = oy * win.stride_h - win.pad_top;
            int32_t acc = 0;
            for (int64_t fy = 0; fy < f[1]; ++fy) {
              for (int64_t fx = 0; fx < f[2]; ++fx) {
                const int64_t ix = x0 + win.dil_w * fx;
                const int64_t iy = y0 + win.dil_h * fy;
                if (iy < 0 || iy >= in[1] || ix < 0 || ix >= in[2]) continue;
                const int32_t input_val = x[x_at(b, iy, ix, ic)];
                const int32_t filter_val = w[f_at(0, fy, fx, oc)];
                acc += filter_val * (input_val + input_offset);
              }
            }
            if (has_bias) acc += bias[oc];
            const auto c = static_cast<size_t>(oc);
            acc = MultiplyByQuantizedMultiplier(acc, mult.multiplier[c], mult.shift[c]);
            acc += output_offset;
            y.Set(y_at(b, oy, ox, oc), ClampToInt8(acc, range));
          }
        }
      }
    }
  }
}

template <typename A>
void FullyConnectedI8(const KernelContext& ctx) {
  const Shape& w_shape = ctx.inputs[1].shape();
  const int64_t out_depth = w_shape[0], depth = w_shape[1];
  const int64_t batches = ctx.outputs[0].elements() / std::max<int64_t>(1, out_depth);
  const Value& input = *ctx.inputs[0].value;
  const Value& filter = *ctx.inputs[1].value;
  const Value& output = *ctx.outputs[0].value;
  // CalculateOpDataFullyConnected: per-channel filters take the conv path (double product);
  // a per-tensor filter goes through GetQuantizedConvolutionMultipler, whose product of the
  // two scales is rounded to float before the division in double.
  const bool per_channel = filter.quant && filter.quant->per_channel();
  ChannelMultipliers mult;
  if (per_channel) {
    mult = PerChannelMultipliers(ctx, out_depth);
  } else {
    const double input_product_scale = static_cast<double>(Scale(input) * Scale(filter));
    const double real_multiplier = input_product_scale / static_cast<double>(Scale(output));
    mult.multiplier.resize(1);
    mult.shift.resize(1);
    QuantizeMultiplier(real_multiplier, &mult.multiplier[0], &mult.shift[0]);
  }
  const int32_t input_offset = -ZeroPoint(input);
  // Per-channel filters are symmetric (reference FullyConnectedPerChannel has no filter offset).
  const int32_t filter_offset = per_channel ? 0 : -ZeroPoint(filter);
  const int32_t output_offset = ZeroPoint(output);
  const QuantRange range = OutputRange(ctx);
  In<A, int8_t> x{ctx.inputs[0].ptr<int8_t>()};
  In<A, int8_t> w{ctx.inputs[1].ptr<int8_t>()};
  const bool has_bias = HasBias(ctx);
  In<A, int32_t> bias{has_bias ? ctx.inputs[2].ptr<int32_t>() : nullptr};
  Out<A, int8_t> y{ctx.outputs[0].ptr<int8_t>()};
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t oc = 0; oc < out_depth; ++oc) {
      int32_t acc = 0;
      for (int64_t d = 0; d < depth; ++d) {
        const int32_t input_val = x[b * depth + d];
        const int32_t filter_val = w[oc * depth + d];
        acc += (filter_val + filter_offset) * (input_val + input_offset);
      }
      if (has_bias) acc += bias[oc];
      const size_t c = per_channel ? static_cast<size_t>(oc) : 0;
      acc = MultiplyByQuantizedMultiplier(acc, mult.multiplier[c], mult.shift[c]);
      acc += output_offset;
      y.Set(oc + out_depth * b, ClampToInt8(acc, range));
    }
  }
}

namespace {

// Shared loop of both int8 pools: `fold` accumulates the clipped window of one
// (b, y, x, channel), `finish` turns the accumulator and the window size into the output.
template <typename A, typename Fold, typename Finish>
void PoolI8(const KernelContext& ctx, int32_t init, Fold fold, Finish finish) {
  const Shape& in = ctx.inputs[0].shape();
  const auto& filter = ctx.node.attrs.Ints("filter");
  const Window2D win = WindowOf(ctx, filter[0], filter[1]);
  const int64_t channels = in[3];
  const QuantRange range = OutputRange(ctx);
  const Nhwc x_at{in[1], in[2], channels}, y_at{win.out_h, win.out_w, channels};
  In<A, int8_t> x{ctx.inputs[0].ptr<int8_t>()};
  Out<A, int8_t> y{ctx.outputs[0].ptr<int8_t>()};
  for (int64_t b = 0; b < in[0]; ++b) {
    for (int64_t oy = 0; oy < win.out_h; ++oy) {
      for (int64_t ox = 0; ox < win.out_w; ++ox) {
        for (int64_t c = 0; c < channels; ++c) {
          const int64_t x0 = ox * win.stride_w - win.pad_left;
          const int64_t y0 = oy * win.stride_h - win.pad_top;
          const int64_t fx_start = std::max<int64_t>(0, -x0);
          const int64_t fx_end = std::min<int64_t>(win.k_w, in[2] - x0);
          const int64_t fy_start = std::max<int64_t>(0, -y0);
          const int64_t fy_end = std::min<int64_t>(win.k_h, in[1] - y0);
          int32_t acc = init;
          int32_t count = 0;
          for (int64_t fy = fy_start; fy < fy_end; ++fy) {
            for (int64_t fx = fx_start; fx < fx_end; ++fx) {
              acc = fold(acc, static_cast<int32_t>(x[x_at(b, y0 + fy, x0 + fx, c)]));
              ++count;
            }
          }
          y.Set(y_at(b, oy, ox, c), ClampToInt8(finish(acc, count), range));
        }
      }
    }
  }
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
