// SVDF (TFLite builtin 27), as TensorFlow Lite Micro's svdf_common.cc computes it.
//
// Inputs: input [batch, input_size], weights_feature [filters, input_size], weights_time
// [filters, memory], bias [filters / rank] (optional), activation_state [batch, filters * memory]
// (persistent state, updated in place). Output [batch, filters / rank].
//
// Each run: shift the whole state left by one element; write one new state column (the feature
// matmul, at column memory - 1 of every filter); dot each filter's memory row with its time
// weights into scratch 0; start scratch 1 (the float kernel: the output) from the bias, add the
// rank sums, then rescale (int8) or apply the fused activation (float). O(batch * filters *
// (input_size + memory)).
#pragma once

#include <cstddef>
#include <cstdint>

#include "memfold/ops/kernels/kernel_context.h"

namespace memfold {

// int8 input; weights_time and state both int8 or both int16 (EvalIntegerSvdfReference). The
// fused activation is ignored, as in TFLM: the result is only clamped to int8.
template <typename A>
void SvdfI8(const KernelContext& ctx);
// float32 (EvalFloatSvdfReference).
template <typename A>
void SvdfF32(const KernelContext& ctx);

// Input positions and the sizes SVDF works with.
inline constexpr size_t kSvdfInput = 0, kSvdfWeightsFeature = 1, kSvdfWeightsTime = 2;
struct SvdfDims {
  int64_t batch, input_size, filters, units, memory, rank;
  static SvdfDims Of(int64_t rank, ShapeView input, ShapeView weights_feature,
                     ShapeView weights_time) {
    SvdfDims d{};
    d.rank = rank;
    d.batch = input[0];
    d.input_size = input[1];
    d.filters = weights_feature[0];
    d.units = d.filters / d.rank;
    d.memory = weights_time[1];
    return d;
  }
};

}  // namespace memfold
