// The loop nests of the 2-D sliding-window kernels (convolution, depthwise convolution and
// pooling, float and int8), with the arithmetic left to the caller.
//
// The loops fix the visiting order of the TFLite reference kernels; the caller's `math` object
// (convolutions) or functions (pools) do every tensor read and write, through In/Out, at the
// point of the loop where the reference kernel does. A kernel built on these loops therefore
// keeps the reference's exact memory access order and arithmetic.
//
// Complexity: O(batch * out_h * out_w * out_c * k_h * k_w * in_c per group) for convolutions,
// O(batch * out_h * out_w * channels * k_h * k_w) for depthwise convolution and pools.
// Preconditions: input 0 is NHWC, shapes and attributes were checked by the op's inference.
#pragma once

#include <algorithm>
#include <cstdint>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/kernel_util.h"

namespace memfold {

// Calls visit(batch, out_y, out_x) over the output positions, row-major.
template <typename Visit>
void ForEachOutputPixel(int64_t batches, const Window2D& win, Visit visit) {
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t oy = 0; oy < win.out_h; ++oy) {
      for (int64_t ox = 0; ox < win.out_w; ++ox) visit(b, oy, ox);
    }
  }
}

// Calls visit(filter_y, filter_x, in_y, in_x) for each filter tap of output (oy, ox) that lands
// inside the in_h x in_w input, filter_y outer; taps in the padding are skipped.
template <typename Visit>
void ForEachTap(const Window2D& win, int64_t in_h, int64_t in_w, int64_t oy, int64_t ox,
                Visit visit) {
  const int64_t y0 = oy * win.stride_h - win.pad_top;
  const int64_t x0 = ox * win.stride_w - win.pad_left;
  for (int64_t fy = 0; fy < win.k_h; ++fy) {
    const int64_t iy = y0 + win.dil_h * fy;
    for (int64_t fx = 0; fx < win.k_w; ++fx) {
      const int64_t ix = x0 + win.dil_w * fx;
      if (iy < 0 || iy >= in_h || ix < 0 || ix >= in_w) continue;
      visit(fy, fx, iy, ix);
    }
  }
}

// The part of output (oy, ox)'s pooling window that lies inside the input: window rows
// [fy_begin, fy_end) and columns [fx_begin, fx_end), at input row y0 + fy and column x0 + fx.
struct PoolClip {
  int64_t y0, x0, fy_begin, fy_end, fx_begin, fx_end;

  PoolClip(const Window2D& win, int64_t oy, int64_t ox)
      : y0(oy * win.stride_h - win.pad_top),
        x0(ox * win.stride_w - win.pad_left),
        fy_begin(std::max<int64_t>(0, -y0)),
        fy_end(std::min<int64_t>(win.k_h, win.in_h - y0)),
        fx_begin(std::max<int64_t>(0, -x0)),
        fx_end(std::min<int64_t>(win.k_w, win.in_w - x0)) {}

  // The number of window elements inside the input.
  int64_t count() const {
    return std::max<int64_t>(0, fy_end - fy_begin) * std::max<int64_t>(0, fx_end - fx_begin);
  }
};

// The per-output arithmetic a convolution loop drives. `Math` provides
//   using Acc = ...;                                  // accumulator, starts at Acc{}
//   Acc Mac(Acc acc, int64_t x_index, int64_t w_index) const;   // reads input, then filter
//   void Emit(int64_t y_index, int64_t out_channel, Acc acc) const;  // bias, requantise, write

