#include "memfold/ops/overlap_models.h"

#include <algorithm>
#include <vector>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/batch_matmul_kernels.h"
#include "memfold/ops/kernels/geometry_kernels.h"
#include "memfold/ops/window.h"

namespace memfold {
namespace {

// The input and output a model looks at, with element sizes.
struct Pair {
  const Value& in;
  const Value& out;
  int64_t ei;     // input element bytes
  int64_t eo;     // output element bytes
  int64_t n_out;  // output bytes
};

std::optional<Pair> PairOf(const Graph& g, const Node& n, int input) {
  if (input < 0 || static_cast<size_t>(input) >= n.inputs.size() ||
      n.inputs[static_cast<size_t>(input)] == kNoValue)
    return std::nullopt;
  const Value& in = g.value(n.inputs[static_cast<size_t>(input)]);
  const Value& out = g.value(n.outputs[0]);
  return Pair{in, out, ElementBytes(in.dtype), ElementBytes(out.dtype), out.bytes()};
}

std::vector<int64_t> RowMajorStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

// Strides of `in` broadcast against `out` (0 on broadcast dimensions), in out's rank.
std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> stride(out.size(), 0);
  int64_t step = 1;
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t dim = in[in.size() - 1 - d];
    stride[out.size() - 1 - d] = dim == 1 ? 0 : step;
    step *= dim;
  }
  return stride;
}

// Replays a row-major walk over `out_shape` where output element o reads input element
// base + sum(coord * stride) (if `inside` says so), then writes o.
template <typename Inside>
int64_t ReplayRowMajor(const Pair& p, const Shape& out_shape, const std::vector<int64_t>& stride,
                       int64_t base, Inside inside) {
  OverlapAccumulator acc(p.n_out);
  const int64_t count = NumElements(out_shape);
  std::vector<int64_t> coord(out_shape.size(), 0);
  for (int64_t o = 0; o < count; ++o) {
    int64_t i = base;
    for (size_t d = 0; d < coord.size(); ++d) i += coord[d] * stride[d];
    if (inside(coord)) acc.Read(i * p.ei);
    acc.Write((o + 1) * p.eo);
    for (size_t d = coord.size(); d-- > 0;) {
      if (++coord[d] < out_shape[d]) break;
      coord[d] = 0;
    }
  }
  return acc.safe_overlap();
}

bool Always(const std::vector<int64_t>&) { return true; }

// First valid tap of a window starting at `origin` (stride/dilation already applied), or -1.
int64_t FirstValidTap(int64_t origin, int64_t taps, int64_t dilation, int64_t extent) {
  for (int64_t t = 0; t < taps; ++t) {
    const int64_t at = origin + dilation * t;
    if (at >= 0 && at < extent) return at;
  }
  return -1;
}

// Window ops: for each output position, `channel_read(c)` gives the lowest input channel the
// step writing output channel c reads. Steps run b, oy, ox, c like the reference kernels.
template <typename ChannelRead>
int64_t ReplayWindow(const Pair& p, const Window2D& w, int64_t in_c, int64_t out_c,
                     ChannelRead channel_read) {
  OverlapAccumulator acc(p.n_out);
  const int64_t batches = p.in.shape[0];
  int64_t step = 0;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t oy = 0; oy < w.out_h; ++oy) {
      const int64_t iy = FirstValidTap(oy * w.stride_h - w.pad_top, w.k_h, w.dil_h, w.in_h);
      for (int64_t ox = 0; ox < w.out_w; ++ox) {
        const int64_t ix = FirstValidTap(ox * w.stride_w - w.pad_left, w.k_w, w.dil_w, w.in_w);
        const int64_t pixel = ((b * w.in_h + iy) * w.in_w + ix) * in_c;
        for (int64_t c = 0; c < out_c; ++c, ++step) {
          if (iy >= 0 && ix >= 0) acc.Read((pixel + channel_read(c)) * p.ei);
          acc.Write((step + 1) * p.eo);
        }
      }
    }
  }
  return acc.safe_overlap();
}

Window2D WindowOf(const Pair& p, const Node& n, int64_t k_h, int64_t k_w) {
  return ComputeWindow(n.attrs, p.in.shape[1], p.in.shape[2], k_h, k_w).value();
}

