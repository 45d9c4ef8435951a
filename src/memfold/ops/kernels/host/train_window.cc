// Backprops of the sliding-window ops (depthwise conv2d, max and average pooling),
// float32, NHWC. The window geometry is the forward op's (WindowOf, kernel_util.h) and the pool
// gradients clip windows as the forward pools do (PoolClip, window_loops.h). The input
// gradients of conv2d are BLAS products (host_gemm.h).
#include <cstdint>
#include <limits>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/host/train_kernels.h"
#include "memfold/ops/kernels/kernel_util.h"
#include "memfold/ops/kernels/window_loops.h"
#include "memfold/ops/window.h"

namespace memfold {
namespace {

// The output coordinate whose window reads input coordinate `in` through tap `tap`, or -1:
// out * stride - pad + dilation * tap == in.
int64_t SourceOutput(int64_t in, int64_t tap, int64_t stride, int64_t pad, int64_t dilation,
                     int64_t out_size) {
  const int64_t scaled = in + pad - dilation * tap;
  if (scaled < 0 || scaled % stride != 0) return -1;
  const int64_t out = scaled / stride;
  return out < out_size ? out : -1;
}

template <typename A>
void Zero(Out<A, float> out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out.Set(i, 0.0f);
}

// dx of depthwise conv2d (filter [1, KH, KW, C*M]): input channel ic feeds its fan_out = M
// multiplier channels ic * M + m.
template <typename A>
void DepthwiseInputF32(const KernelContext& ctx) {
  const ShapeView dys = ctx.inputs[0].shape;  // [N, OH, OW, OC]
  const ShapeView f = ctx.inputs[1].shape;    // the filter
  const ShapeView xs = ctx.outputs[0].shape;  // [N, H, W, IC]
  const Window2D win = WindowOf(ctx, xs, f[1], f[2]);
  const int64_t fan_out = f[3] / xs[3];
  const Nhwc dy_at = Nhwc::Of(dys), f_at = Nhwc::Of(f), x_at = Nhwc::Of(xs);
  In<A, float> dy{ctx.inputs[0].ptr<float>()};
  In<A, float> w{ctx.inputs[1].ptr<float>()};
  Out<A, float> dx{OutputOf<A, float>(ctx.outputs[0])};
  for (int64_t b = 0; b < xs[0]; ++b) {
    for (int64_t iy = 0; iy < xs[1]; ++iy) {
      for (int64_t ix = 0; ix < xs[2]; ++ix) {
        for (int64_t ic = 0; ic < xs[3]; ++ic) {
          const int64_t first = ic * fan_out;
          float total = 0.0f;
          for (int64_t fy = 0; fy < f[1]; ++fy) {
            const int64_t oy =
                SourceOutput(iy, fy, win.stride_h, win.pad_top, win.dil_h, win.out_h);
            if (oy < 0) continue;
            for (int64_t fx = 0; fx < f[2]; ++fx) {
              const int64_t ox =
                  SourceOutput(ix, fx, win.stride_w, win.pad_left, win.dil_w, win.out_w);
              if (ox < 0) continue;
              for (int64_t oc = first; oc < first + fan_out; ++oc) {
                const int64_t tap = f_at(0, fy, fx, oc);
                total += dy[dy_at(b, oy, ox, oc)] * w[tap];
              }
            }
          }
          dx.Set(x_at(b, iy, ix, ic), total);
        }
      }
    }
  }
}

}  // namespace

template <typename A>
void DepthwiseBackpropInputF32(const KernelContext& ctx) {
  DepthwiseInputF32<A>(ctx);
}

template <typename A>
void DepthwiseBackpropFilterF32(const KernelContext& ctx) {
  const ShapeView xs = ctx.inputs[0].shape;   // [N, H, W, C]
  const ShapeView dys = ctx.inputs[1].shape;  // [N, OH, OW, C*M]
  const ShapeView f = ctx.outputs[0].shape;   // [1, KH, KW, C*M]
  const Window2D win = WindowOf(ctx, f[1], f[2]);
  const int64_t out_c = f[3], mult = out_c / xs[3];
  const Nhwc dy_at = Nhwc::Of(dys), f_at = Nhwc::Of(f), x_at = Nhwc::Of(xs);
  In<A, float> x{ctx.inputs[0].ptr<float>()};
  In<A, float> dy{ctx.inputs[1].ptr<float>()};
  Out<A, float> dw{OutputOf<A, float>(ctx.outputs[0])};
  for (int64_t fy = 0; fy < f[1]; ++fy) {
    for (int64_t fx = 0; fx < f[2]; ++fx) {
      for (int64_t oc = 0; oc < out_c; ++oc) {
        const int64_t ic = oc / mult;
        float total = 0.0f;
        for (int64_t b = 0; b < dys[0]; ++b) {
          for (int64_t oy = 0; oy < win.out_h; ++oy) {
            const int64_t iy = oy * win.stride_h - win.pad_top + win.dil_h * fy;
            if (iy < 0 || iy >= xs[1]) continue;
            for (int64_t ox = 0; ox < win.out_w; ++ox) {
              const int64_t ix = ox * win.stride_w - win.pad_left + win.dil_w * fx;
              if (ix < 0 || ix >= xs[2]) continue;
              total += dy[dy_at(b, oy, ox, oc)] * x[x_at(b, iy, ix, ic)];
            }
          }
        }
        dw.Set(f_at(0, fy, fx, oc), total);
      }
    }
  }
}

template <typename A>
void MaxPool2DGradF32(const KernelContext& ctx) {
  const ShapeView dys = ctx.inputs[0].shape;
  const ShapeView xs = ctx.inputs[1].shape;
  const auto& filter = ctx.attrs.Ints("filter");
  const Window2D win = WindowOf(ctx, xs, filter[0], filter[1]);
  const ActivationRange act = KernelActivation(ctx.attrs);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const Nhwc dy_at = Nhwc::Of(dys), x_at = Nhwc::Of(xs);
  In<A, float> dy{ctx.inputs[0].ptr<float>()};
  In<A, float> x{ctx.inputs[1].ptr<float>()};
  Out<A, float> dx{OutputOf<A, float>(ctx.outputs[0])};
  Zero<A>(dx, ctx.outputs[0].elements());
  ForEachOutputPixel(xs[0], win, [&](int64_t b, int64_t oy, int64_t ox) {
    const PoolClip clip(win, oy, ox);
    for (int64_t c = 0; c < xs[3]; ++c) {
      int64_t arg = -1;
      float best = 0.0f;
      for (int64_t fy = clip.fy_begin; fy < clip.fy_end; ++fy) {
        for (int64_t fx = clip.fx_begin; fx < clip.fx_end; ++fx) {
          const int64_t at = x_at(b, clip.y0 + fy, clip.x0 + fx, c);
          const float v = x[at];
          if (arg < 0 || v > best) {  // strict: the first maximum wins ties
            best = v;
            arg = at;
          }
        }
      }
      if (arg < 0) continue;  // window entirely in padding
      const bool clamped =
          (act.min > -kInf && !(best > act.min)) || (act.max < kInf && !(best < act.max));
      if (clamped) continue;
      dx.Set(arg, dx[arg] + dy[dy_at(b, oy, ox, c)]);
    }
  });
}

template <typename A>
void AvgPool2DGradF32(const KernelContext& ctx) {
  const ShapeView dys = ctx.inputs[0].shape;
  const ShapeView xs = ctx.outputs[0].shape;
  const auto& filter = ctx.attrs.Ints("filter");
  const Window2D win = WindowOf(ctx, xs, filter[0], filter[1]);
  const Nhwc dy_at = Nhwc::Of(dys), x_at = Nhwc::Of(xs);
  In<A, float> dy{ctx.inputs[0].ptr<float>()};
  Out<A, float> dx{OutputOf<A, float>(ctx.outputs[0])};
  Zero<A>(dx, ctx.outputs[0].elements());
  ForEachOutputPixel(xs[0], win, [&](int64_t b, int64_t oy, int64_t ox) {
    const PoolClip clip(win, oy, ox);
    const int64_t count = clip.count();
    if (count == 0) return;
    for (int64_t c = 0; c < xs[3]; ++c) {
      const float share = dy[dy_at(b, oy, ox, c)] / static_cast<float>(count);
      for (int64_t fy = clip.fy_begin; fy < clip.fy_end; ++fy) {
        for (int64_t fx = clip.fx_begin; fx < clip.fx_end; ++fx) {
          const int64_t at = x_at(b, clip.y0 + fy, clip.x0 + fx, c);
          dx.Set(at, dx[at] + share);
        }
      }
    }
  });
}

MF_INSTANTIATE_KERNEL(DepthwiseBackpropInputF32)
MF_INSTANTIATE_KERNEL(DepthwiseBackpropFilterF32)
MF_INSTANTIATE_KERNEL(MaxPool2DGradF32)
MF_INSTANTIATE_KERNEL(AvgPool2DGradF32)

}  // namespace memfold
