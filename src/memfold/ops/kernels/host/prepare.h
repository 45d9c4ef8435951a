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
// PopulateConvolutionQuantizationParams computes it; [multipliers..., shifts...] (int16 input
// alike). Empty for float input.
std::vector<int32_t> PrepareConvI8(const KernelContext& ctx);

// The same multipliers as PrepareMultiplier records (kPreparedMultiplierWords int32 per channel),
// the form the int8 SIMD kernels (int8_simd.h) read, from PrepareConvI8's [multipliers...,
// shifts...]; those unchanged when a multiplier has no record (a negative scale's: the kernels
// then run the reference loops, HasSimdRecords).
std::vector<int32_t> SimdMultipliers(const std::vector<int32_t>& quantized);
// PrepareConvI8 for the conv and the depthwise conv: SimdMultipliers where the node runs an int8
// SIMD kernel.
std::vector<int32_t> PrepareConv2DI8(const KernelContext& ctx);
std::vector<int32_t> PrepareDepthwiseI8(const KernelContext& ctx);

// Fully connected on int8 and int16 input (CalculateOpDataFullyConnected): per-channel filters as
// conv; a per-tensor filter as GetQuantizedConvolutionMultipler, whose product of the two scales
// is rounded to float before the division in double (one multiplier and shift). int8: as
// SimdMultipliers; int16: [multipliers..., shifts...].
std::vector<int32_t> PrepareFullyConnectedInt(const KernelContext& ctx);

// SOFTMAX on int16 input (softmax_common.cc InitializeLutForInt16, CalculateSoftmaxParams): the
// input multiplier and left shift of in_scale * beta / (10 / 65535), then TFLM's exp table over
// [-10, 0] and 1 / (1 + x) table over [0, 1], 513 entries each.
std::vector<int32_t> PrepareSoftmaxI16(const KernelContext& ctx);

// Leaky relu on int8 and int16 input (CalculateOpDataLeakyRelu): [identity multiplier, shift, alpha
// multiplier, shift] of in_scale / out_scale and in_scale * alpha / out_scale, products in float.
std::vector<int32_t> PrepareLeakyReluInt(const KernelContext& ctx);

// LOGISTIC / TANH on int8 or int16 input (CalculateArithmeticOpDataLogistic, tanh.cc's
// CalculateArithmeticOpData): [input multiplier, left shift, input radius, input zero point].
// int8: the input scale times 2^27 split by frexp, radius for 4 integer bits. int16: a
// power-of-two input scale of 2^-12 (tanh also 2^-11) needs no multiplier (0); any other is
// scaled to 3 * 4096 and doubled into [2^14, 2^15). Empty for float32.
std::vector<int32_t> PrepareSigmoidInt(const KernelContext& ctx);
std::vector<int32_t> PrepareTanhInt(const KernelContext& ctx);

// RELU on int8 / int16 (CalculateReluOpData): [multiplier, shift of in_scale / out_scale in
// double, activation min (the output zero point), max, input and output zero points].
std::vector<int32_t> PrepareReluInt(const KernelContext& ctx);
// RELU6 on int8 / int16: [the input's zero point, 6 quantised with its scale and zero point
// (FloatToQuantizedType)].
std::vector<int32_t> PrepareRelu6Int(const KernelContext& ctx);

// Comparisons on int8 (comparisons.cc's Prepare): per input the multiplier and shift of its scale
// (QuantizeMultiplierSmallerThanOneExp), then both offsets (minus the zero points).
std::vector<int32_t> PrepareCompareI8(const KernelContext& ctx);

// BATCH_MATMUL on int8/int16 (TFLM's batch_matmul.cc Prepare): [multiplier, shift] of
// float(lhs_scale * rhs_scale) / out_scale in double, by QuantizeMultiplier.
std::vector<int32_t> PrepareBatchMatMulQuantized(const KernelContext& ctx);

// Cumsum on int8 input (TFLM's cumsum.cc CalculateOpData): [input multiplier, shift, output
// multiplier, shift] of in_scale / (2 in_scale) and 2 in_scale / (2^20 out_scale), in double.
std::vector<int32_t> PrepareCumsumI8(const KernelContext& ctx);

// HARD_SWISH on int8 (hard_swish_common.cc): [input zero point, output zero point, then the
// output multiplier (in_scale / 128 / out_scale) and the relu-ish multiplier (in_scale / 128 /
// (3 / 32768)), each QuantizeMultiplier'd in float precision and rounded to 16 bits
// (DownScaleInt32ToInt16Multiplier), each followed by its exponent].
std::vector<int32_t> PrepareHardSwishI8(const KernelContext& ctx);

// Scratch TFLM's reductions request (reduce_common.cc), which memfold's kernels do not need but
// plans hold so that its arenas are TFLM's: an int per input dimension (the iterator) and one
// per axis. ReduceScratch: REDUCE_MAX and REDUCE_MIN. MeanScratch: MEAN and SUM, which add
// first one int32 sum per output element for int8 and int16 inputs (the quantised kernels'
// accumulator, scratch 0).
std::vector<int64_t> ReduceScratch(const Graph& graph, const Node& node);
std::vector<int64_t> MeanScratch(const Graph& graph, const Node& node);

// Scratch TFLM's TRANSPOSE_CONV requests in Prepare: one accumulator per output element, int32
// for int8 input, int64 for int16 (16x8); none for float, which accumulates in its output.
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

// Unidirectional sequence LSTM on int8 or int16 input: the LstmQuant TFLM's Prepare computes
// (gate fully connected layers into Q3.12 as CalculateOpDataFullyConnected, the element-wise
// products as CreateInterGateMulParams in double, the cell state's CheckedLog2 power and
// quantised clip); empty for float32.
std::vector<int32_t> PrepareLstm(const KernelContext& ctx);

// Scratch TFLM's LSTM requests in Prepare: four buffers of batch * state cell-state elements.
std::vector<int64_t> LstmScratch(const Graph& graph, const Node& node);

// Safe overlap of the LSTM's output over its input (input 0): each step reads its input rows
// (four times) before it writes its output rows, and steps advance through both tensors in
// order. With s steps of r rows, output rows of S elements of e_o bytes and input rows of I
// elements of e_i bytes, the last step bounds it: N_out - (s - 1) r max(0, S e_o - I e_i).
// Exact for the kernel's order (both the analytic and the algorithmic model).
std::optional<int64_t> LstmOverlap(const Graph& graph, const Node& node, int input);

}  // namespace memfold