// min over integer o in [0, last] of coef_read * max(0, o*stride - pad) - coef_write * o:
// convex piecewise linear, so an end point or a point beside the kink.
int64_t MinPaddedTerm(int64_t last, int64_t stride, int64_t pad, int64_t coef_read,
                      int64_t coef_write) {
  int64_t best = 0;
  const int64_t kink = pad / stride;
  for (int64_t o : {int64_t{0}, last, kink, kink + 1}) {
    if (o < 0 || o > last) continue;
    best = std::min(best, coef_read * std::max<int64_t>(0, o * stride - pad) - coef_write * o);
  }
  return best;
}

// min over x in [0, last] of a linear function a + b*x (its end points).
int64_t MinLinear(int64_t last, int64_t slope) { return std::min<int64_t>(0, slope * last); }

int64_t Clamp(const Pair& p, int64_t value) { return std::clamp<int64_t>(value, 0, p.n_out); }

}  // namespace

std::optional<int64_t> AlgorithmicElementwise(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p) return std::nullopt;
  return ReplayRowMajor(*p, p->out.shape, RowMajorStrides(p->out.shape), 0, Always);
}

std::optional<int64_t> AlgorithmicBroadcast(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p) return std::nullopt;
  return ReplayRowMajor(*p, p->out.shape, BroadcastStrides(p->in.shape, p->out.shape), 0, Always);
}

std::optional<int64_t> AlgorithmicConv2D(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p || input != 0) return std::nullopt;
  const Shape& f = g.value(n.inputs[1]).shape;  // [out_c, k_h, k_w, filter_c]
  const int64_t in_c = p->in.shape[3], out_c = f[0], filter_c = f[3];
  const int64_t per_group = out_c / (in_c / filter_c);
  return ReplayWindow(*p, WindowOf(*p, n, f[1], f[2]), in_c, out_c,
                      [&](int64_t oc) { return oc / per_group * filter_c; });
}

std::optional<int64_t> AlgorithmicDepthwise(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p || input != 0) return std::nullopt;
  const Shape& f = g.value(n.inputs[1]).shape;  // [1, k_h, k_w, out_c]
  const int64_t in_c = p->in.shape[3], mult = f[3] / in_c;
  return ReplayWindow(*p, WindowOf(*p, n, f[1], f[2]), in_c, f[3],
                      [&](int64_t oc) { return oc / mult; });
}

std::optional<int64_t> AlgorithmicPool(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p || input != 0) return std::nullopt;
  const auto& filter = n.attrs.Ints("filter");
  const int64_t c = p->in.shape[3];
  return ReplayWindow(*p, WindowOf(*p, n, filter[0], filter[1]), c, c,
                      [](int64_t ch) { return ch; });
}

std::optional<int64_t> AlgorithmicFullyConnected(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p || input != 0) return std::nullopt;
  const Shape& w = g.value(n.inputs[1]).shape;
  const int64_t out_c = w[0], depth = w[1], batches = depth == 0 ? 0 : p->in.elements() / depth;
  OverlapAccumulator acc(p->n_out);
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t oc = 0; oc < out_c; ++oc) {
      if (depth > 0) acc.Read(b * depth * p->ei);
      acc.Write((b * out_c + oc + 1) * p->eo);
    }
  }
  return acc.safe_overlap();
}

std::optional<int64_t> AlgorithmicSoftmax(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p) return std::nullopt;
  const int64_t depth = p->in.shape.empty() ? 0 : p->in.shape.back();
  const int64_t rows = depth == 0 ? 0 : p->in.elements() / depth;
  OverlapAccumulator acc(p->n_out);
  for (int64_t r = 0; r < rows; ++r) {
    acc.Read(r * depth * p->ei);  // the passes over the row before its first write
    for (int64_t c = 0; c < depth; ++c) {
      acc.Read((r * depth + c) * p->ei);
      acc.Write((r * depth + c + 1) * p->eo);
    }
  }
  return acc.safe_overlap();
}

// The float kernel's 4-D keep-dims mean over H and W reads per (batch, channel) before each
// write; every other mean (and every integer mean) zeroes its output before reading anything.
bool IsMeanOverHeightWidth(const Node& n, const Value& input) {
  const Shape& in = input.shape;
  const auto& axes = n.attrs.Ints("axes");
  if (input.dtype != DType::kF32 || in.size() != 4 || axes.size() != 2 ||
      n.attrs.Int("keepdims") == 0)
    return false;
  auto norm = [](int64_t a) { return a < 0 ? a + 4 : a; };
  return std::min(norm(axes[0]), norm(axes[1])) == 1 && std::max(norm(axes[0]), norm(axes[1])) == 2;
}

