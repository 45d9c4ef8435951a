// The one mapping table from ONNX operators to their converters (onnx_converters.h): "Conv"
// for the default domain, "com.microsoft:QLinearAdd" for another. Nothing else in memfold
// switches on ONNX operator names. Lookup O(log operators).
#include <algorithm>
#include <vector>

#include "memfold/onnx/onnx_converters.h"

namespace memfold::onnx_import {
namespace {

struct Entry {
  std::string_view op_type;
  Converter convert;
};

#define MF_UNARY(name) [](Importer& im) { return UnaryOp(im, name); }
#define MF_NARY(name) [](Importer& im) { return NaryOp(im, name); }

const std::vector<Entry>& Table() {
  static const std::vector<Entry> table = [] {
    std::vector<Entry> t = {
        {"Abs", MF_UNARY("abs")},
        {"Add", MF_NARY("add")},
        {"And", MF_NARY("logical_and")},
        {"ArgMax", [](Importer& im) { return ArgMinMax(im, true); }},
        {"ArgMin", [](Importer& im) { return ArgMinMax(im, false); }},
        {"com.microsoft:QGemm", QGemm},
        {"com.microsoft:QLinearAdd", QLinearAdd},
        {"com.microsoft:QLinearAveragePool", QLinearAveragePool},
        {"com.microsoft:QLinearConcat", QLinearConcat},
        {"com.microsoft:QLinearGlobalAveragePool", QLinearGlobalAveragePool},
        {"com.microsoft:QLinearLeakyRelu", QLinearLeakyRelu},
        {"com.microsoft:QLinearMul", QLinearMul},
        {"com.microsoft:QLinearSigmoid", QLinearSigmoid},
        {"com.microsoft:QLinearSoftmax", QLinearSoftmax},
        {"AveragePool", [](Importer& im) { return Pool(im, "avg_pool2d"); }},
        {"BatchNormalization", BatchNormalization},
        {"Cast", Cast},
        {"DepthToSpace", [](Importer& im) { return BlockRearrange(im, true); }},
        {"DequantizeLinear", DequantizeLinear},
        {"Ceil", MF_UNARY("ceil")},
        {"Clip", Clip},
        {"Concat", Concat},
        {"Constant", ConstantOp},
        {"ConstantOfShape", ConstantOfShape},
        {"Conv", Conv},
        {"CumSum", CumSum},
        {"ConvTranspose", ConvTranspose},
        {"Div", MF_NARY("div")},
        {"Dropout", PassThrough},
        {"Einsum", Einsum},
        {"Elu", Elu},
        {"Erf", MF_UNARY("erf")},
        {"Equal", MF_NARY("equal")},
        {"Exp", MF_UNARY("exp")},
        {"Expand", Expand},
        {"Flatten", Flatten},
        {"Floor", MF_UNARY("floor")},
        {"Gather", Gather},
        {"Gelu", Gelu},
        {"Gemm", Gemm},
        {"GlobalAveragePool", [](Importer& im) { return GlobalPool(im, "mean"); }},
        {"GlobalMaxPool", [](Importer& im) { return GlobalPool(im, "reduce_max"); }},
        {"Greater", MF_NARY("greater")},
        {"GreaterOrEqual", MF_NARY("greater_equal")},
        {"GRU", Gru},
        {"LSTM", Lstm},
        {"HardSigmoid", HardSigmoid},
        {"HardSwish", MF_UNARY("hard_swish")},
        {"Identity", PassThrough},
        {"InstanceNormalization", InstanceNormalization},
        {"LayerNormalization", LayerNormalization},
        {"LeakyRelu",
         [](Importer& im) {
           return UnaryOp(im, "leaky_relu", {{"alpha", im.Float("alpha", 0.01)}});
         }},
        {"Less", MF_NARY("less")},
        {"LessOrEqual", MF_NARY("less_equal")},
        {"Log", MF_UNARY("log")},
        {"LogSoftmax", [](Importer& im) { return Softmax(im, "log_softmax"); }},
        {"MatMul", MatMul},
        {"Max", MF_NARY("max")},
        {"MaxPool", [](Importer& im) { return Pool(im, "max_pool2d"); }},
        {"Min", MF_NARY("min")},
        {"Mish", Mish},
        {"Mod", Mod},
        {"Mul", MF_NARY("mul")},
        {"Neg", MF_UNARY("neg")},
        {"Not", MF_UNARY("logical_not")},
        {"Or", MF_NARY("logical_or")},
        {"Pad", Pad},
        {"Pow", Pow},
        {"PRelu", MF_NARY("prelu")},
        {"QLinearConv", QLinearConv},
        {"QLinearMatMul", QLinearMatMul},
        {"QuantizeLinear", QuantizeLinear},
        {"Range", Range},
        {"Reciprocal", Reciprocal},
        {"ReduceL1", [](Importer& im) { return Reduce(im, "sum", "abs"); }},
        {"ReduceL2", [](Importer& im) { return Reduce(im, "sum", "square", "sqrt"); }},
        {"ReduceLogSum", [](Importer& im) { return Reduce(im, "sum", {}, "log"); }},
        {"ReduceLogSumExp", [](Importer& im) { return Reduce(im, "log_sum_exp"); }},
        {"ReduceMax", [](Importer& im) { return Reduce(im, "reduce_max"); }},
        {"ReduceMean", [](Importer& im) { return Reduce(im, "mean"); }},
        {"ReduceMin", [](Importer& im) { return Reduce(im, "reduce_min"); }},
        {"ReduceProd", ReduceProd},
        {"ReduceSum", [](Importer& im) { return Reduce(im, "sum"); }},
        {"ReduceSumSquare", [](Importer& im) { return Reduce(im, "sum", "square"); }},
        {"Relu", [](Importer& im) { return Activation(im, "relu"); }},
        {"Reshape", Reshape},
        {"Resize", Resize},
        {"Selu", Selu},
        {"Shape", ShapeOp},
        {"Sigmoid", MF_UNARY("sigmoid")},
        {"Sign", MF_UNARY("sign")},
        {"Size", Size},
        {"Slice", Slice},
        {"Softmax", [](Importer& im) { return Softmax(im, "softmax"); }},
        {"SpaceToDepth", [](Importer& im) { return BlockRearrange(im, false); }},
        {"Softplus", MF_UNARY("softplus")},
        {"Softsign", Softsign},
        {"Split", Split},
        {"Sqrt", MF_UNARY("sqrt")},
        {"Squeeze", Squeeze},
        {"Sub", MF_NARY("sub")},
        {"Tanh", MF_UNARY("tanh")},
        {"Tile", Tile},
        {"Transpose", Transpose},
        {"Trilu", Trilu},
        {"Unsqueeze", Unsqueeze},
        {"Where", Where},
    };
    std::sort(t.begin(), t.end(),
              [](const Entry& a, const Entry& b) { return a.op_type < b.op_type; });
    return t;
  }();
  return table;
}

#undef MF_UNARY
#undef MF_NARY

}  // namespace

Converter FindConverter(std::string_view op_type) {
  const auto& table = Table();
  auto it =
      std::lower_bound(table.begin(), table.end(), op_type,
                       [](const Entry& e, std::string_view name) { return e.op_type < name; });
  return it != table.end() && it->op_type == op_type ? it->convert : nullptr;
}

std::vector<std::string_view> ConvertedOperators() {
  std::vector<std::string_view> names;
  for (const Entry& e : Table()) names.push_back(e.op_type);
  return names;
}

}  // namespace memfold::onnx_import
