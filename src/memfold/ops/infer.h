// Shape and element-type inference for every op in the registry. Each function checks its
// inputs and attributes and reports, in one line, what is wrong and what the op expects.
// All are O(rank) apart from concat, which is O(inputs * rank).
#pragma once

#include <vector>

#include "memfold/ops/registry.h"

namespace memfold {

Status InferSameAsInput(const InferContext& ctx, std::vector<TensorType>* out);
Status InferBroadcast(const InferContext& ctx, std::vector<TensorType>* out);
Status InferFullyConnected(const InferContext& ctx, std::vector<TensorType>* out);
Status InferMatMul(const InferContext& ctx, std::vector<TensorType>* out);
Status InferBatchMatMul(const InferContext& ctx, std::vector<TensorType>* out);
Status InferConv2D(const InferContext& ctx, std::vector<TensorType>* out);
Status InferDepthwiseConv2D(const InferContext& ctx, std::vector<TensorType>* out);
Status InferPool2D(const InferContext& ctx, std::vector<TensorType>* out);
Status InferMean(const InferContext& ctx, std::vector<TensorType>* out);
Status InferSoftmax(const InferContext& ctx, std::vector<TensorType>* out);
Status InferReshape(const InferContext& ctx, std::vector<TensorType>* out);
Status InferConcat(const InferContext& ctx, std::vector<TensorType>* out);
Status InferSlice(const InferContext& ctx, std::vector<TensorType>* out);
Status InferTranspose(const InferContext& ctx, std::vector<TensorType>* out);
Status InferReverse(const InferContext& ctx, std::vector<TensorType>* out);
Status InferPad(const InferContext& ctx, std::vector<TensorType>* out);
Status InferBroadcastTo(const InferContext& ctx, std::vector<TensorType>* out);
// Comparisons: two inputs of one type, broadcast, boolean output. Logical ops: boolean inputs
// (one or two). select_v2: (boolean condition, x, y) broadcast together, x's type.
Status InferCompare(const InferContext& ctx, std::vector<TensorType>* out);
Status InferLogical(const InferContext& ctx, std::vector<TensorType>* out);
Status InferSelect(const InferContext& ctx, std::vector<TensorType>* out);
// arg_min_max along 'axis' into 'output_dtype' (i32, i64) indices; cast to 'dtype'; shape_of
// (the input's dimensions as 'output_dtype'); fill (one-element value input, 'shape').
Status InferArgMinMax(const InferContext& ctx, std::vector<TensorType>* out);
Status InferCast(const InferContext& ctx, std::vector<TensorType>* out);
Status InferShapeOf(const InferContext& ctx, std::vector<TensorType>* out);
Status InferFill(const InferContext& ctx, std::vector<TensorType>* out);
// strided_slice: begin, strides and counts per input axis (resolved at import), output 'shape'.
Status InferStridedSlice(const InferContext& ctx, std::vector<TensorType>* out);
// pack: N inputs of one shape stacked along a new 'axis'; unpack: one output per slice along
// 'axis'; split: one output per entry of 'sizes' along 'axis'.
Status InferPack(const InferContext& ctx, std::vector<TensorType>* out);
Status InferUnpack(const InferContext& ctx, std::vector<TensorType>* out);
Status InferSplit(const InferContext& ctx, std::vector<TensorType>* out);
// leaky_relu: the input's type; int8 needs alpha >= 0.
Status InferLeakyRelu(const InferContext& ctx, std::vector<TensorType>* out);
// resize_nearest_neighbor: NHWC input to [batch, size[0], size[1], channels].
Status InferResizeNearest(const InferContext& ctx, std::vector<TensorType>* out);
// resize_bilinear: NHWC input to [batch, size[0], size[1], channels]; height, width and size
// at most 2^20 (TFLM's 32-bit fixed point), align_corners and half_pixel_centers not both.
Status InferResizeBilinear(const InferContext& ctx, std::vector<TensorType>* out);
// transpose_conv: (input NHWC, filter [out_c, kh, kw, in_c], optional bias [out_c]) with
// 'stride', 'padding' (same or valid), 'activation' and the 'output_shape' [batch, h, w, out_c];
// float32 or int8 (int32 bias, filter per tensor or per output channel).
Status InferTransposeConv(const InferContext& ctx, std::vector<TensorType>* out);
// mirror_pad: 'paddings' [before, after] per axis, each in [0, size - 1] for 'mode' reflect and
// [0, size] for symmetric; rank >= 1, at most 2^31 - 1 output elements.
Status InferMirrorPad(const InferContext& ctx, std::vector<TensorType>* out);
// batch_to_space_nd ('block_shape', 'crops') and space_to_batch_nd ('block_shape',
// 'paddings') on 3-D NHC or 4-D NHWC inputs, as TFLite sizes their outputs.
Status InferBatchToSpaceNd(const InferContext& ctx, std::vector<TensorType>* out);
Status InferSpaceToBatchNd(const InferContext& ctx, std::vector<TensorType>* out);
// gather_axis (TFLite's GATHER): params and int32/int64 indices, 'axis' and 'batch_dims'
// (0 <= batch_dims <= axis < rank, leading dimensions shared); constant indices must lie in
// the axis.
Status InferGatherAxis(const InferContext& ctx, std::vector<TensorType>* out);
// cumsum along a non-negative 'axis' (resolved at import), float32 or int8 (a positive input
// scale).
Status InferCumsum(const InferContext& ctx, std::vector<TensorType>* out);
// TFLite's BATCH_MATMUL (attributes adj_x, adj_y) as TFLM accepts it: ranks 2 to 5, batch
// dimensions broadcast, float32 or int8/int16 with one positive scale per operand (int16 zero
// points 0); the adj_x case TFLM computes wrongly (an LHS batch folded against an RHS whose
// third-from-last dimension is 1) is refused.
Status InferTfliteBatchMatMul(const InferContext& ctx, std::vector<TensorType>* out);
// l2_normalization over the last axis: rank 1 to 4, float32 or int8, no fused activation.
Status InferL2Normalization(const InferContext& ctx, std::vector<TensorType>* out);
// depth_to_space / space_to_depth with attribute block_size, NHWC.
Status InferDepthToSpace(const InferContext& ctx, std::vector<TensorType>* out);
Status InferSpaceToDepth(const InferContext& ctx, std::vector<TensorType>* out);
// mask_encode: f32 -> bit, same shape; mask_decode: bit -> f32.
Status InferMaskEncode(const InferContext& ctx, std::vector<TensorType>* out);
Status InferMaskDecode(const InferContext& ctx, std::vector<TensorType>* out);
// quantize / dequantize: same shape, element type from attribute "dtype".
Status InferConvertType(const InferContext& ctx, std::vector<TensorType>* out);
// svdf: input [batch, input_size], weights_feature [filters, input_size], weights_time
// [filters, memory], bias [filters / rank] (optional), state [batch, filters * memory];
// output [batch, filters / rank] of the input's type.
Status InferSvdf(const InferContext& ctx, std::vector<TensorType>* out);
// unidirectional_sequence_lstm: TFLite's 24 inputs (kernels/lstm.h), the standard LSTM's only;
// output [d0, d1, state] of the input's type (d0, d1 as the input's).
Status InferLstm(const InferContext& ctx, std::vector<TensorType>* out);

// Numpy-style broadcast of two shapes; error if incompatible.
Result<Shape> BroadcastShapes(const Shape& a, const Shape& b);
// Normalises a possibly negative axis against `rank`; error if out of range.
Result<int64_t> NormaliseAxis(int64_t axis, size_t rank);

}  // namespace memfold
