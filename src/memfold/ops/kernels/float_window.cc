#include <algorithm>
#include <limits>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/float_kernels.h"
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

}  // namespace

template <typename A>
void Conv2DF32(const KernelContext& ctx) {
  const Shape& in = ctx.inputs[0].shape();
  const Shape& f = ctx.inputs[1].shape();  // [out_c, k_h, k_w, filter_in_c]
  const Window2D win = WindowOf(ctx, f[1], f[2]);
  const int64_t batches = in[0], in_c = in[3], out_c = f[0], filter_c = f[3];
  const int64_t per_group = out_c / (in_c / filter_c);
  const ActivationRange act = ParseActivation(ctx.node.attrs).value();
  const Nhwc x_at{in[1], in[2], in_c}, y_at{win.out_h, win.out_w, out_c}, f_at{f[1], f[2], f[3]};
  In<A, float> x{ctx.inputs[0].ptr<float>()};
  In<A, float> w{ctx.inputs[1].ptr<float>()};
  const bool has_bias = ctx.inputs.size() > 2 && ctx.inputs[2];
  In<A, float> bias{has_bias ? ctx.inputs[2].ptr<float>() : nullptr};
  Out<A, float> y{ctx.outputs[0].ptr<float>()};
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t oy = 0; oy < win.out_h; ++oy) {
      const int64_t y0 = oy * win.stride_h - win.pad_top;
      for (int64_t ox = 0; ox < win.out_w; ++ox) {
        const int64_t x0 = ox * win.stride_w - win.pad_left;
        for (int64_t oc = 0; oc < out_c; ++oc) {
          const int64_t group = oc / per_group;
          float total = 0.0f;
          for (int64_t fy = 0; fy < f[1]; ++fy) {
            const int64_t iy = y0 + win.dil_h * fy;
            for (int64_t fx = 0; fx < f[2]; ++fx) {
              const int64_t ix = x0 + win.dil_w * fx;
              if (iy < 0 || iy >= in[1] || ix < 0 || ix >= in[2]) continue;
              for (int64_t ic = 0; ic < filter_c; ++ic) {
                total += x[x_at(b, iy, ix, ic + group * filter_c)] * w[f_at(oc, fy, fx, ic)];
              }
            }
          }
          const float bias_value = has_bias ? bias[oc] : 0.0f;
          y.Set(y_at(b, oy, ox, oc), std::min(std::max(total + bias_value, act.min), act.max));
        }
      }
    }
  }
}

template <typename A>
void DepthwiseConv2DF32(const KernelContext& ctx) {
  const Shape& in = ctx.inputs[0].shape();
  const Shape& f = ctx.inputs[1].shape();  // [1, k_h, k_w, out_c]
  const Window2D win = WindowOf(ctx, f[1], f[2]);
  const int64_t batches = in[0], in_c = in[3], out_c = f[3], mult = out_c / in_c;
  const ActivationRange act = ParseActivation(ctx.node.attrs).value();
  const Nhwc x_at{in[1], in[2], in_c}, y_at{win.out_h, win.out_w, out_c}, f_at{f[1], f[2], f[3]};
  In<A, float> x{ctx.inputs[0].ptr<float>()};
  In<A, float> w{ctx.inputs[1].ptr<float>()};
  const bool has_bias = ctx.inputs.size() > 2 && ctx.inputs[2];
  In<A, float> bias{has_bias ? ctx.inputs[2].ptr<float>() : nullptr};
  Out<A, float> y{ctx.outputs[0].ptr<float>()};
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t oy = 0; oy < win.out_h; ++oy) {
      for (int64_t ox = 0; ox < win.out_w; ++ox) {
        for (int64_t ic = 0; ic < in_c; ++ic) {
          for (int64_t m = 0; m < mult; ++m) {
            const int64_t oc = m + ic * mult;
            const int64_t y0 = oy * win.stride_h - win.pad_top;
            const int64_t x0 = ox * win.stride_w - win.pad_left;
            float total = 0.0f;
            for (int64_t fy = 0; fy < f[1]; ++fy) {
              for (int64_t fx = 0; fx < f[2]; ++fx) {
                const int64_t iy = y0 + win.dil_h * fy;
                const int64_t ix = x0 + win.dil_w * fx;
                if (iy < 0 || iy >= in[1] || ix < 0 || ix >= in[2]) continue;
                total += x[x_at(b, iy, ix, ic)] * w[f_at(0, fy, fx, oc)];
              }
            }
            const float bias_value = has_bias ? bias[oc] : 0.0f;
            y.Set(y_at(b, oy, ox, oc), std::min(std::max(total + bias_value, act.min), act.max));
          }
        }
      }
    }
  }
}

namespace {

// Shared loop of both pools: `fold` accumulates the clipped window of one (b, y, x, channel).
template <typename A, typename Init, typename Fold, typename Finish>
void Pool(const KernelContext& ctx, Init init, Fold fold, Finish finish) {
  const Shape& in = ctx.inputs[0].shape();
  const auto& filter = ctx.node.attrs.Ints("filter");
  const Window2D win = WindowOf(ctx, filter[0], filter[1]);
  const int64_t channels = in[3];
  const ActivationRange act = ParseActivation(ctx.node.attrs).value();
  const Nhwc x_at{in[1], in[2], channels}, y_at{win.out_h, win.out_w, channels};
  In<A, float> x{ctx.inputs[0].ptr<float>()};
  Out<A, float> y{ctx.outputs[0].ptr<float>()};
  for (int64_t b = 0; b < in[0]; ++b) {
    for (int64_t oy = 0; oy < win.out_h; ++oy) {
      for (int64_t ox = 0; ox < win.out_w; ++ox) {
        for (int64_t c = 0; c < channels; ++c) {
          const int64_t y0 = oy * win.stride_h - win.pad_top;
          const int64_t x0 = ox * win.stride_w - win.pad_left;
          const int64_t fy_start = std::max<int64_t>(0, -y0);
          const int64_t fy_end = std::min<int64_t>(win.k_h, in[1] - y0);
          const int64_t fx_start = std::max<int64_t>(0, -x0);
          const int64_t fx_end = std::min<int64_t>(win.k_w, in[2] - x0);
          float acc = init;
          int64_t count = 0;
          for (int64_t fy = fy_start; fy < fy_end; ++fy) {
            for (int64_t fx = fx_start; fx < fx_end; ++fx) {
              acc = fold(acc, x[x_at(b, y0 + fy, x0 + fx, c)]);
              ++count;
            }
          }
          const float value = finish(acc, count);
          y.Set(y_at(b, oy, ox, c), std::min(std::max(value, act.min), act.max));
        }
      }
    }
  }
}

}  // namespace

template <typename A>
void AvgPool2DF32(const KernelContext& ctx) {
  Pool<A>(
      ctx, 0.0f, [](float acc, float v) { return acc + v; },
      [](float acc, int64_t count) { return count == 0 ? 0.0f : acc / static_cast<float>(count); });
}

template <typename A>
void MaxPool2DF32(const KernelContext& ctx) {
  Pool<A>(
      ctx, std::numeric_limits<float>::lowest(), [](float acc, float v) { return std::max(acc, v); },
      [](float acc, int64_t) { return acc; });
}

MF_INSTANTIATE_KERNEL(Conv2DF32)
MF_INSTANTIATE_KERNEL(DepthwiseConv2DF32)
MF_INSTANTIATE_KERNEL(AvgPool2DF32)
MF_INSTANTIATE_KERNEL(MaxPool2DF32)

}  // namespace memfold
