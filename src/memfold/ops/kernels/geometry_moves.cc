// The data-movement kernels of geometry_kernels.h: MIRROR_PAD, BATCH_TO_SPACE_ND,
// SPACE_TO_BATCH_ND and GATHER, for every element type. Freestanding.
#include <array>
#include <bit>
#include <cstdint>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/geometry_kernels.h"
#include "memfold/ops/kernels/kernel_util.h"
#include "memfold/ops/kernels/quant_math.h"

namespace memfold {

template <typename A, typename T>
void MirrorPad(const KernelContext& ctx) {
  const ShapeView in = ctx.inputs[0].shape, out = ctx.outputs[0].shape;
  const std::span<const int64_t> pads = ctx.attrs.Ints("paddings");
  const int64_t offset = ctx.attrs.Str("mode") == "reflect" ? 1 : 0;
  const auto rank = static_cast<int64_t>(in.size());
  Out<A, int32_t> out_stride{reinterpret_cast<int32_t*>(ctx.scratch[0])};
  Out<A, int32_t> in_stride{reinterpret_cast<int32_t*>(ctx.scratch[1])};
  for (int64_t d = 0; d < rank; ++d) {
    out_stride.Set(d, 1);
    in_stride.Set(d, 1);
  }
  for (int64_t d = rank - 2; d >= 0; --d) {
    out_stride.Set(d, out_stride[d + 1] * static_cast<int32_t>(out[static_cast<size_t>(d) + 1]));
    in_stride.Set(d, in_stride[d + 1] * static_cast<int32_t>(in[static_cast<size_t>(d) + 1]));
  }
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  const int64_t n = ctx.outputs[0].elements();
  for (int64_t i = 0; i < n; ++i) {
    int64_t index = i, flat = 0;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t stride = out_stride[d];
      flat += MirrorPadSource(index / stride, pads[static_cast<size_t>(2 * d)],
                              in[static_cast<size_t>(d)], offset) *
              in_stride[d];
      index %= stride;
    }
    y.Set(i, x[flat]);
  }
}

template <typename A, typename T>
void BatchToSpaceNd(const KernelContext& ctx) {
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  ForEachBatchToSpacePixel(ctx.inputs[0].shape, ctx.outputs[0].shape, ctx.attrs.Ints("block_shape"),
                           ctx.attrs.Ints("crops"), [&](int64_t from, int64_t to, int64_t depth) {
                             for (int64_t c = 0; c < depth; ++c) y.Set(to + c, x[from + c]);
                           });
}

namespace {

// The value memset(&value, byte, sizeof(T)) leaves.
template <typename T>
T RepeatedByte(int32_t byte) {
  std::array<unsigned char, sizeof(T)> bytes;
  bytes.fill(static_cast<unsigned char>(byte));
  return std::bit_cast<T>(bytes);
}

}  // namespace

template <typename A, typename T>
void SpaceToBatchNd(const KernelContext& ctx) {
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  const T pad = RepeatedByte<T>(ZeroPoint(ctx.outputs[0]));
  ForEachSpaceToBatchPixel(ctx.inputs[0].shape, ctx.outputs[0].shape, ctx.attrs.Ints("block_shape"),
                           ctx.attrs.Ints("paddings"),
                           [&](int64_t to, int64_t from, int64_t depth) {
                             for (int64_t c = 0; c < depth; ++c)
                               y.Set(to + c, from < 0 ? pad : x[from + c]);
                           });
}

template <typename A, typename T>
void GatherAxis(const KernelContext& ctx) {
  const GatherView v = GatherView::Of(ctx.inputs[0].shape, ctx.inputs[1].shape,
                                      ctx.attrs.Int("axis"), ctx.attrs.Int("batch_dims"));
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  auto gather = [&](auto ids) {
    for (int64_t b = 0; b < v.batch; ++b) {
      for (int64_t o = 0; o < v.outer; ++o) {
        for (int64_t c = 0; c < v.coords; ++c) {
          const int64_t index = ids[b * v.coords + c];
          if (index < 0 || index >= v.axis_size) {
            ctx.Fail("an index lies outside the gathered axis (TFLM's GATHER fails there too)");
            return;
          }
          const int64_t from = ((b * v.outer + o) * v.axis_size + index) * v.inner;
          const int64_t to = ((b * v.outer + o) * v.coords + c) * v.inner;
          for (int64_t k = 0; k < v.inner; ++k) y.Set(to + k, x[from + k]);
        }
      }
    }
  };
  if (ctx.inputs[1].dtype == DType::kI64) {
    gather(In<A, int64_t>{ctx.inputs[1].ptr<int64_t>()});
  } else {
    gather(In<A, int32_t>{ctx.inputs[1].ptr<int32_t>()});
  }
}

#define MF_INSTANTIATE_GEOMETRY_MOVES(T)     \
  MF_INSTANTIATE_KERNEL_T(MirrorPad, T)      \
  MF_INSTANTIATE_KERNEL_T(BatchToSpaceNd, T) \
  MF_INSTANTIATE_KERNEL_T(SpaceToBatchNd, T) \
  MF_INSTANTIATE_KERNEL_T(GatherAxis, T)
MF_INSTANTIATE_GEOMETRY_MOVES(float)
MF_INSTANTIATE_GEOMETRY_MOVES(int8_t)
MF_INSTANTIATE_GEOMETRY_MOVES(uint8_t)
MF_INSTANTIATE_GEOMETRY_MOVES(int16_t)
MF_INSTANTIATE_GEOMETRY_MOVES(int32_t)
MF_INSTANTIATE_GEOMETRY_MOVES(int64_t)
#undef MF_INSTANTIATE_GEOMETRY_MOVES

}  // namespace memfold
