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

#define MF_INSTANTIATE_GEOMETRY_MOVES(T)     \
  MF_INSTANTIATE_KERNEL_T(MirrorPad, T)      \
  MF_INSTANTIATE_KERNEL_T(BatchToSpaceNd, T) \
  MF_INSTANTIATE_KERNEL_T(SpaceToBatchNd, T)
MF_INSTANTIATE_GEOMETRY_MOVES(float)
MF_INSTANTIATE_GEOMETRY_MOVES(int8_t)
MF_INSTANTIATE_GEOMETRY_MOVES(uint8_t)
MF_INSTANTIATE_GEOMETRY_MOVES(int16_t)
MF_INSTANTIATE_GEOMETRY_MOVES(int32_t)
MF_INSTANTIATE_GEOMETRY_MOVES(int64_t)
#undef MF_INSTANTIATE_GEOMETRY_MOVES

}  // namespace memfold