std::optional<int64_t> AlgorithmicMean(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p || input != 0) return std::nullopt;
  if (!IsMeanOverHeightWidth(n, p->in)) return 0;  // the output is zeroed before any read
  const Shape& s = p->in.shape;
  OverlapAccumulator acc(p->n_out);
  for (int64_t b = 0; b < s[0]; ++b) {
    for (int64_t d = 0; d < s[3]; ++d) {
      if (s[1] * s[2] > 0) acc.Read((b * s[1] * s[2] * s[3] + d) * p->ei);
      acc.Write((b * s[3] + d + 1) * p->eo);
    }
  }
  return acc.safe_overlap();
}

std::optional<int64_t> AlgorithmicConcat(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p) return std::nullopt;
  const Shape& out = p->out.shape;
  int64_t axis = n.attrs.Int("axis");
  if (axis < 0) axis += static_cast<int64_t>(out.size());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < out.size(); ++d) inner *= out[d];
  OverlapAccumulator acc(p->n_out);
  int64_t o = 0;
  for (int64_t k = 0; k < outer; ++k) {
    for (size_t j = 0; j < n.inputs.size(); ++j) {
      const int64_t copy = g.value(n.inputs[j]).shape[static_cast<size_t>(axis)] * inner;
      for (int64_t t = 0; t < copy; ++t, ++o) {
        if (static_cast<int>(j) == input) acc.Read((k * copy + t) * p->ei);
        acc.Write((o + 1) * p->eo);
      }
    }
  }
  return acc.safe_overlap();
}

std::optional<int64_t> AlgorithmicSlice(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p) return std::nullopt;
  const std::vector<int64_t> stride = RowMajorStrides(p->in.shape);
  const auto& begin = n.attrs.Ints("begin");
  int64_t base = 0;
  for (size_t d = 0; d < stride.size(); ++d) base += begin[d] * stride[d];
  return ReplayRowMajor(*p, p->out.shape, stride, base, Always);
}

std::optional<int64_t> AlgorithmicTranspose(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p) return std::nullopt;
  const std::vector<int64_t> in_stride = RowMajorStrides(p->in.shape);
  const auto& perm = n.attrs.Ints("perm");
  std::vector<int64_t> stride(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) stride[d] = in_stride[static_cast<size_t>(perm[d])];
  return ReplayRowMajor(*p, p->out.shape, stride, 0, Always);
}

std::optional<int64_t> AlgorithmicPad(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p || input != 0) return std::nullopt;
  const auto& pads = n.attrs.Ints("paddings");
  const Shape& in = p->in.shape;
  const std::vector<int64_t> stride = RowMajorStrides(in);
  int64_t base = 0;
  for (size_t d = 0; d < in.size(); ++d) base -= pads[2 * d] * stride[d];
  return ReplayRowMajor(*p, p->out.shape, stride, base, [&](const std::vector<int64_t>& coord) {
    for (size_t d = 0; d < coord.size(); ++d) {
      const int64_t c = coord[d] - pads[2 * d];
      if (c < 0 || c >= in[d]) return false;
    }
    return true;
  });
}

std::optional<int64_t> AlgorithmicResizeBilinear(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p || input != 0) return std::nullopt;
  const Shape& in = p->in.shape;
  const Shape& out = p->out.shape;
  const int64_t channels = in[3];
  auto at = [&](int64_t b, int32_t y, int32_t x) {
    return ((b * in[1] + y) * in[2] + x) * channels;
  };
  OverlapAccumulator acc(p->n_out);
  int64_t o = 0;
  // Per output element its four neighbours (the least one binds), then the write.
  ForEachBilinearPixel(
      in, out, n.attrs.Int("align_corners") != 0, n.attrs.Int("half_pixel_centers") != 0,
      p->in.dtype != DType::kF32,
      [&](int64_t b, int32_t, int32_t, const BilinearTap& ty, const BilinearTap& tx) {
        const int64_t first =
            std::min(std::min(at(b, ty.lower, tx.lower), at(b, ty.upper, tx.lower)),
                     std::min(at(b, ty.lower, tx.upper), at(b, ty.upper, tx.upper)));
        for (int64_t c = 0; c < channels; ++c) {
          acc.Read((first + c) * p->ei);
          acc.Write(++o * p->eo);
        }
      });
  return acc.safe_overlap();
}

