// The int8 convolution, depthwise convolution and fully-connected kernels (DepthwiseConv2DI8
// and FullyConnectedI8 of int_kernels.h; the conv of one group) built for speed on a
// 32-bit micro-controller (Armv7E-M DSP instructions through kernels/dsp.h, with the same bits
// computed portably on the host): 32-bit indices, the window clipped once per output pixel
// instead of four bounds checks per tap, four input channels per load, requantisation inline.
// Outputs are bit-identical with TFLM's reference kernels (the products are summed in another
// order, but int32 sums wrap, so every order gives the same bits).
//
// Access order, which diagonal memory optimisation depends on: output channels are produced in
// blocks of kInt8ChannelBlock; every read a block needs happens before the block's first
// write, and blocks and pixels are written in the reference's order. A read therefore happens
// no later, relative to the writes, than in the reference kernel, so the safe overlap is never
// smaller; ops/overlap_models.cc replays the same blocks, so its algorithmic O_s equals the
// trace of these kernels.
//
// Preconditions: those of the int8 kernels (int_kernels.h); the conv has one group
// (Int8ConvIsSimd).
// Time: O(MACs), as the reference.
#pragma once

#include <cstdint>

#include "memfold/ops/kernels/kernel_context.h"

namespace memfold {

// Output channels per block of the SIMD kernels (the accumulators held in registers).
inline constexpr int64_t kInt8ChannelBlock = 4;

// Whether the int8 conv with `in_c` input channels and filters of `filter_c` runs the SIMD
// kernel (one group; grouped convs run the reference loop).
inline bool Int8ConvIsSimd(int64_t in_c, int64_t filter_c) { return in_c == filter_c; }

template <typename A>
void Conv2DI8Simd(const KernelContext& ctx);

}  // namespace memfold
