// The int8 convolution, depthwise convolution and fully-connected kernels (those of
// int_kernels.h when their prepare stored SimdMultipliers records, HasSimdRecords; the conv of
// one group) built for speed on a 32-bit micro-controller (Armv7E-M DSP instructions through
// kernels/dsp.h, with the same bits computed portably on the host): 32-bit indices, the window
// clipped once per output pixel instead of four bounds checks per tap, four input channels per
// load, requantisation inline. Outputs are bit-identical with TFLM's reference kernels (the
// products are summed in another order, but int32 sums wrap, so every order gives the same bits).
//
// Access order, which diagonal memory optimisation depends on: output channels are produced in
// blocks of kInt8ChannelBlock; every read a block needs happens before the block's first
// write, and blocks and pixels are written in the reference's order. A read therefore happens
// no later, relative to the writes, than in TFLM's reference kernel, so the safe overlap is
// never smaller than the reference order's, which ops/overlap_models.cc computes and the
// planner uses (a plan must also hold when TFLM runs it from an exported offline plan); it is
// larger by at most Int8SimdOverlapSlack output elements.
//
// Preconditions: those of the int8 kernels (int_kernels.h); HasSimdRecords; the conv has one group
// (Int8ConvIsSimd).
// Time: O(MACs), as the reference.
#pragma once

#include <cstdint>
#include <string_view>

#include "memfold/ops/kernels/kernel_context.h"
#include "memfold/ops/kernels/quant_math.h"

namespace memfold {

// Output channels per block of the SIMD kernels (the accumulators held in registers).
inline constexpr int64_t kInt8ChannelBlock = 4;

// Whether the int8 conv with `in_c` input channels and filters of `filter_c` runs the SIMD
// kernel (one group; grouped convs run the reference loop).
inline bool Int8ConvIsSimd(int64_t in_c, int64_t filter_c) { return in_c == filter_c; }

// Whether a node of `op` whose input 0 has type `input` runs a SIMD kernel (`in_c` and
// `filter_c`: its input channels and filter depth, for a conv).
inline bool RunsInt8Simd(std::string_view op, DType input, int64_t in_c, int64_t filter_c) {
  if (input != DType::kI8) return false;
  if (op == "conv2d") return Int8ConvIsSimd(in_c, filter_c);
  return op == "depthwise_conv2d" || op == "fully_connected";
}

// Whether the SIMD conv (not pointwise) gathers each output pixel's whole window before its
// first write: a window (k_h * k_w * in_c bytes) of at most kInt8ConvPatchBytes whose padding
// value, the input zero point, is an int8 value.
inline constexpr int64_t kInt8ConvPatchBytes = 128;
inline bool Int8ConvGathersWindow(int64_t window_bytes, int64_t input_zero_point) {
  return window_bytes <= kInt8ConvPatchBytes && input_zero_point >= -128 && input_zero_point <= 127;
}

// How many output elements the safe overlap of a SIMD kernel can exceed the reference order's:
// the rest of a block of channels, or for a conv that gathers its window, the rest of the
// pixel's out_c channels (all its reads come before the pixel's first write).
inline int64_t Int8SimdOverlapSlack(bool gathers_window, int64_t out_c) {
  return gathers_window && out_c > kInt8ChannelBlock ? out_c - 1 : kInt8ChannelBlock - 1;
}

// Whether the prepare stored PrepareMultiplier records (`records` of them: one per output
// channel, or one for a per-tensor fully-connected layer; then zero biases if the node has no
// bias), which every multiplier of a non-negative scale has; otherwise (a negative scale) it
// stored the two words per channel of the reference loops, which run then.
inline bool HasSimdRecords(const KernelContext& ctx, int64_t records) {
  return ctx.prepared.size() >= static_cast<size_t>(records) * kPreparedMultiplierWords;
}

template <typename A>
void Conv2DI8Simd(const KernelContext& ctx);
template <typename A>
void DepthwiseConv2DI8Simd(const KernelContext& ctx);
template <typename A>
void FullyConnectedI8Simd(const KernelContext& ctx);

}  // namespace memfold