std::optional<int64_t> TransposeConvOverlap(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p || input != 0) return std::nullopt;
  // int8 scatters into its scratch buffer and writes the output only after the last read.
  if (p->in.dtype != DType::kF32) return p->n_out;
  // Float zeroes the whole output first, so O_s is the first input byte the scatter reads:
  // that of the first input pixel (channel 0) with a filter tap inside the output.
  const Shape& in = p->in.shape;
  const Shape& filter = g.value(n.inputs[1]).shape;
  const Shape& out = p->out.shape;
  if (filter[0] == 0 || in[3] == 0) return p->n_out;
  const TransposeConvGeometry geo{
      .stride_h = n.attrs.Ints("stride")[0],
      .stride_w = n.attrs.Ints("stride")[1],
      .pad_h = TransposeConvPadding(out[1], filter[1], n.attrs.Ints("stride")[0],
                                    n.attrs.Str("padding") == "same"),
      .pad_w = TransposeConvPadding(out[2], filter[2], n.attrs.Ints("stride")[1],
                                    n.attrs.Str("padding") == "same")};
  auto lands = [](int64_t origin, int64_t taps, int64_t size) {
    return origin < size && origin + taps > 0;  // some tap in [0, size)
  };
  for (int64_t b = 0; b < in[0]; ++b) {
    for (int64_t iy = 0; iy < in[1]; ++iy) {
      if (!lands(iy * geo.stride_h - geo.pad_h, filter[1], out[1])) continue;
      for (int64_t ix = 0; ix < in[2]; ++ix) {
        if (!lands(ix * geo.stride_w - geo.pad_w, filter[2], out[2])) continue;
        return Clamp(*p, (((b * in[1] + iy) * in[2] + ix) * in[3]) * p->ei);
      }
    }
  }
  return p->n_out;  // no input element is read at all
}

std::optional<int64_t> AlgorithmicMirrorPad(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p || input != 0) return std::nullopt;
  const Shape& in = p->in.shape;
  const Shape& out = p->out.shape;
  const auto& pads = n.attrs.Ints("paddings");
  const int64_t offset = n.attrs.Str("mode") == "reflect" ? 1 : 0;
  const std::vector<int64_t> in_stride = RowMajorStrides(in);
  OverlapAccumulator acc(p->n_out);
  std::vector<int64_t> coord(out.size(), 0);
  const int64_t count = p->out.elements();
  for (int64_t o = 0; o < count; ++o) {
    int64_t flat = 0;
    for (size_t d = 0; d < out.size(); ++d)
      flat += MirrorPadSource(coord[d], pads[2 * d], in[d], offset) * in_stride[d];
    acc.Read(flat * p->ei);
    acc.Write((o + 1) * p->eo);
    for (size_t d = coord.size(); d-- > 0;) {
      if (++coord[d] < out[d]) break;
      coord[d] = 0;
    }
  }
  return acc.safe_overlap();
}

std::optional<int64_t> AlgorithmicBatchToSpaceNd(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p || input != 0) return std::nullopt;
  OverlapAccumulator acc(p->n_out);
  ForEachBatchToSpacePixel(p->in.shape, p->out.shape, n.attrs.Ints("block_shape"),
                           n.attrs.Ints("crops"), [&](int64_t from, int64_t to, int64_t depth) {
                             for (int64_t c = 0; c < depth; ++c) {
                               acc.Read((from + c) * p->ei);
                               acc.Write((to + c + 1) * p->eo);
                             }
                           });
  return acc.safe_overlap();
}

std::optional<int64_t> AlgorithmicSpaceToBatchNd(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p || input != 0) return std::nullopt;
  OverlapAccumulator acc(p->n_out);
  ForEachSpaceToBatchPixel(p->in.shape, p->out.shape, n.attrs.Ints("block_shape"),
                           n.attrs.Ints("paddings"), [&](int64_t to, int64_t from, int64_t depth) {
                             for (int64_t c = 0; c < depth; ++c) {
                               if (from >= 0) acc.Read((from + c) * p->ei);
                               acc.Write((to + c + 1) * p->eo);
                             }
                           });
  return acc.safe_overlap();
}

