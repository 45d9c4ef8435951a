#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <utility>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/float_kernels.h"
#include "memfold/ops/kernels/kernel_util.h"

namespace memfold {
namespace {

RankArray RowMajorStrides(ShapeView shape) {
  RankArray strides{};
  if (!shape.empty()) strides[shape.size() - 1] = 1;
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

// Calls visit(output_index, input_index) for every output element in row-major order, where
// the input index is base + sum(coord[d] * in_stride[d]). The innermost dimension runs as a
// plain loop in machine words (the counters of the outer ones advance once per row).
// WalkOutputRows calls row(o, i, inner, step) once per innermost row instead: the row's output
// elements o .. o + inner read input elements i, i + step, ...
template <typename Row>
void WalkOutputRows(ShapeView out_shape, const RankArray& in_stride, int64_t base, Row row) {
  const size_t rank = out_shape.size();
  int64_t n = 1;
  for (int64_t d : out_shape) n *= d;
  if (n == 0) return;
  if (rank == 0) return row(0, base, 1, 1);
  const auto inner = static_cast<std::ptrdiff_t>(out_shape[rank - 1]);
  const auto step = static_cast<std::ptrdiff_t>(in_stride[rank - 1]);
  RankArray coord{};
  int64_t in_index = base;
  for (int64_t first = 0; first < n; first += inner) {
    row(first, in_index, inner, step);
    for (size_t d = rank - 1; d-- > 0;) {
      in_index += in_stride[d];
      if (++coord[d] < out_shape[d]) break;
      in_index -= in_stride[d] * out_shape[d];
      coord[d] = 0;
    }
  }
}

template <typename Visit>
void WalkOutput(ShapeView out_shape, const RankArray& in_stride, int64_t base, Visit visit) {
  WalkOutputRows(out_shape, in_stride, base,
                 [&](int64_t o, int64_t i, std::ptrdiff_t inner, std::ptrdiff_t step) {
                   for (std::ptrdiff_t k = 0; k < inner; ++k) visit(o + k, i + k * step);
                 });
}

bool IsMeanOverHeightWidth(ShapeView in, std::span<const int64_t> axes, bool keep) {
  if (in.size() != 4 || axes.size() != 2 || !keep) return false;
  auto norm = [](int64_t a) { return a < 0 ? a + 4 : a; };
  const int64_t a0 = norm(axes[0]), a1 = norm(axes[1]);
  return (a0 == 1 && a1 == 2) || (a0 == 2 && a1 == 1);
}

template <typename T>
T PadValue(const KernelContext& ctx) {
  return static_cast<T>(ctx.attrs.Float("value"));
}

// A tensor as [outer, size, inner] around `axis`: elements before it, its length, after it.
struct AroundAxis {
  int64_t outer = 1, size = 1, inner = 1;
  AroundAxis(ShapeView shape, int64_t axis) {
    for (size_t d = 0; d < shape.size(); ++d) {
      const auto k = static_cast<int64_t>(d);
      (k < axis ? outer : k == axis ? size : inner) *= shape[d];
    }
  }
};

// Calls write(Index{}) with the C++ type of an index output: int64 for i64, else int32.
template <typename Write>
void VisitIndexType(DType dtype, Write write) {
  if (dtype == DType::kI64) {
    write(int64_t{});
  } else {
    write(int32_t{});
  }
}

}  // namespace

template <typename A>
void MeanF32(const KernelContext& ctx) {
  const ShapeView in = ctx.inputs[0].shape;
  const std::span<const int64_t> axes = ctx.attrs.Ints("axes");
  In<A, float> x{ctx.inputs[0].ptr<float>()};
  Out<A, float> y{OutputOf<A, float>(ctx.outputs[0])};
  if (IsMeanOverHeightWidth(in, axes, ctx.attrs.Int("keepdims") != 0)) {
    const int64_t h = in[1], w = in[2], c = in[3];
    for (int64_t b = 0; b < in[0]; ++b) {
      for (int64_t d = 0; d < c; ++d) {
        float value = 0.0f;
        for (int64_t iy = 0; iy < h; ++iy) {
          for (int64_t ix = 0; ix < w; ++ix) value += x[((b * h + iy) * w + ix) * c + d];
        }
        y.Set(b * c + d, value / static_cast<float>(h * w));
      }
    }
    return;
  }
  // General case: the output doubles as the running sum, visited in input row-major order.
  std::array<bool, kMaxRank> reduced{};
  for (int64_t a : axes)
    reduced[static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(in.size()) : a)] = true;
  RankArray kept{};
  for (size_t d = 0; d < in.size(); ++d) kept[d] = reduced[d] ? 1 : in[d];
  const RankArray kept_stride = RowMajorStrides(ShapeView(kept.data(), in.size()));
  RankArray out_stride{};
  for (size_t d = 0; d < in.size(); ++d) out_stride[d] = reduced[d] ? 0 : kept_stride[d];
  const int64_t outputs = ctx.outputs[0].elements();
  for (int64_t i = 0; i < outputs; ++i) y.Set(i, 0.0f);
  WalkOutput(in, out_stride, 0, [&](int64_t in_index, int64_t out_index) {
    y.Set(out_index, y[out_index] + x[in_index]);
  });
  const int64_t count = outputs == 0 ? 0 : ctx.inputs[0].elements() / outputs;
  for (int64_t i = 0; i < outputs; ++i) y.Set(i, y[i] / static_cast<float>(count));
}

namespace {

// reduce.cc's ReduceGeneric: the output (reset to `init`) holds the running value of each kept
// position; the input is visited in row-major order, current = fold(current, in).
template <typename A, typename T, typename Fold>
void Reduce(const KernelContext& ctx, T init, Fold fold) {
  const ShapeView in = ctx.inputs[0].shape;
  const std::span<const int64_t> axes = ctx.attrs.Ints("axes");
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  std::array<bool, kMaxRank> reduced{};
  for (int64_t a : axes)
    reduced[static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(in.size()) : a)] = true;
  RankArray kept{};
  for (size_t d = 0; d < in.size(); ++d) kept[d] = reduced[d] ? 1 : in[d];
  const RankArray kept_stride = RowMajorStrides(ShapeView(kept.data(), in.size()));
  RankArray out_stride{};
  for (size_t d = 0; d < in.size(); ++d) out_stride[d] = reduced[d] ? 0 : kept_stride[d];
  const int64_t outputs = ctx.outputs[0].elements();
  for (int64_t i = 0; i < outputs; ++i) y.Set(i, init);
  WalkOutput(in, out_stride, 0, [&](int64_t in_index, int64_t out_index) {
    y.Set(out_index, fold(y[out_index], x[in_index]));
  });
}

}  // namespace

