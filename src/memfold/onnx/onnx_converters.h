// The converters of ONNX operators (one per operator, or per family with the registry op as a
// parameter) and the helpers they share, across onnx_elementwise.cc, onnx_windows.cc,
// onnx_shapes.cc, onnx_math.cc and onnx_quantized.cc; onnx_ops.cc's table names them. Each
// reads the node through the importer (onnx_importer.h) and binds its outputs; a variant memfold
// cannot compute exactly becomes an opaque node, never an approximation. Internal to onnx/.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memfold/onnx/onnx_importer.h"

namespace memfold::onnx_import {

using Ints = std::vector<int64_t>;

// --- shared helpers
int64_t Product(const Shape& shape, size_t from, size_t to);  // of dims [from, to)
bool IsScalar(const Importer& im, Tensor t);
bool SameQuantization(const Quantization& a, const Quantization& b);
// Input k when it is an int8 activation held quantized (a DequantizeLinear's output).
std::optional<Tensor> Int8Activation(const Importer& im, int k);
// Binds output 0 to a data movement's result: quantized when its input was (moving bytes
// commutes with dequantizing them).
Status MovedOutput(Importer& im, ValueId y, bool channels_last, bool quantized);
// The operands of an elementwise op in one layout: channels-last when any is and the result
// has rank >= 3 (one-element operands as they are), else ONNX's.
Result<std::vector<ValueId>> Operands(Importer& im, const std::vector<Tensor>& ts,
                                      bool* channels_last);
Result<ValueId> Scalar(Importer& im, double value);  // a float32 scalar constant
// Constant axes: the attribute before `since_opset`, input `input` from it (empty if absent).
Result<Ints> AxesOf(Importer& im, int input, int64_t since_opset, const char* what);

// The integer operands of a QDQ layer: an int8 activation, constant int8 weights with zero
// points 0 (per tensor, or per channel along `weight_axis` of the ONNX weights) and a constant
// int32 bias or none; nullopt when the node's inputs are not all of that form.
struct Int8Operands {
  Tensor x, w;
  std::optional<Tensor> bias;
};
std::optional<Int8Operands> Int8Inputs(const Importer& im, int weight_axis);

// --- elementwise (onnx_elementwise.cc)
Status UnaryOp(Importer& im, std::string_view op, Attrs attrs = {});
Status NaryOp(Importer& im, std::string_view op);          // folded left over every input
Status Activation(Importer& im, const std::string& name);  // relu/relu6, fused when it can be
Status PassThrough(Importer& im);                          // Identity, Dropout
Status Where(Importer& im);
Status Mod(Importer& im);
Status Pow(Importer& im);
Status Reciprocal(Importer& im);
Status Clip(Importer& im);
Status HardSigmoid(Importer& im);
Status Gelu(Importer& im);
Status Elu(Importer& im);
Status Mish(Importer& im);
Status Softsign(Importer& im);
Status Selu(Importer& im);
Status LeakyRelu(Importer& im);
Status Cast(Importer& im);

// --- windows (onnx_windows.cc)
Status Conv(Importer& im);
Status ConvTranspose(Importer& im);
Status Pool(Importer& im, std::string_view op);        // max_pool2d, avg_pool2d
Status GlobalPool(Importer& im, std::string_view op);  // mean, reduce_max
Status BatchNormalization(Importer& im);
Status Resize(Importer& im);

// --- shapes and data movement (onnx_shapes.cc)
Status Reshape(Importer& im);
Status Flatten(Importer& im);
Status Squeeze(Importer& im);
Status Unsqueeze(Importer& im);
Status Transpose(Importer& im);
Status Concat(Importer& im);
Status Split(Importer& im);
Status Slice(Importer& im);
Status Gather(Importer& im);
Status ShapeOp(Importer& im);
Status Size(Importer& im);
Status ConstantOp(Importer& im);
Status ConstantOfShape(Importer& im);
Status Range(Importer& im);
Status Expand(Importer& im);
Status Pad(Importer& im);
Status BlockRearrange(Importer& im, bool to_space);  // DepthToSpace, SpaceToDepth
Status Tile(Importer& im);
Status Trilu(Importer& im);

// --- reductions, normalisation, matrix products, recurrence (onnx_math.cc)
// mean, sum, reduce_max, reduce_min, log_sum_exp; `before` an elementwise op on the input,
// `after` one on the result (ReduceL2: square, sum, sqrt).
Status Reduce(Importer& im, std::string_view op, std::string_view before = {},
              std::string_view after = {});
Status Softmax(Importer& im, std::string_view op);  // softmax, log_softmax
Status LayerNormalization(Importer& im);
Status InstanceNormalization(Importer& im);
Status MatMul(Importer& im);
Status Gemm(Importer& im);
Status ArgMinMax(Importer& im, bool max);
Status ReduceProd(Importer& im);  // of constants
Status CumSum(Importer& im);
Status Einsum(Importer& im);
Status Gru(Importer& im);
Status Lstm(Importer& im);

// --- quantisation (onnx_quantized.cc)
Status DequantizeLinear(Importer& im);
Status QuantizeLinear(Importer& im);
Status QLinearConv(Importer& im);
Status QLinearMatMul(Importer& im);
Status QGemm(Importer& im);
Status QLinearAdd(Importer& im);
Status QLinearMul(Importer& im);
Status QLinearAveragePool(Importer& im);
Status QLinearConcat(Importer& im);
Status QLinearGlobalAveragePool(Importer& im);
Status QLinearLeakyRelu(Importer& im);
Status QLinearSigmoid(Importer& im);
Status QLinearSoftmax(Importer& im);

}  // namespace memfold::onnx_import