std::optional<int64_t> AnalyticGatherAxis(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p || input != 0 || p->ei != p->eo) return std::nullopt;
  if (p->out.elements() == 0) return p->n_out;
  const GatherView v = GatherView::Of(p->in.shape, g.value(n.inputs[1]).shape, n.attrs.Int("axis"),
                                      n.attrs.Int("batch_dims"));
  // Output element ((q * coords + c) * inner + k) is written after reading params element
  // ((q * axis + index) * inner + k), index >= 0, so reading at index 0 bounds O_s for any
  // index values: the largest (output - read) distance binds.
  const int64_t slices = v.batch * v.outer;
  const int64_t spread = v.coords >= v.axis_size ? (slices - 1) * (v.coords - v.axis_size) : 0;
  return Clamp(*p, p->n_out - (spread + v.coords - 1) * v.inner * p->eo);
}

std::optional<int64_t> AlgorithmicCumsum(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p || input != 0) return std::nullopt;
  const bool exclusive = n.attrs.Int("exclusive") != 0;
  OverlapAccumulator acc(p->n_out);
  ForEachCumsumStep(p->in.shape, n.attrs.Int("axis"), n.attrs.Int("reverse") != 0,
                    [&](int64_t i, bool) {
                      if (exclusive) acc.Write((i + 1) * p->eo);
                      acc.Read(i * p->ei);
                      if (!exclusive) acc.Write((i + 1) * p->eo);
                    });
  return acc.safe_overlap();
}

std::optional<int64_t> AlgorithmicL2Normalization(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p || input != 0) return std::nullopt;
  const int64_t depth = p->in.shape.empty() ? 1 : p->in.shape.back();
  const int64_t rows = depth == 0 ? 0 : p->in.elements() / depth;
  OverlapAccumulator acc(p->n_out);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < depth; ++c) acc.Read((r * depth + c) * p->ei);  // sum of squares
    for (int64_t c = 0; c < depth; ++c) {
      acc.Read((r * depth + c) * p->ei);
      acc.Write((r * depth + c + 1) * p->eo);
    }
  }
  return acc.safe_overlap();
}

std::optional<int64_t> AlgorithmicTfliteBatchMatMul(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p || input > 1) return std::nullopt;
  const BatchMatMulGeometry geo =
      BatchMatMulGeometry::Of(g.value(n.inputs[0]).shape, g.value(n.inputs[1]).shape,
                              n.attrs.Int("adj_x") != 0, n.attrs.Int("adj_y") != 0);
  const int64_t stride = input == 0 ? geo.lhs_depth_stride : geo.rhs_depth_stride;
  OverlapAccumulator acc(p->n_out);
  ForEachBatchMatMulOutput(geo, [&](int64_t o, int64_t l, int64_t r) {
    const int64_t start = input == 0 ? l : r;
    for (int64_t k = 0; k < geo.depth; ++k) acc.Read((start + k * stride) * p->ei);
    acc.Write((o + 1) * p->eo);
  });
  return acc.safe_overlap();
}

std::optional<int64_t> AnalyticElementwise(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p) return std::nullopt;
  const int64_t last = p->out.elements() - 1;
  return Clamp(*p, p->n_out + MinLinear(std::max<int64_t>(last, 0), p->ei - p->eo));
}

std::optional<int64_t> AnalyticBroadcast(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p || p->out.elements() == 0) return p ? std::optional<int64_t>(0) : std::nullopt;
  // o - i(o) only grows along a row-major walk, so the last element binds.
  const int64_t last_o = p->out.elements() - 1, last_i = p->in.elements() - 1;
  return Clamp(*p, p->n_out - last_o * p->eo + last_i * p->ei);
}