template <typename A>
void SumF32(const KernelContext& ctx) {
  Reduce<A, float>(ctx, 0.0f, [](float current, float in) { return current + in; });
}
template <typename A, typename T>
void ReduceMax(const KernelContext& ctx) {
  Reduce<A, T>(ctx, std::numeric_limits<T>::lowest(),
               [](T current, T in) { return in > current ? in : current; });
}
template <typename A, typename T>
void ReduceMin(const KernelContext& ctx) {
  Reduce<A, T>(ctx, std::numeric_limits<T>::max(),
               [](T current, T in) { return in < current ? in : current; });
}

// arg_min_max.h: per (outer, inner) the first index whose value beats all before it (strict
// compare, so ties keep the lowest index), written as int32 or int64.
template <typename A, typename T>
void ArgMinMax(const KernelContext& ctx) {
  const bool is_max = ctx.attrs.Int("max") != 0;
  const AroundAxis around(ctx.inputs[0].shape, ctx.attrs.Int("axis"));
  const int64_t outer = around.outer, size = around.size, inner = around.inner;
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  auto write = [&](auto sample) {
    using Index = decltype(sample);
    Out<A, Index> y{OutputOf<A, Index>(ctx.outputs[0])};
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        T best = x[o * size * inner + i];
        int64_t at = 0;
        for (int64_t k = 1; k < size; ++k) {
          const T v = x[(o * size + k) * inner + i];
          if (is_max ? v > best : v < best) {
            best = v;
            at = k;
          }
        }
        y.Set(o * inner + i, static_cast<Index>(at));
      }
    }
  };
  VisitIndexType(ctx.outputs[0].dtype, write);
}

namespace {

// static_cast<To>(from), as TFLM's cast.cc, except that a float outside To's range (undefined
// behaviour in C++) saturates and NaN becomes 0.
template <typename To, typename From>
To CastValue(From from) {
  if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (!(from == from)) return To{0};
    if (from <= static_cast<From>(std::numeric_limits<To>::lowest()))
      return std::numeric_limits<To>::lowest();
    if (from >= static_cast<From>(std::numeric_limits<To>::max()))
      return std::numeric_limits<To>::max();
  }
  return static_cast<To>(from);
}

}  // namespace

