// Memory-access models of memfold's kernels for diagonal memory optimisation: for output 0
// and one input of a node, the safe overlap O_s in bytes (REFERENCE.md §1).
//
// *Algorithmic* models replay the kernel's loop nest computing offsets only (the paper's
// minR / maxW method) and feed them to the same OverlapAccumulator the trace method uses, so
// they are exact for the kernel's loop order; cost O(output elements), never O(MACs).
// *Analytic* models are closed forms, O(rank): for window ops the read offset of a step is
// separable into row, column, channel and batch terms, each convex piecewise linear, so the
// minimum lies at an end point or at the padding kink of each term. They never exceed the
// exact value (dilated windows with padding use max(0, start) for the first tap, a bound).
//
// Every model follows the loop order documented in kernels/float_kernels.h; an op whose
// integer kernel visits memory in another order gets its own model (or none). The int8 conv,
// depthwise conv and fully-connected models replay TFLM's reference order, the order a plan
// exported to TFLM must hold for; memfold's own int8 kernels (kernels/int8_simd.h) read no later
// than it, so their safe overlap is at least the model's, by at most three output elements.
#pragma once

#include <optional>

#include "memfold/ir/graph.h"

namespace memfold {

// Algorithmic (exact) models.
std::optional<int64_t> AlgorithmicElementwise(const Graph& g, const Node& n, int input);
std::optional<int64_t> AlgorithmicBroadcast(const Graph& g, const Node& n, int input);
std::optional<int64_t> AlgorithmicConv2D(const Graph& g, const Node& n, int input);
std::optional<int64_t> AlgorithmicDepthwise(const Graph& g, const Node& n, int input);
std::optional<int64_t> AlgorithmicPool(const Graph& g, const Node& n, int input);
std::optional<int64_t> AlgorithmicFullyConnected(const Graph& g, const Node& n, int input);
std::optional<int64_t> AlgorithmicSoftmax(const Graph& g, const Node& n, int input);
std::optional<int64_t> AlgorithmicMean(const Graph& g, const Node& n, int input);
std::optional<int64_t> AlgorithmicConcat(const Graph& g, const Node& n, int input);
std::optional<int64_t> AlgorithmicSlice(const Graph& g, const Node& n, int input);
std::optional<int64_t> AlgorithmicTranspose(const Graph& g, const Node& n, int input);
std::optional<int64_t> AlgorithmicPad(const Graph& g, const Node& n, int input);
// resize_bilinear: the kernel's taps (float or integer, as the input's type), output order.
std::optional<int64_t> AlgorithmicResizeBilinear(const Graph& g, const Node& n, int input);

// mirror_pad: output in order, each from the input element it mirrors.
std::optional<int64_t> AlgorithmicMirrorPad(const Graph& g, const Node& n, int input);
// batch_to_space_nd (input order, scattered writes) and space_to_batch_nd (output order).
std::optional<int64_t> AlgorithmicBatchToSpaceNd(const Graph& g, const Node& n, int input);
std::optional<int64_t> AlgorithmicSpaceToBatchNd(const Graph& g, const Node& n, int input);
// tflite_batch_matmul: each output element in index order after reading its LHS row and RHS
// column (broadcast operands are read again for every batch that shares them).
std::optional<int64_t> AlgorithmicTfliteBatchMatMul(const Graph& g, const Node& n, int input);
// cumsum: its loop order along the axis (an exclusive sum writes before it reads).
std::optional<int64_t> AlgorithmicCumsum(const Graph& g, const Node& n, int input);
// l2_normalization: per row, the pass over its squares, then element by element.
std::optional<int64_t> AlgorithmicL2Normalization(const Graph& g, const Node& n, int input);
// transpose_conv, exact in both roles: int8 reads its whole input before its first output write
// (the whole output); float zeroes its output first (the first input byte it reads). Input 0.
std::optional<int64_t> TransposeConvOverlap(const Graph& g, const Node& n, int input);

// Analytic (closed-form lower bound) models.
// gather_axis: which rows it reads depends on the index values at run time, so there is no
// exact replay; reading every slice at index 0 is the worst case, a bound for any indices.
std::optional<int64_t> AnalyticGatherAxis(const Graph& g, const Node& n, int input);
std::optional<int64_t> AnalyticElementwise(const Graph& g, const Node& n, int input);
std::optional<int64_t> AnalyticBroadcast(const Graph& g, const Node& n, int input);
std::optional<int64_t> AnalyticWindow(const Graph& g, const Node& n, int input);  // conv, dw, pools
std::optional<int64_t> AnalyticFullyConnected(const Graph& g, const Node& n, int input);
std::optional<int64_t> AnalyticMean(const Graph& g, const Node& n, int input);
std::optional<int64_t> AnalyticConcat(const Graph& g, const Node& n, int input);
std::optional<int64_t> AnalyticSlice(const Graph& g, const Node& n, int input);
std::optional<int64_t> AnalyticPad(const Graph& g, const Node& n, int input);

}  // namespace memfold
