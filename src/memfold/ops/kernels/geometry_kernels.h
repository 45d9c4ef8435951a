// Kernels of TFLM's image-geometry and sequence operators: RESIZE_BILINEAR, TRANSPOSE_CONV,
// MIRROR_PAD, BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND, GATHER, CUMSUM and L2_NORMALIZATION. Each
// follows the loop order and arithmetic of the TFLM reference kernel named beside it (float
// arithmetic in float, integer paths bit for bit), so results match TFLM exactly and memory is
// visited in the order the safe-overlap models of ops/overlap_models.cc replay.
//
// The index arithmetic that both a kernel and its overlap model need lives here as inline
// functions, so the two cannot drift apart. Freestanding (the device runs these kernels too).
//
// Preconditions: shapes and attributes were checked by the op's inference function.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>

#include "memfold/ops/kernels/kernel_context.h"

namespace memfold {

// ---- RESIZE_BILINEAR (reference_ops::ResizeBilinear and ResizeBilinearInteger) -------------

// The source rows (or columns) of one output row: the interpolation position and the two
// neighbours it lies between. Float path: `position` in input pixels; integer path: in 1/1024
// input pixels.
struct BilinearTap {
  float position = 0;
  int32_t position_10 = 0;
  int32_t lower = 0;
  int32_t upper = 0;
};

// ResizeBilinear's scale of one axis, in float: in / out, or (in - 1) / (out - 1) with
// align_corners (when out > 1).
inline float BilinearScale(int32_t in_size, int32_t out_size, bool align_corners) {
  if (align_corners && out_size > 1)
    return static_cast<float>(in_size - 1) / static_cast<float>(out_size - 1);
  return static_cast<float>(in_size) / static_cast<float>(out_size);
}

// ComputeInterpolationValues: float position of output index `value`, its floor (at least 0)
// and ceiling (at most in_size - 1). The floor is also kept below in_size, which TFLM's
// arithmetic guarantees for every valid size and memfold makes sure of.
inline BilinearTap BilinearTapOf(int32_t value, float scale, bool half_pixel_centers,
                                 int32_t in_size) {
  BilinearTap tap;
  const float v = static_cast<float>(value);
  tap.position = half_pixel_centers ? (v + 0.5f) * scale - 0.5f : v * scale;
  const auto floor = static_cast<int32_t>(std::floor(tap.position));
  tap.lower = std::min(std::max(floor, int32_t{0}), in_size - 1);
  tap.upper = std::min(static_cast<int32_t>(std::ceil(tap.position)), in_size - 1);
  tap.upper = std::max(tap.upper, int32_t{0});
  return tap;
}

// ResizeBilinearInteger's scale of one axis in 1/1024 pixels, rounded to nearest.
inline int32_t BilinearScale10(int32_t in_size, int32_t out_size, bool align_corners) {
  if (align_corners && out_size > 1)
    return ((1 << 10) * (in_size - 1) + (out_size - 1) / 2) / (out_size - 1);
  return ((1 << 10) * in_size + out_size / 2) / out_size;
}

// ComputeInterpolationValuesInteger: the position in 1/1024 pixels, its truncated quotient
// (at least 0) and rounded-up quotient (at most in_size - 1). Inference keeps sizes below 2^20,
// so the 32-bit products cannot overflow.
inline BilinearTap BilinearTapOf10(int32_t value, int32_t scale_10, bool half_pixel_centers,
                                   int32_t in_size) {
  BilinearTap tap;
  tap.position_10 =
      half_pixel_centers ? value * scale_10 + scale_10 / 2 - (1 << 9) : value * scale_10;
  tap.lower = std::min(std::max(tap.position_10 / (1 << 10), int32_t{0}), in_size - 1);
  tap.upper = std::min((tap.position_10 + (1 << 10) - 1) / (1 << 10), in_size - 1);
  tap.upper = std::max(tap.upper, int32_t{0});
  return tap;
}

// The taps of every output row and column, for an NHWC input `in` and output `out`, computed
// the way the kernel for `integer` (int8) or float inputs computes them; visit(b, y, x, ty, tx)
// in the kernel's order (batch, output row, output column).
template <typename Visit>
void ForEachBilinearPixel(ShapeView in, ShapeView out, bool align_corners, bool half_pixel_centers,
                          bool integer, Visit visit) {
  const auto in_h = static_cast<int32_t>(in[1]), in_w = static_cast<int32_t>(in[2]);
  const auto out_h = static_cast<int32_t>(out[1]), out_w = static_cast<int32_t>(out[2]);
  const float scale_h = BilinearScale(in_h, out_h, align_corners);
  const float scale_w = BilinearScale(in_w, out_w, align_corners);
  const int32_t scale_h10 = BilinearScale10(in_h, out_h, align_corners);
  const int32_t scale_w10 = BilinearScale10(in_w, out_w, align_corners);
  for (int64_t b = 0; b < out[0]; ++b) {
    for (int32_t y = 0; y < out_h; ++y) {
      const BilinearTap ty = integer ? BilinearTapOf10(y, scale_h10, half_pixel_centers, in_h)
                                     : BilinearTapOf(y, scale_h, half_pixel_centers, in_h);
      for (int32_t x = 0; x < out_w; ++x) {
        const BilinearTap tx = integer ? BilinearTapOf10(x, scale_w10, half_pixel_centers, in_w)
                                       : BilinearTapOf(x, scale_w, half_pixel_centers, in_w);
        visit(b, y, x, ty, tx);
      }
    }
  }
}

// Output pixel by pixel (batch, row, column, channel), each from its four neighbours; float in
// float, int8 by ResizeBilinearInteger's 10-bit fixed point (round half away from zero).
template <typename A>
void ResizeBilinearF32(const KernelContext& ctx);
template <typename A>
void ResizeBilinearI8(const KernelContext& ctx);

// ---- TRANSPOSE_CONV (reference_ops::TransposeConv, reference_integer_ops::TransposeConv) ------

// TFLM's padding of one axis of a transposed convolution: ComputePaddingHeightWidth applied
// to the *output* size (the input of the convolution being transposed), dilation 1, in C's
// truncating integer arithmetic.
inline int64_t TransposeConvPadding(int64_t out_size, int64_t filter, int64_t stride, bool same) {
  const int64_t windows =
      same ? (out_size + stride - 1) / stride : (out_size + stride - filter) / stride;
  const int64_t total = (windows - 1) * stride + filter - out_size;
  return total > 0 ? total / 2 : 0;
}

struct TransposeConvGeometry {
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
};

// The strides ("stride" = [h, w]) and paddings ("padding" same or valid) of a node whose
// filter is `filter` [out_c, kh, kw, in_c] and output `out` (NHWC).
inline TransposeConvGeometry TransposeConvGeometryOf(const AttrArgs& attrs, ShapeView filter,
                                                     ShapeView out) {
  TransposeConvGeometry g;
  const std::span<const int64_t> stride = attrs.Ints("stride");
  g.stride_h = stride[0];
  g.stride_w = stride[1];
  const bool same = attrs.Str("padding") == "same";
  g.pad_h = TransposeConvPadding(out[1], filter[1], g.stride_h, same);
  g.pad_w = TransposeConvPadding(out[2], filter[2], g.stride_w, same);
  return g;
}

// The scatter of both reference kernels: for every input element (batch, y, x, in_channel) in
// order, every filter tap (fy, fx, out_channel) that lands inside the output;
// visit(input_index, filter_index, output_index).
template <typename Visit>
void ForEachTransposeConvTap(ShapeView in, ShapeView filter, ShapeView out,
                             const TransposeConvGeometry& g, Visit visit) {
  const int64_t in_h = in[1], in_w = in[2], in_c = in[3];
  const int64_t out_c = filter[0], k_h = filter[1], k_w = filter[2];
  const int64_t out_h = out[1], out_w = out[2];
  int64_t x_index = 0;
  for (int64_t b = 0; b < in[0]; ++b) {
    for (int64_t iy = 0; iy < in_h; ++iy) {
      for (int64_t ix = 0; ix < in_w; ++ix) {
        for (int64_t ic = 0; ic < in_c; ++ic, ++x_index) {
          const int64_t origin_x = ix * g.stride_w - g.pad_w;
          const int64_t origin_y = iy * g.stride_h - g.pad_h;
          for (int64_t fy = 0; fy < k_h; ++fy) {
            for (int64_t fx = 0; fx < k_w; ++fx) {
              for (int64_t oc = 0; oc < out_c; ++oc) {
                const int64_t oy = origin_y + fy, ox = origin_x + fx;
                if (ox < 0 || ox >= out_w || oy < 0 || oy >= out_h) continue;
                visit(x_index, ((oc * k_h + fy) * k_w + fx) * in_c + ic,
                      ((b * out_h + oy) * out_w + ox) * out_c + oc);
              }
            }
          }
        }
      }
    }
  }
}

// Float: the output zeroed, every product added into it in scatter order, then per output
// element the bias and the fused activation clamp. int8: the same scatter into an int32
// scratch buffer (output elements x 4 bytes, requested by the op's scratch), then bias,
// per-channel requantisation (multipliers from PrepareConvI8) and the output zero point. As in
// TFLM's Prepare, the int8 path clamps to the full int8 range: TFLM passes kTfLiteActNone to
// PopulateConvolutionQuantizationParams, so a fused activation does not act on int8.
template <typename A>
void TransposeConvF32(const KernelContext& ctx);
template <typename A>
void TransposeConvI8(const KernelContext& ctx);
template <typename A>
void TransposeConvI16(const KernelContext& ctx);

// ---- MIRROR_PAD (TFLM's mirror_pad.cc) --------------------------------------------------------

// GetInputDimension: the input index along one axis of output index `padded`, for `left`
// elements of padding before the `in_size` input ones; offset 1 mirrors without the edge
// (REFLECT), 0 with it (SYMMETRIC). Inference keeps the pads within in_size - offset, so the
// result is always an index of the input.
inline int64_t MirrorPadSource(int64_t padded, int64_t left, int64_t in_size, int64_t offset) {
  if (padded < left) {
    const int64_t original = left + offset - 1;
    return original - std::min(padded, original - offset);
  }
  padded -= left;
  if (padded >= in_size) {
    padded -= in_size;
    const int64_t original = in_size - (1 + offset);
    return original - std::min(padded, original);
  }
  return padded;
}

// Output element by element in order, each a copy of the input element GetFlatIndex maps it to
// (per axis: the quotient by the output's row-major stride, mirrored, times the input's
// stride). As TFLM, it keeps both stride arrays in the two scratch buffers its Prepare
// requests (rank int32 each). Attributes "paddings" ([before, after] per axis) and "mode"
// ("reflect" or "symmetric"). Every element type.
template <typename A, typename T>
void MirrorPad(const KernelContext& ctx);

// ---- BATCH_TO_SPACE_ND and SPACE_TO_BATCH_ND (reference_ops::BatchToSpaceND, SpaceToBatchND) --

// The [batch, height, width, depth] view TFLM takes of a 4-D NHWC tensor, or of a 3-D NHC one
// (width 1).
struct SpatialView {
  int64_t batch = 0, height = 0, width = 1, depth = 0;
  static SpatialView Of(ShapeView s) {
    if (s.size() == 4) return {s[0], s[1], s[2], s[3]};
    return {s[0], s[1], 1, s[2]};
  }
  int64_t At(int64_t b, int64_t y, int64_t x) const {
    return ((b * height + y) * width + x) * depth;
  }
};

// BatchToSpaceND's loop over the input (batch, row, column): every input pixel whose place in
// the output survives the crops; visit(input_offset, output_offset, depth), offsets in
// elements. "block_shape" [h(, w)] and "crops" [top, bottom(, left, right)].
template <typename Visit>
void ForEachBatchToSpacePixel(ShapeView in_shape, ShapeView out_shape,
                              std::span<const int64_t> block, std::span<const int64_t> crops,
                              Visit visit) {
  const SpatialView in = SpatialView::Of(in_shape), out = SpatialView::Of(out_shape);
  const bool four_d = in_shape.size() == 4;
  const int64_t block_h = block[0], block_w = four_d ? block[1] : 1;
  const int64_t crop_top = crops[0], crop_left = four_d ? crops[2] : 0;
  for (int64_t in_b = 0; in_b < in.batch; ++in_b) {
    const int64_t out_b = in_b % out.batch, spatial = in_b / out.batch;
    for (int64_t in_y = 0; in_y < in.height; ++in_y) {
      const int64_t out_y = in_y * block_h + spatial / block_w - crop_top;
      if (out_y < 0 || out_y >= out.height) continue;
      for (int64_t in_x = 0; in_x < in.width; ++in_x) {
        const int64_t out_x = in_x * block_w + spatial % block_w - crop_left;
        if (out_x < 0 || out_x >= out.width) continue;
        visit(in.At(in_b, in_y, in_x), out.At(out_b, out_y, out_x), in.depth);
      }
    }
  }
}

// SpaceToBatchND's loop over the output (batch, row, column): visit(output_offset,
// input_offset, depth) with input_offset -1 for a pixel of the padding. "block_shape" [h(, w)]
// and "paddings" [top, bottom(, left, right)].
template <typename Visit>
void ForEachSpaceToBatchPixel(ShapeView in_shape, ShapeView out_shape,
                              std::span<const int64_t> block, std::span<const int64_t> pads,
                              Visit visit) {
  const SpatialView in = SpatialView::Of(in_shape), out = SpatialView::Of(out_shape);
  const bool four_d = in_shape.size() == 4;
  const int64_t block_h = block[0], block_w = four_d ? block[1] : 1;
  const int64_t pad_top = pads[0], pad_left = four_d ? pads[2] : 0;
  for (int64_t out_b = 0; out_b < out.batch; ++out_b) {
    const int64_t in_b = out_b % in.batch;
    const int64_t shift_w = (out_b / in.batch) % block_w, shift_h = (out_b / in.batch) / block_w;
    for (int64_t out_y = 0; out_y < out.height; ++out_y) {
      for (int64_t out_x = 0; out_x < out.width; ++out_x) {
        const int64_t y = out_y * block_h + shift_h, x = out_x * block_w + shift_w;
        const bool padding =
            y < pad_top || y >= pad_top + in.height || x < pad_left || x >= pad_left + in.width;
        visit(out.At(out_b, out_y, out_x),
              padding ? int64_t{-1} : in.At(in_b, y - pad_top, x - pad_left), out.depth);
      }
    }
  }
}

// Copies of `depth` elements per pixel in the loop orders above. SpaceToBatchND fills the
// padding as TFLM's memset of the output zero point does (one-byte types: the zero point;
// float: 0).
template <typename A, typename T>
void BatchToSpaceNd(const KernelContext& ctx);
template <typename A, typename T>
void SpaceToBatchNd(const KernelContext& ctx);

// ---- GATHER (TFLM's gather.cc) ----------------------------------------------------------------

// The [batch, outer, coords, inner] view of a gather of `params` by `indices` along "axis"
// with "batch_dims" leading dimensions shared (both non-negative after import).
struct GatherView {
  int64_t batch = 1, outer = 1, coords = 1, inner = 1, axis_size = 0;
  static GatherView Of(ShapeView params, ShapeView indices, int64_t axis, int64_t batch_dims) {
    GatherView v;
    for (int64_t d = 0; d < static_cast<int64_t>(params.size()); ++d) {
      const int64_t n = params[static_cast<size_t>(d)];
      if (d < batch_dims) v.batch *= n;
      if (d >= batch_dims && d < axis) v.outer *= n;
      if (d > axis) v.inner *= n;
    }
    for (int64_t d = batch_dims; d < static_cast<int64_t>(indices.size()); ++d)
      v.coords *= indices[static_cast<size_t>(d)];
    v.axis_size = params[static_cast<size_t>(axis)];
    return v;
  }
};

// Per (batch, outer, coordinate) in order, the index (int32 or int64 input 1) is checked and the
// `inner` elements of its slice copied. An index outside [0, axis size) stops the kernel with a
// KernelError before anything of that slice is read (TFLM's runtime check).
template <typename A, typename T>
void GatherAxis(const KernelContext& ctx);

// ---- CUMSUM (reference_ops::CumSum, float and int8) ------------------------------------------

// reference_ops::CumSum's visiting order along "axis": for each position of the axes after it
// ("outer" in TFLM's names), each position of the axes before it, the axis positions in turn —
// every loop backwards when "reverse" is set. visit(element_index, first) with `first` at the
// start of each run along the axis.
template <typename Visit>
void ForEachCumsumStep(ShapeView shape, int64_t axis, bool reverse, Visit visit) {
  int64_t before = 1, after = 1, depth = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    const int64_t n = shape[static_cast<size_t>(d)];
    if (d < axis) before *= n;
    if (d > axis) after *= n;
    if (d == axis) depth = n;
  }
  for (int64_t a = 0; a < after; ++a) {
    const int64_t a_adj = reverse ? after - 1 - a : a;
    for (int64_t b = 0; b < before; ++b) {
      const int64_t b_adj = reverse ? before - 1 - b : b;
      for (int64_t k = 0; k < depth; ++k) {
        const int64_t k_adj = reverse ? depth - 1 - k : k;
        visit(a_adj + b_adj * depth * after + k_adj * after, k == 0);
      }
    }
  }
}

// Running sums along "axis" in that order; "exclusive" writes the sum before adding the element
// (so writes the output element before reading the input one). Float sums in float; int8 as
// TFLM's quantised CumSum: inputs shifted left 20 bits and rescaled by the input multiplier,
// summed in int32 from the rescaled input offset, then the output multiplier and zero point
// ([input multiplier, shift, output multiplier, shift] from PrepareCumsumI8).
template <typename A>
void CumsumF32(const KernelContext& ctx);
template <typename A>
void CumsumI8(const KernelContext& ctx);

// ---- L2_NORMALIZATION (reference_ops::L2Normalization, reference_integer_ops) ------------------

// Per row of the last axis, a pass that sums the squares, then a pass that writes each element
// divided by the row's norm. Float: x / max(sqrt(sum of x^2), 1e-6f) (TFLM's epsilon). int8:
// (x - input zero point) times GetInvSqrtQuantizedMultiplierExp of the integer sum of squares,
// shifted 7 bits up (the output's fixed 1/128 scale), clamped to int8 — no epsilon, and the
// output's own quantisation unused, as in TFLM.
template <typename A>
void L2NormalizationF32(const KernelContext& ctx);
template <typename A>
void L2NormalizationI8(const KernelContext& ctx);

}  // namespace memfold