template <typename A, typename T>
void Cast(const KernelContext& ctx) {
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  const int64_t n = ctx.outputs[0].elements();
  VisitElementType(ctx.outputs[0].dtype, [&](auto sample) {
    using To = decltype(sample);
    Out<A, To> y{OutputOf<A, To>(ctx.outputs[0])};
    const bool boolean = ctx.outputs[0].dtype == DType::kBool;
    for (int64_t i = 0; i < n; ++i) {
      y.Set(i, boolean ? static_cast<To>(x[i] != T{0} ? 1 : 0) : CastValue<To>(x[i]));
    }
  });
}

// shape.cc: the input's dimensions (its data is not read), int32 or int64.
template <typename A, typename T>
void ShapeOf(const KernelContext& ctx) {
  const ShapeView in = ctx.inputs[0].shape;
  auto write = [&](auto sample) {
    using Index = decltype(sample);
    Out<A, Index> y{OutputOf<A, Index>(ctx.outputs[0])};
    for (size_t d = 0; d < in.size(); ++d)
      y.Set(static_cast<int64_t>(d), static_cast<Index>(in[d]));
  };
  VisitIndexType(ctx.outputs[0].dtype, write);
}

// fill.cc: every element the value (input 0, one element).
template <typename A, typename T>
void Fill(const KernelContext& ctx) {
  In<A, T> value{ctx.inputs[0].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  const int64_t n = ctx.outputs[0].elements();
  for (int64_t i = 0; i < n; ++i) y.Set(i, value[0]);
}

template <typename A>
void SoftmaxF32(const KernelContext& ctx) {
  const ShapeView shape = ctx.inputs[0].shape;
  const int64_t depth = shape.back();
  const int64_t rows = depth == 0 ? 0 : ctx.inputs[0].elements() / depth;
  const auto beta = static_cast<float>(ctx.attrs.Float("beta"));
  In<A, float> x{ctx.inputs[0].ptr<float>()};
  Out<A, float> y{OutputOf<A, float>(ctx.outputs[0])};
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = r * depth;
    float max = std::numeric_limits<float>::lowest();
    for (int64_t c = 0; c < depth; ++c) max = std::max(max, x[row + c]);
    float sum = 0.0f;
    for (int64_t c = 0; c < depth; ++c) {
      const float e = std::exp((x[row + c] - max) * beta);
      y.Set(row + c, e);
      sum += e;
    }
    for (int64_t c = 0; c < depth; ++c) y.Set(row + c, y[row + c] / sum);
  }
}

template <typename A>
void LogSoftmaxF32(const KernelContext& ctx) {
  // reference_ops::LogSoftmax: x - max - log(sum(exp(x - max))) along the last axis.
  const ShapeView shape = ctx.inputs[0].shape;
  const int64_t depth = shape.empty() ? 1 : shape.back();
  const int64_t rows = depth == 0 ? 0 : ctx.inputs[0].elements() / depth;
  In<A, float> x{ctx.inputs[0].ptr<float>()};
  Out<A, float> y{OutputOf<A, float>(ctx.outputs[0])};
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = r * depth;
    float max = std::numeric_limits<float>::lowest();
    for (int64_t c = 0; c < depth; ++c) max = std::max(max, x[row + c]);
    float sum = 0.0f;
    for (int64_t c = 0; c < depth; ++c) sum += std::exp(x[row + c] - max);
    const float log_sum = std::log(sum);
    for (int64_t c = 0; c < depth; ++c) y.Set(row + c, x[row + c] - max - log_sum);
  }
}