std::optional<int64_t> AnalyticWindow(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p || input != 0) return std::nullopt;
  const Shape& in = p->in.shape;
  const Shape& out = p->out.shape;
  int64_t k_h, k_w, chan_term;
  const int64_t in_c = in[3], out_c = out[3];
  if (n.op == "max_pool2d" || n.op == "avg_pool2d") {
    const auto& filter = n.attrs.Ints("filter");
    k_h = filter[0];
    k_w = filter[1];
    chan_term = MinLinear(out_c - 1, p->ei - p->eo);  // channel c reads c, writes c
  } else {
    const Shape& f = g.value(n.inputs[1]).shape;
    k_h = f[1];
    k_w = f[2];
    if (n.op == "depthwise_conv2d") {
      const int64_t mult = out_c / in_c;  // the last multiplier of channel ic writes ic*M + M - 1
      chan_term = MinLinear(in_c - 1, p->ei - mult * p->eo) - (mult - 1) * p->eo;
    } else {
      const int64_t groups = in_c / f[3], per_group = out_c / groups;  // last channel of group
      chan_term = MinLinear(groups - 1, f[3] * p->ei - per_group * p->eo) - (per_group - 1) * p->eo;
    }
  }
  const Window2D w = WindowOf(*p, n, k_h, k_w);
  const int64_t row_read = w.in_w * in_c * p->ei, row_write = w.out_w * out_c * p->eo;
  const int64_t col_read = in_c * p->ei, col_write = out_c * p->eo;
  const int64_t batch_slope = w.in_h * row_read - w.out_h * row_write;
  const int64_t total = MinLinear(in[0] - 1, batch_slope) +
                        MinPaddedTerm(w.out_h - 1, w.stride_h, w.pad_top, row_read, row_write) +
                        MinPaddedTerm(w.out_w - 1, w.stride_w, w.pad_left, col_read, col_write) +
                        chan_term;
  return Clamp(*p, p->n_out + total);
}

std::optional<int64_t> AnalyticFullyConnected(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p) return std::nullopt;
  if (input != 0) return 0;
  const Shape& w = g.value(n.inputs[1]).shape;
  const int64_t out_c = w[0], depth = w[1], batches = depth == 0 ? 0 : p->in.elements() / depth;
  if (batches == 0 || out_c == 0) return 0;
  // Step (b, oc) reads from b * depth after writing b * out_c + oc outputs: last oc binds.
  return Clamp(
      *p, p->n_out + MinLinear(batches - 1, depth * p->ei - out_c * p->eo) - (out_c - 1) * p->eo);
}

std::optional<int64_t> AnalyticMean(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p || input != 0) return std::nullopt;
  if (!IsMeanOverHeightWidth(n, p->in)) return 0;
  const Shape& s = p->in.shape;
  const int64_t total = MinLinear(s[0] - 1, s[1] * s[2] * s[3] * p->ei - s[3] * p->eo) +
                        MinLinear(s[3] - 1, p->ei - p->eo);
  return Clamp(*p, p->n_out + total);
}

std::optional<int64_t> AnalyticConcat(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p) return std::nullopt;
  if (p->in.elements() == 0) return p->n_out;
  const Shape& out = p->out.shape;
  int64_t axis = n.attrs.Int("axis");
  if (axis < 0) axis += static_cast<int64_t>(out.size());
  int64_t outer = 1, inner = 1, prefix = 0;
  for (int64_t d = 0; d < axis; ++d) outer *= out[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < out.size(); ++d) inner *= out[d];
  for (int j = 0; j < input; ++j)
    prefix += g.value(n.inputs[static_cast<size_t>(j)]).shape[static_cast<size_t>(axis)] * inner;
  const int64_t row_in = p->in.shape[static_cast<size_t>(axis)] * inner,
                row_out = out[static_cast<size_t>(axis)] * inner;
  // The input's last element binds: it lands furthest behind its own position.
  const int64_t last_o = (outer - 1) * row_out + prefix + row_in - 1, last_i = p->in.elements() - 1;
  return Clamp(*p, p->n_out - last_o * p->eo + last_i * p->ei);
}

std::optional<int64_t> AnalyticSlice(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p) return std::nullopt;
  // Each output element reads an input element at least as far into its buffer.
  return p->ei >= p->eo ? std::optional<int64_t>(p->n_out) : std::optional<int64_t>(0);
}

std::optional<int64_t> AnalyticPad(const Graph& g, const Node& n, int input) {
  const auto p = PairOf(g, n, input);
  if (!p || input != 0) return std::nullopt;
  if (p->in.elements() == 0) return p->n_out;
  const auto& pads = n.attrs.Ints("paddings");
  const std::vector<int64_t> out_stride = RowMajorStrides(p->out.shape);
  int64_t last_o = 0;
  for (size_t d = 0; d < p->in.shape.size(); ++d)
    last_o += (p->in.shape[d] - 1 + pads[2 * d]) * out_stride[d];
  return Clamp(*p, p->n_out - last_o * p->eo + (p->in.elements() - 1) * p->ei);
}

}  // namespace memfold
