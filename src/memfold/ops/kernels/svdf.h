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

#include <cstdint>
#include <optional>
#include <vector>

#include "memfold/ops/registry.h"

namespace memfold {

// int8 input; weights_time and state both int8 or both int16 (EvalIntegerSvdfReference). The
// fused activation is ignored, as in TFLM: the result is only clamped to int8.
template <typename A>
void SvdfI8(const KernelContext& ctx);
// float32 (EvalFloatSvdfReference).
template <typename A>
void SvdfF32(const KernelContext& ctx);

// Scratch TFLM requests in Prepare: int8 — batch * filters int32 (time products), then
// batch * units int32 (sums); float — batch * filters floats.
std::vector<int64_t> SvdfScratch(const Graph& graph, const Node& node);

// Safe overlap (diagonal memory optimisation) of the output over input 0: both kernels read the
// whole input in the feature matmul before they write the first output element, so it is the
// whole output, exactly (an algorithmic and analytic model in one). nullopt for other inputs.
// O(1).
std::optional<int64_t> SvdfOverlap(const Graph& graph, const Node& node, int input);

}  // namespace memfold