template <typename A, typename T>
void Concat(const KernelContext& ctx) {
  const ShapeView out_shape = ctx.outputs[0].shape;
  const int64_t rank = static_cast<int64_t>(out_shape.size());
  int64_t axis = ctx.attrs.Int("axis");
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out_shape[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= out_shape[static_cast<size_t>(d)];
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  // An input the planner already placed where it belongs in the output (a copy-free view,
  // plan/liveness.h) is not copied: one that starts at its place, contiguous along an
  // outermost axis, in rows along an inner one (reading those as a tensor would be wrong).
  int64_t o = 0;
  for (int64_t k = 0; k < outer; ++k) {
    int64_t start = 0;  // where the input's first row begins in the output
    for (const TensorArg& input : ctx.inputs) {
      In<A, T> x{input.ptr<T>()};
      const int64_t copy = input.shape[static_cast<size_t>(axis)] * inner;
      const bool in_place = input.data == reinterpret_cast<std::byte*>(y.base + y.At(start)) &&
                            (outer == 1 || input.row != 0);
      start += copy;
      if (in_place) {
        o += copy;
        continue;
      }
      CopyRun(y, o, x, k * copy, static_cast<std::ptrdiff_t>(copy));
      o += copy;
    }
  }
}

template <typename A, typename T>
void Slice(const KernelContext& ctx) {
  const ShapeView in = ctx.inputs[0].shape;
  const std::span<const int64_t> begin = ctx.attrs.Ints("begin");
  const RankArray stride = RowMajorStrides(in);
  int64_t base = 0;
  for (size_t d = 0; d < in.size(); ++d) base += begin[d] * stride[d];
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  // The dimensions after the last one the slice cuts are whole: each run of them (with the cut
  // one) is contiguous in both tensors, one copy.
  const ShapeView out = ctx.outputs[0].shape;
  size_t cut = out.size();
  while (cut > 1 && out[cut - 1] == in[cut - 1]) --cut;
  RankArray runs{}, run_stride{};
  for (size_t d = 0; d < cut; ++d) runs[d] = out[d], run_stride[d] = stride[d];
  if (cut > 0) {
    for (size_t d = cut; d < out.size(); ++d) runs[cut - 1] *= out[d];
    run_stride[cut - 1] = stride[out.size() - 1];
  }
  const ShapeView run_shape(runs.data(), cut);
  WalkOutputRows(
      run_shape, run_stride, base,
      [&](int64_t o, int64_t i, std::ptrdiff_t n, std::ptrdiff_t) { CopyRun(y, o, x, i, n); });
}

template <typename A, typename T>
void Transpose(const KernelContext& ctx) {
  const RankArray in_stride = RowMajorStrides(ctx.inputs[0].shape);
  const std::span<const int64_t> perm = ctx.attrs.Ints("perm");
  RankArray stride{};
  for (size_t d = 0; d < perm.size(); ++d) stride[d] = in_stride[static_cast<size_t>(perm[d])];
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  WalkOutput(ctx.outputs[0].shape, stride, 0, [&](int64_t o, int64_t i) { y.Set(o, x[i]); });
}

// REVERSE_V2: output index o reads the input mirrored along each axis in `axes`: a walk of the
// output with those axes' input strides negated, starting from their last element.
template <typename A, typename T>
void Reverse(const KernelContext& ctx) {
  RankArray stride = RowMajorStrides(ctx.inputs[0].shape);
  int64_t base = 0;
  for (int64_t axis : ctx.attrs.Ints("axes")) {
    const auto d = static_cast<size_t>(axis);
    base += (ctx.inputs[0].shape[d] - 1) * stride[d];
    stride[d] = -stride[d];
  }
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  WalkOutput(ctx.outputs[0].shape, stride, base, [&](int64_t o, int64_t i) { y.Set(o, x[i]); });
}

template <typename A, typename T>
void Pad(const KernelContext& ctx) {
  const ShapeView in = ctx.inputs[0].shape;
  const ShapeView out = ctx.outputs[0].shape;
  const std::span<const int64_t> pads = ctx.attrs.Ints("paddings");
  const T fill = PadValue<T>(ctx);
  const RankArray in_stride = RowMajorStrides(in);
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  RankArray coord{};
  const int64_t n = ctx.outputs[0].elements();
  for (int64_t o = 0; o < n; ++o) {
    int64_t i = 0;
    bool inside = true;
    for (size_t d = 0; d < out.size() && inside; ++d) {
      const int64_t c = coord[d] - pads[2 * d];
      inside = c >= 0 && c < in[d];
      i += c * in_stride[d];
    }
    y.Set(o, inside ? x[i] : fill);
    for (size_t d = out.size(); d-- > 0;) {
      if (++coord[d] < out[d]) break;
      coord[d] = 0;
    }
  }
}

// numpy broadcast of the input to the output shape: a row-major walk over the output.
template <typename A, typename T>
void BroadcastTo(const KernelContext& ctx) {
  const ShapeView out = ctx.outputs[0].shape;
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  WalkOutput(out, BroadcastStrides(ctx.inputs[0].shape, out.size()), 0,
             [&](int64_t o, int64_t i) { y.Set(o, x[i]); });
}

namespace {

// GetNearestNeighbor of reference_ops::ResizeNearestNeighbor, in float as TFLM computes it.
int64_t NearestSource(int64_t out, int64_t in_size, int64_t out_size, bool align_corners,
                      bool half_pixel_centers) {
  const float scale = (align_corners && out_size > 1)
                          ? static_cast<float>(in_size - 1) / static_cast<float>(out_size - 1)
                          : static_cast<float>(in_size) / static_cast<float>(out_size);
  const float offset = half_pixel_centers ? 0.5f : 0.0f;
  const float position = (static_cast<float>(out) + offset) * scale;
  const auto nearest =
      static_cast<int64_t>(align_corners ? std::round(position) : std::floor(position));
  const int64_t clamped = std::min(nearest, in_size - 1);
  return half_pixel_centers ? std::max<int64_t>(0, clamped) : clamped;
}

}  // namespace

template <typename A, typename T>
void ResizeNearest(const KernelContext& ctx) {
  const Nhwc in = Nhwc::Of(ctx.inputs[0].shape), out = Nhwc::Of(ctx.outputs[0].shape);
  const bool align = ctx.attrs.Int("align_corners") != 0;
  const bool half = ctx.attrs.Int("half_pixel_centers") != 0;
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  int64_t o = 0;
  for (int64_t b = 0; b < ctx.outputs[0].shape[0]; ++b) {
    for (int64_t oy = 0; oy < out.h; ++oy) {
      const int64_t iy = NearestSource(oy, in.h, out.h, align, half);
      for (int64_t ox = 0; ox < out.w; ++ox) {
        const int64_t ix = NearestSource(ox, in.w, out.w, align, half);
        for (int64_t c = 0; c < out.c; ++c) y.Set(o++, x[in(b, iy, ix, c)]);
      }
    }
  }
}

namespace {

// The row-major walk over the space-shaped tensor of depth_to_space / space_to_depth, with the
// matching element of the depth-shaped one (DepthToSpace's and SpaceToDepth's index mapping).
template <typename Visit>
void SpaceDepthWalk(ShapeView space_shape, ShapeView depth_shape, int64_t block, Visit visit) {
  const Nhwc space = Nhwc::Of(space_shape), depth = Nhwc::Of(depth_shape);
  int64_t s = 0;
  for (int64_t b = 0; b < space_shape[0]; ++b) {
    for (int64_t y = 0; y < space.h; ++y) {
      for (int64_t x = 0; x < space.w; ++x) {
        for (int64_t c = 0; c < space.c; ++c) {
          const int64_t dc = c + ((y % block) * block + x % block) * space.c;
          visit(s++, depth(b, y / block, x / block, dc));
        }
      }
    }
  }
}

}  // namespace

template <typename A, typename T>
void DepthToSpace(const KernelContext& ctx) {  // loops over the output
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  SpaceDepthWalk(ctx.outputs[0].shape, ctx.inputs[0].shape, ctx.attrs.Int("block_size"),
                 [&](int64_t s, int64_t d) { y.Set(s, x[d]); });
}

template <typename A, typename T>
void SpaceToDepth(const KernelContext& ctx) {  // loops over the input
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  SpaceDepthWalk(ctx.inputs[0].shape, ctx.outputs[0].shape, ctx.attrs.Int("block_size"),
                 [&](int64_t s, int64_t d) { y.Set(d, x[s]); });
}

template <typename A, typename T>
void StridedSlice(const KernelContext& ctx) {
  const ShapeView in = ctx.inputs[0].shape;
  const std::span<const int64_t> begin = ctx.attrs.Ints("begin");
  const std::span<const int64_t> strides = ctx.attrs.Ints("strides");
  const std::span<const int64_t> counts = ctx.attrs.Ints("counts");
  const RankArray in_stride = RowMajorStrides(in);
  RankArray step{};
  int64_t base = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    base += begin[d] * in_stride[d];
    step[d] = strides[d] * in_stride[d];
  }
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  WalkOutput(counts, step, base, [&](int64_t o, int64_t i) { y.Set(o, x[i]); });
}

