// Host-side preparation of kernels, everything that needs the IR or the heap so that the
// kernels themselves stay freestanding: TFLM's Prepare (requantisation multipliers computed from
// the tensors' quantisation, in the precision TFLM uses, handed to the kernel as
// KernelContext::prepared; generated device code stores the same numbers as constants), the
// sizes of scratch buffers and the overlap models that read the graph. O(output channels).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "memfold/ir/graph.h"
#include "memfold/ops/kernels/kernel_context.h"

namespace memfold {

// Conv2D and depthwise conv on int8 input: per output channel (last output dimension) the
// multiplier double(in_scale) * double(filter_scale[c]) / double(out_scale), as
// PopulateConvolutionQuantizationParams computes it; [multipliers..., shifts...]. Empty for
// other input types.
std::vector<int32_t> PrepareConvI8(const KernelContext& ctx);

// Fully connected on int8 input (CalculateOpDataFullyConnected): per-channel filters as conv;
// a per-tensor filter as GetQuantizedConvolutionMultipler, whose product of the two scales is
// rounded to float before the division in double (one multiplier and shift).
std::vector<int32_t> PrepareFullyConnectedI8(const KernelContext& ctx);

// Leaky relu on int8 input (CalculateOpDataLeakyRelu): [identity multiplier, shift, alpha
// multiplier, shift] of in_scale / out_scale and in_scale * alpha / out_scale, products in float.
std::vector<int32_t> PrepareLeakyReluI8(const KernelContext& ctx);

// Cumsum on int8 input (TFLM's cumsum.cc CalculateOpData): [input multiplier, shift, output
// multiplier, shift] of in_scale / (2 in_scale) and 2 in_scale / (2^20 out_scale), in double.
std::vector<int32_t> PrepareCumsumI8(const KernelContext& ctx);

// Scratch of the quantised mean: one int32 sum per output element (int8 and int16 inputs).
std::vector<int64_t> MeanScratch(const Graph& graph, const Node& node);

// Scratch TFLM's TRANSPOSE_CONV requests in Prepare for int8 input: one int32 accumulator per
// output element (none for float, which accumulates in its output).
std::vector<int64_t> TransposeConvScratch(const Graph& graph, const Node& node);

// Scratch TFLM's MIRROR_PAD requests in Prepare: the output's and the input's row-major
// strides, rank ints each.
std::vector<int64_t> MirrorPadScratch(const Graph& graph, const Node& node);

// Scratch TFLM's SVDF requests in Prepare: int8 — batch * filters int32 (time products), then
// batch * units int32 (sums); float — batch * filters floats.
std::vector<int64_t> SvdfScratch(const Graph& graph, const Node& node);

// Safe overlap (diagonal memory optimisation) of SVDF's output over input 0: both kernels read
// the whole input in the feature matmul before they write the first output element, so it is
// the whole output, exactly (an algorithmic and analytic model in one). nullopt for other
// inputs. O(1).
std::optional<int64_t> SvdfOverlap(const Graph& graph, const Node& node, int input);

}  // namespace memfold