// reference Conv / ConvPerChannel: batch, out_y, out_x, out_channel; filter_y, filter_x,
// in_channel of the output channel's group. Filter [out_c, k_h, k_w, in_c / groups].
template <typename Math>
void ConvLoop(const KernelContext& ctx, const Math& math) {
  const ShapeView in = ctx.inputs[0].shape;
  const ShapeView f = ctx.inputs[1].shape;
  const Window2D win = WindowOf(ctx, f[1], f[2]);
  const int64_t in_c = in[3], out_c = f[0], filter_c = f[3];
  const int64_t per_group = out_c / (in_c / filter_c);
  const Nhwc x_at{in[1], in[2], in_c}, y_at{win.out_h, win.out_w, out_c}, f_at{f[1], f[2], f[3]};
  ForEachOutputPixel(in[0], win, [&](int64_t b, int64_t oy, int64_t ox) {
    for (int64_t oc = 0; oc < out_c; ++oc) {
      const int64_t group = oc / per_group;
      typename Math::Acc acc{};
      ForEachTap(win, in[1], in[2], oy, ox, [&](int64_t fy, int64_t fx, int64_t iy, int64_t ix) {
        for (int64_t ic = 0; ic < filter_c; ++ic) {
          acc = math.Mac(acc, x_at(b, iy, ix, ic + group * filter_c), f_at(oc, fy, fx, ic));
        }
      });
      math.Emit(y_at(b, oy, ox, oc), oc, acc);
    }
  });
}

// reference DepthwiseConv / DepthwiseConvPerChannel: batch, out_y, out_x, in_channel,
// multiplier; filter_y, filter_x. Filter [1, k_h, k_w, in_c * multiplier].
template <typename Math>
void DepthwiseConvLoop(const KernelContext& ctx, const Math& math) {
  const ShapeView in = ctx.inputs[0].shape;
  const ShapeView f = ctx.inputs[1].shape;
  const Window2D win = WindowOf(ctx, f[1], f[2]);
  const int64_t in_c = in[3], out_c = f[3], depth_mult = out_c / in_c;
  const Nhwc x_at{in[1], in[2], in_c}, y_at{win.out_h, win.out_w, out_c}, f_at{f[1], f[2], f[3]};
  ForEachOutputPixel(in[0], win, [&](int64_t b, int64_t oy, int64_t ox) {
    for (int64_t ic = 0; ic < in_c; ++ic) {
      for (int64_t m = 0; m < depth_mult; ++m) {
        const int64_t oc = m + ic * depth_mult;
        typename Math::Acc acc{};
        ForEachTap(win, in[1], in[2], oy, ox, [&](int64_t fy, int64_t fx, int64_t iy, int64_t ix) {
          acc = math.Mac(acc, x_at(b, iy, ix, ic), f_at(0, fy, fx, oc));
        });
        math.Emit(y_at(b, oy, ox, oc), oc, acc);
      }
    }
  });
}

// reference AveragePool / MaxPool (float and integer): batch, out_y, out_x, channel over the
// window clipped to the input. Folds the window's elements row-major, acc = fold(acc, element)
// from `init`, then writes finish(acc, element count), which returns the output element.
template <typename A, typename T, typename Acc, typename Fold, typename Finish>
void PoolLoop(const KernelContext& ctx, Acc init, Fold fold, Finish finish) {
  const ShapeView in = ctx.inputs[0].shape;
  const auto& filter = ctx.attrs.Ints("filter");
  const Window2D win = WindowOf(ctx, filter[0], filter[1]);
  const int64_t channels = in[3];
  const Nhwc x_at{in[1], in[2], channels}, y_at{win.out_h, win.out_w, channels};
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  ForEachOutputPixel(in[0], win, [&](int64_t b, int64_t oy, int64_t ox) {
    const PoolClip clip(win, oy, ox);
    for (int64_t c = 0; c < channels; ++c) {
      Acc acc = init;
      int64_t count = 0;
      for (int64_t fy = clip.fy_begin; fy < clip.fy_end; ++fy) {
        for (int64_t fx = clip.fx_begin; fx < clip.fx_end; ++fx) {
          acc = fold(acc, static_cast<Acc>(x[x_at(b, clip.y0 + fy, clip.x0 + fx, c)]));
          ++count;
        }
      }
      y.Set(y_at(b, oy, ox, c), finish(acc, count));
    }
  });
}

}  // namespace memfold