template <typename A, typename T>
void Pack(const KernelContext& ctx) {
  const AroundAxis packed(ctx.outputs[0].shape, ctx.attrs.Int("axis"));
  const int64_t outer = packed.outer, count = packed.size, inner = packed.inner;
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  for (int64_t i = 0; i < count; ++i) {  // PackImpl: input by input, each outer block
    In<A, T> x{ctx.inputs[static_cast<size_t>(i)].ptr<T>()};
    for (int64_t k = 0; k < outer; ++k) {
      for (int64_t j = 0; j < inner; ++j) y.Set((k * count + i) * inner + j, x[k * inner + j]);
    }
  }
}

template <typename A, typename T>
void Unpack(const KernelContext& ctx) {
  const AroundAxis packed(ctx.inputs[0].shape, ctx.attrs.Int("axis"));
  const int64_t outer = packed.outer, count = packed.size, inner = packed.inner;
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  for (int64_t i = 0; i < count; ++i) {  // UnpackImpl: output by output
    Out<A, T> y{OutputOf<A, T>(ctx.outputs[static_cast<size_t>(i)])};
    for (int64_t k = 0; k < outer; ++k) {
      for (int64_t j = 0; j < inner; ++j) y.Set(k * inner + j, x[(k * count + i) * inner + j]);
    }
  }
}

