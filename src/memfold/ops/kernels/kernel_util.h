// Small helpers shared by the float and int8 kernels: NHWC indexing, the window of a 2-D op,
// optional bias inputs, the int8 output clamp range, the broadcasting row-major walk of the
// element-wise kernels and the float unary loop.
//
// Only UnaryF32 reads and writes tensors, through the kernel's In/Out views (access.h) in
// increasing index order; the others touch no memory, so a kernel's access order is its own.
// All O(1) except ForEachBroadcastIndex and UnaryF32, O(output elements).
//
// Preconditions: the op's inference function has checked shapes and attributes.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/kernel_context.h"
#include "memfold/ops/kernels/quant_math.h"
#include "memfold/ops/kernels/window_geometry.h"

namespace memfold {

// Element index of (batch, y, x, channel) in an NHWC tensor of height h, width w, c channels.
struct Nhwc {
  int64_t h, w, c;
  int64_t operator()(int64_t b, int64_t y, int64_t x, int64_t ch) const {
    return ((b * h + y) * w + x) * c + ch;
  }
  // The indexer of a rank-4 tensor of shape [*, h, w, c].
  static Nhwc Of(ShapeView s) { return {s[1], s[2], s[3]}; }
};

// The window of a 2-D op whose (forward) input is `in` (NHWC), with a k_h x k_w filter.
inline Window2D WindowOf(const KernelContext& ctx, ShapeView in, int64_t k_h, int64_t k_w) {
  return KernelWindow(ctx.attrs, in[1], in[2], k_h, k_w);
}

// The window of a 2-D op over input 0 (NHWC) with a k_h x k_w filter.
inline Window2D WindowOf(const KernelContext& ctx, int64_t k_h, int64_t k_w) {
  return WindowOf(ctx, ctx.inputs[0].shape, k_h, k_w);
}

// TFLM's reference float Logistic: saturated outside [-9, 16.619...] where float precision ends.
inline float TfliteLogistic(float v) {
  constexpr float kUpper = 16.619047164916992188f;
  constexpr float kLower = -9.0f;
  if (v > kUpper) return 1.0f;
  if (v < kLower) return std::exp(v);
  return 1.0f / (1.0f + std::exp(-v));
}

// Whether the optional bias (input 2) is present.
inline bool HasBias(const KernelContext& ctx) { return ctx.inputs.size() > 2 && ctx.inputs[2]; }

// A view of the bias (input 2); its base is null when the bias is absent (never read then).
template <typename A, typename T>
In<A, T> BiasInput(const KernelContext& ctx) {
  return In<A, T>{HasBias(ctx) ? ctx.inputs[2].ptr<T>() : nullptr};
}

// The clamp range of an integer output under the node's fused activation ("none" if unset).
inline QuantRange OutputRange(const KernelContext& ctx) {
  const TensorArg& out = ctx.outputs[0];
  return QuantizedActivationRange(ctx.attrs.StrOr("activation", "none"), out.dtype, Scale(out),
                                  ZeroPoint(out));
}

// Element strides of `in` aligned to the last `rank` output dimensions, 0 on broadcast (size 1)
// and missing leading dimensions.
inline RankArray BroadcastStrides(ShapeView in, size_t rank) {
  RankArray stride{};
  int64_t step = 1;
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t dim = in[in.size() - 1 - d];
    stride[rank - 1 - d] = dim == 1 ? 0 : step;
    step *= dim;
  }
  return stride;
}

// Row-major walk over the output of an element-wise op with N broadcasting inputs (positions
// `which` in ctx.inputs): the visiting order of TFLite's element-wise and Broadcast*Slow
// kernels. Calls visit(output_index, input_indices) once per output element, in order.
template <size_t N, typename Visit>
void ForEachBroadcast(const KernelContext& ctx, const std::array<size_t, N>& which, Visit visit) {
  const ShapeView out_shape = ctx.outputs[0].shape;
  const size_t rank = out_shape.size();
  std::array<RankArray, N> stride;
  for (size_t k = 0; k < N; ++k) stride[k] = BroadcastStrides(ctx.inputs[which[k]].shape, rank);
  const int64_t n = ctx.outputs[0].elements();
  RankArray index{};
  std::array<int64_t, N> at{};
  for (int64_t i = 0; i < n; ++i) {
    visit(i, at);
    for (size_t d = rank; d-- > 0;) {  // advance the row-major counter
      for (size_t k = 0; k < N; ++k) at[k] += stride[k][d];
      if (++index[d] < out_shape[d]) break;
      for (size_t k = 0; k < N; ++k) at[k] -= stride[k][d] * out_shape[d];
      index[d] = 0;
    }
  }
}

// The binary case: visit(output_index, index_a, index_b) over inputs 0 and 1.
template <typename Visit>
void ForEachBroadcastIndex(const KernelContext& ctx, Visit visit) {
  ForEachBroadcast<2>(ctx, {0, 1},
                      [&](int64_t i, const std::array<int64_t, 2>& at) { visit(i, at[0], at[1]); });
}

// y[i] = f(x[i]) over a float op's input 0 and output 0, increasing index (safe in place).
template <typename A, typename F>
void UnaryF32(const KernelContext& ctx, F f) {
  In<A, float> x{ctx.inputs[0].ptr<float>()};
  Out<A, float> y{OutputOf<A, float>(ctx.outputs[0])};
  const int64_t n = ctx.outputs[0].elements();
  for (int64_t i = 0; i < n; ++i) y.Set(i, f(x[i]));
}

}  // namespace memfold