template <typename A, typename T>
void Split(const KernelContext& ctx) {
  const int64_t axis = ctx.attrs.Int("axis");
  const AroundAxis around(ctx.inputs[0].shape, axis);
  const int64_t outer = around.outer, inner = around.inner;
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  int64_t i = 0;
  for (int64_t k = 0; k < outer; ++k) {  // SplitImpl: outer block by block, input in order
    for (const TensorArg& output : ctx.outputs) {
      Out<A, T> y{OutputOf<A, T>(output)};
      const int64_t copy = output.shape[static_cast<size_t>(axis)] * inner;
      for (int64_t j = 0; j < copy; ++j) y.Set(k * copy + j, x[i++]);
    }
  }
}

#define MF_INSTANTIATE_MOVES(T)             \
  MF_INSTANTIATE_KERNEL_T(Concat, T)        \
  MF_INSTANTIATE_KERNEL_T(Slice, T)         \
  MF_INSTANTIATE_KERNEL_T(Transpose, T)     \
  MF_INSTANTIATE_KERNEL_T(Reverse, T)       \
  MF_INSTANTIATE_KERNEL_T(Pad, T)           \
  MF_INSTANTIATE_KERNEL_T(BroadcastTo, T)   \
  MF_INSTANTIATE_KERNEL_T(ResizeNearest, T) \
  MF_INSTANTIATE_KERNEL_T(DepthToSpace, T)  \
  MF_INSTANTIATE_KERNEL_T(SpaceToDepth, T)  \
  MF_INSTANTIATE_KERNEL_T(StridedSlice, T)  \
  MF_INSTANTIATE_KERNEL_T(Pack, T)          \
  MF_INSTANTIATE_KERNEL_T(Unpack, T)        \
  MF_INSTANTIATE_KERNEL_T(Split, T)         \
  MF_INSTANTIATE_KERNEL_T(Cast, T)          \
  MF_INSTANTIATE_KERNEL_T(ShapeOf, T)       \
  MF_INSTANTIATE_KERNEL_T(Fill, T)
MF_INSTANTIATE_MOVES(int8_t)
MF_INSTANTIATE_MOVES(uint8_t)
MF_INSTANTIATE_MOVES(int16_t)
MF_INSTANTIATE_MOVES(float)
MF_INSTANTIATE_MOVES(int32_t)
MF_INSTANTIATE_MOVES(int64_t)
#undef MF_INSTANTIATE_MOVES

MF_INSTANTIATE_KERNEL(MeanF32)
MF_INSTANTIATE_KERNEL(SoftmaxF32)
MF_INSTANTIATE_KERNEL(LogSoftmaxF32)
MF_INSTANTIATE_KERNEL(SumF32)
MF_INSTANTIATE_KERNEL_T(ReduceMax, float)
MF_INSTANTIATE_KERNEL_T(ReduceMax, int8_t)
MF_INSTANTIATE_KERNEL_T(ReduceMax, int16_t)
MF_INSTANTIATE_KERNEL_T(ReduceMin, float)
MF_INSTANTIATE_KERNEL_T(ReduceMin, int8_t)
MF_INSTANTIATE_KERNEL_T(ReduceMin, int16_t)
MF_INSTANTIATE_KERNEL_T(ArgMinMax, float)
MF_INSTANTIATE_KERNEL_T(ArgMinMax, int8_t)

}  // namespace memfold
