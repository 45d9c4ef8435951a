// The op table: one row per operator. Keep rows short; put logic in infer.cc, cost.cc and
// the kernels.
#include "memfold/ops/op_table.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "memfold/ops/cost.h"
#include "memfold/ops/gradient.h"
#include "memfold/ops/infer.h"
#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/batch_matmul_kernels.h"
#include "memfold/ops/kernels/compare_kernels.h"
#include "memfold/ops/kernels/convert_kernels.h"
#include "memfold/ops/kernels/float_kernels.h"
#include "memfold/ops/kernels/geometry_kernels.h"
#include "memfold/ops/kernels/host/host_gemm.h"
#include "memfold/ops/kernels/host/prepare.h"
#include "memfold/ops/kernels/host/train_kernels.h"
#include "memfold/ops/kernels/int_kernels.h"
#include "memfold/ops/kernels/lstm.h"
#include "memfold/ops/kernels/svdf.h"
#include "memfold/ops/overlap_models.h"
#include "memfold/ops/train_infer.h"

namespace memfold {
namespace {

using Ints = std::vector<int64_t>;

const AttrSpec kActivation{"activation", std::string("none")};
const AttrSpec kStride{"stride", Ints{1, 1}};
const AttrSpec kDilation{"dilation", Ints{1, 1}};
const AttrSpec kPadding{"padding", std::string("same")};
const AttrSpec kPads{"pads", Ints{0, 0, 0, 0}};

// Data movement kernels for every element width (function templates cannot be template
// arguments, hence the macro).
#define MF_MOVE_KERNELS(K)                                                          \
  std::vector<KernelEntry> {                                                        \
    MF_KERNEL_T(DType::kF32, K, float), MF_KERNEL_T(DType::kI8, K, int8_t),         \
        MF_KERNEL_T(DType::kU8, K, uint8_t), MF_KERNEL_T(DType::kBool, K, uint8_t), \
        MF_KERNEL_T(DType::kI16, K, int16_t), MF_KERNEL_T(DType::kI32, K, int32_t), \
        MF_KERNEL_T(DType::kI64, K, int64_t)                                        \
  }

// Bits of OpDef::grad_reads_*.
constexpr uint32_t kReadsFirst = 1, kReadsSecond = 2, kReadsBoth = 3;

OpDef Unary(std::string_view name, KernelEntry f32, GradientFn gradient = nullptr,
            uint32_t reads_outputs = 0) {
  return {.name = name,
          .infer = InferSameAsInput,
          .overlap_analytic = AnalyticElementwise,
          .overlap_algorithmic = AlgorithmicElementwise,
          .inplace_input = 0,
          .kernels = {f32},
          .gradient = gradient,
          .grad_reads_outputs = reads_outputs};
}

OpDef Binary(std::string_view name, KernelEntry f32, bool fused_activation,
             GradientFn gradient = nullptr, uint32_t reads_inputs = 0) {
  OpDef def{.name = name,
            .min_inputs = 2,
            .max_inputs = 2,
            .infer = InferBroadcast,
            .overlap_analytic = AnalyticBroadcast,
            .overlap_algorithmic = AlgorithmicBroadcast,
            .inplace_input = 0,
            .kernels = {f32},
            .gradient = gradient,
            .grad_reads_inputs = reads_inputs};
  if (fused_activation) def.attrs = {kActivation};
  return def;
}

// A comparison with a boolean output, for float32, int32 and int64 (and booleans for the
// equalities); no O_s model (1-byte outputs of wider inputs).
#define MF_COMPARE_KERNELS(K)                                                       \
  std::vector<KernelEntry> {                                                        \
    MF_KERNEL_T(DType::kF32, K, float), MF_KERNEL_T(DType::kI8, K, int8_t),         \
        MF_KERNEL_T(DType::kI32, K, int32_t), MF_KERNEL_T(DType::kI64, K, int64_t), \
        MF_KERNEL_T(DType::kBool, K, uint8_t)                                       \
  }

OpDef Comparison(std::string_view name, std::vector<KernelEntry> kernels) {
  return {.name = name,
          .min_inputs = 2,
          .max_inputs = 2,
          .infer = InferCompare,
          .cost = MoveCost,
          .kernels = std::move(kernels),
          .prepare = PrepareCompareI8};
}

OpDef Logical(std::string_view name, int inputs, KernelEntry kernel) {
  return {.name = name,
          .min_inputs = inputs,
          .max_inputs = inputs,
          .infer = InferLogical,
          .cost = MoveCost,
          .kernels = {kernel}};
}

// x > 0 ? x : alpha * x, float32, int8 and int16 (TFLM's leaky_relu.cc).
OpDef LeakyRelu() {
  OpDef def = Unary("leaky_relu", MF_KERNEL(DType::kF32, LeakyReluF32));
  def.attrs = {{"alpha", 0.2}};
  def.infer = InferLeakyRelu;
  def.kernels.push_back(MF_KERNEL_T(DType::kI8, LeakyReluInt, int8_t));
  def.kernels.push_back(MF_KERNEL_T(DType::kI16, LeakyReluInt, int16_t));
  def.prepare = PrepareLeakyReluInt;
  return def;
}

// A row with more kernels (the integer variants of the binary ops).
OpDef WithKernels(OpDef def, std::initializer_list<KernelEntry> kernels) {
  def.kernels.insert(def.kernels.end(), kernels);
  return def;
}

// A row with integer kernels and the prepare they need (TFLM's OpData).
OpDef WithPrepare(OpDef def, std::initializer_list<KernelEntry> kernels, PrepareFn prepare) {
  def = WithKernels(std::move(def), kernels);
  def.prepare = prepare;
  return def;
}

// Dropout's set mask bits decode to its scale 1 / (1 - rate), as its kernel computes it.
double DropoutScale(const Node& node) {
  return static_cast<float>(1.0 / (1.0 - node.attrs.Float("rate")));
}

OpDef& Row(std::vector<OpDef>* table, std::string_view name) {
  const auto row = std::find_if(table->begin(), table->end(),
                                [&](const OpDef& def) { return def.name == name; });
  if (row == table->end()) std::abort();  // a rule for a row the table lacks: a build error
  return *row;
}

// The rules passes ask about ops' meaning (registry.h: TileRule, ViewRule, Int8Rule, masks,
// indices, randomness), one place for every op that has them.
std::vector<OpDef> WithPassRules(std::vector<OpDef> table) {
  auto rule = [&](std::initializer_list<std::string_view> names, auto set) {
    for (std::string_view name : names) set(Row(&table, name));
  };
  rule({"conv2d", "depthwise_conv2d"}, [](OpDef& d) { d.tile = TileRule::kConvWindow; });
  rule({"max_pool2d", "avg_pool2d"}, [](OpDef& d) { d.tile = TileRule::kPoolWindow; });
  rule({"relu", "relu6", "tanh", "sigmoid", "exp", "neg", "hard_swish", "leaky_relu", "abs", "silu",
        "gelu", "gelu_tanh", "erf", "softplus", "sign", "elu", "square", "quantize", "dequantize"},
       [](OpDef& d) { d.tile = TileRule::kUnary; });
  rule({"add", "sub", "mul", "max", "min"}, [](OpDef& d) { d.tile = TileRule::kBinary; });
  Row(&table, "pad").tile = TileRule::kPad;
  Row(&table, "slice").tile = TileRule::kSlice;
  Row(&table, "concat").view = ViewRule::kConcatRows;
  Row(&table, "slice").view = ViewRule::kSliceRows;
  rule({"add", "sub", "mul", "mean"}, [](OpDef& d) { d.int8 = Int8Rule::kOwnScale; });
  rule({"avg_pool2d", "max_pool2d", "reshape"}, [](OpDef& d) { d.int8 = Int8Rule::kSameScale; });
  Row(&table, "concat").int8 = Int8Rule::kSameScaleAll;
  Row(&table, "pad").int8 = Int8Rule::kPadFill;
  Row(&table, "softmax").int8 = Int8Rule::kFixedSoftmax;
  rule({"conv2d", "depthwise_conv2d", "fully_connected"},
       [](OpDef& d) { d.int8 = Int8Rule::kLinear; });
  Row(&table, "conv2d").int8_filter_axis = 0;            // [O, kh, kw, I]
  Row(&table, "depthwise_conv2d").int8_filter_axis = 3;  // [1, kh, kw, C]
  Row(&table, "relu").bit_mask = {.output = 0, .reader = "relu_grad"};
  Row(&table, "dropout").bit_mask = {
      .output = 1, .reader = "dropout_grad", .set_value = DropoutScale};
  Row(&table, "dropout").random = true;
  Row(&table, "gather").index = {.input = 1, .axis = 0};
  Row(&table, "softmax_cross_entropy").index = {.input = 1, .axis = -1};
  return table;
}

}  // namespace

std::vector<OpDef> BuildOpTable() {
  return WithPassRules({
      WithPrepare(
          Unary("relu", MF_KERNEL(DType::kF32, ReluF32), GradRelu, kReadsFirst),
          {MF_KERNEL_T(DType::kI8, ReluInt, int8_t), MF_KERNEL_T(DType::kI16, ReluInt, int16_t)},
          PrepareReluInt),
      WithPrepare(
          Unary("relu6", MF_KERNEL(DType::kF32, Relu6F32)),
          {MF_KERNEL_T(DType::kI8, Relu6Int, int8_t), MF_KERNEL_T(DType::kI16, Relu6Int, int16_t)},
          PrepareRelu6Int),
      WithPrepare(Unary("tanh", MF_KERNEL(DType::kF32, TanhF32), GradTanh, kReadsFirst),
                  {MF_KERNEL(DType::kI8, TanhI8), MF_KERNEL(DType::kI16, TanhI16)}, PrepareTanhInt),
      WithPrepare(Unary("sigmoid", MF_KERNEL(DType::kF32, SigmoidF32), GradSigmoid, kReadsFirst),
                  {MF_KERNEL(DType::kI8, SigmoidI8), MF_KERNEL(DType::kI16, SigmoidI16)},
                  PrepareSigmoidInt),
      // tanh and sigmoid of a training graph (the gradient pass lowers float tanh and sigmoid
      // to them): vectorised, not TFLM's bit pattern.
      Unary("tanh_train", MF_HOST_KERNEL(DType::kF32, TanhTrainF32), GradTanh, kReadsFirst),
      Unary("sigmoid_train", MF_HOST_KERNEL(DType::kF32, SigmoidTrainF32), GradSigmoid,
            kReadsFirst),
      Unary("exp", MF_KERNEL(DType::kF32, ExpF32), GradExp, kReadsFirst),
      Unary("neg", MF_KERNEL(DType::kF32, NegF32), GradNeg),
      WithPrepare(Unary("hard_swish", MF_KERNEL(DType::kF32, HardSwishF32)),
                  {MF_KERNEL(DType::kI8, HardSwishI8)}, PrepareHardSwishI8),
      Unary("silu", MF_KERNEL(DType::kF32, SiluF32)),           // x * sigmoid(x) (PyTorch's SiLU)
      Unary("gelu", MF_KERNEL(DType::kF32, GeluF32)),           // x * Phi(x), exact (erf) form
      Unary("gelu_tanh", MF_KERNEL(DType::kF32, GeluTanhF32)),  // its tanh approximation
      Unary("erf", MF_KERNEL(DType::kF32, ErfF32)),
      Unary("softplus", MF_KERNEL(DType::kF32, SoftplusF32)),
      Unary("sign", MF_KERNEL(DType::kF32, SignF32)),
      WithKernels(
          Unary("abs", MF_KERNEL(DType::kF32, AbsF32)),
          {MF_KERNEL_T(DType::kI8, AbsInt, int8_t), MF_KERNEL_T(DType::kI16, AbsInt, int16_t)}),
      Unary("sqrt", MF_KERNEL(DType::kF32, SqrtF32)),
      WithKernels(
          Unary("rsqrt", MF_KERNEL(DType::kF32, RsqrtF32)),
          {MF_KERNEL_T(DType::kI8, RsqrtInt, int8_t), MF_KERNEL_T(DType::kI16, RsqrtInt, int16_t)}),
      Unary("square", MF_KERNEL(DType::kF32, SquareF32)),
      Unary("log", MF_KERNEL(DType::kF32, LogF32)),
      Unary("floor", MF_KERNEL(DType::kF32, FloorF32)),
      Unary("ceil", MF_KERNEL(DType::kF32, CeilF32)),
      Unary("round", MF_KERNEL(DType::kF32, RoundF32)),  // halves to even, as tf.round
      LeakyRelu(),
      WithKernels(Binary("squared_difference", MF_KERNEL(DType::kF32, SquaredDifferenceF32), false),
                  {MF_KERNEL_T(DType::kI8, SquaredDifferenceInt, int8_t),
                   MF_KERNEL_T(DType::kI16, SquaredDifferenceInt, int16_t)}),
      Unary("elu", MF_KERNEL(DType::kF32, EluF32)),
      Binary("prelu", MF_KERNEL(DType::kF32, PreluF32), false),
      Comparison("equal", MF_COMPARE_KERNELS(Equal)),
      Comparison("not_equal", MF_COMPARE_KERNELS(NotEqual)),
      Comparison("less", MF_COMPARE_KERNELS(Less)),
      Comparison("less_equal", MF_COMPARE_KERNELS(LessEqual)),
      Comparison("greater", MF_COMPARE_KERNELS(Greater)),
      Comparison("greater_equal", MF_COMPARE_KERNELS(GreaterEqual)),
      Logical("logical_and", 2, MF_KERNEL(DType::kBool, LogicalAnd)),
      Logical("logical_or", 2, MF_KERNEL(DType::kBool, LogicalOr)),
      Logical("logical_not", 1, MF_KERNEL(DType::kBool, LogicalNot)),
      {.name = "select_v2",
       .min_inputs = 3,
       .max_inputs = 3,
       .infer = InferSelect,
       .cost = MoveCost,
       .kernels = {MF_KERNEL(DType::kBool, SelectV2)}},  // keyed by the condition's type
      {.name = "zeros_like",
       .infer = InferSameAsInput,
       .cost = MoveCost,
       .kernels = MF_MOVE_KERNELS(ZerosLike)},
      // TFLite's SUM: float accumulation in TFLM's order (reduce_sum below is the training
      // reduction, summed in double per output).
      {.name = "sum",
       .attrs = {{"axes", Ints{}, true}, {"keepdims", int64_t{0}}},
       .infer = InferMean,
       .cost = MoveCost,
       .kernels = {MF_KERNEL(DType::kF32, SumF32), MF_KERNEL_T(DType::kI8, SumQuantized, int8_t),
                   MF_KERNEL_T(DType::kI16, SumQuantized, int16_t)},
       .scratch = MeanScratch},
      {.name = "reduce_max",
       .attrs = {{"axes", Ints{}, true}, {"keepdims", int64_t{0}}},
       .infer = InferMean,
       .cost = MoveCost,
       .kernels = {MF_KERNEL_T(DType::kF32, ReduceMax, float),
                   MF_KERNEL_T(DType::kI8, ReduceMax, int8_t),
                   MF_KERNEL_T(DType::kI16, ReduceMax, int16_t)},
       .scratch = ReduceScratch},
      {.name = "reduce_min",
       .attrs = {{"axes", Ints{}, true}, {"keepdims", int64_t{0}}},
       .infer = InferMean,
       .cost = MoveCost,
       .kernels = {MF_KERNEL_T(DType::kF32, ReduceMin, float),
                   MF_KERNEL_T(DType::kI8, ReduceMin, int8_t),
                   MF_KERNEL_T(DType::kI16, ReduceMin, int16_t)},
       .scratch = ReduceScratch},
      {.name = "arg_min_max",
       .attrs = {{"axis", int64_t{0}, true},
                 {"max", int64_t{1}},
                 {"output_dtype", std::string("i32")}},
       .infer = InferArgMinMax,
       .cost = MoveCost,
       .kernels = {MF_KERNEL_T(DType::kF32, ArgMinMax, float),
                   MF_KERNEL_T(DType::kI8, ArgMinMax, int8_t)}},
      {.name = "cast",
       .attrs = {{"dtype", std::string(), true}},
       .infer = InferCast,
       .cost = MoveCost,
       .kernels = MF_MOVE_KERNELS(Cast)},
      {.name = "shape_of",
       .attrs = {{"output_dtype", std::string("i32")}},
       .infer = InferShapeOf,
       .cost = MoveCost,
       .kernels = MF_MOVE_KERNELS(ShapeOf)},
      {.name = "fill",
       .attrs = {{"shape", Ints{}, true}},
       .infer = InferFill,
       .cost = MoveCost,
       .kernels = MF_MOVE_KERNELS(Fill)},
      {.name = "log_softmax",
       .infer = InferSameAsInput,
       .cost = MoveCost,
       .kernels = {MF_KERNEL(DType::kF32, LogSoftmaxF32)}},
      WithKernels(
          Binary("add", MF_KERNEL(DType::kF32, AddF32), true, GradAdd),
          {MF_KERNEL_T(DType::kI8, AddInt, int8_t), MF_KERNEL_T(DType::kI16, AddInt, int16_t)}),
      WithKernels(
          Binary("sub", MF_KERNEL(DType::kF32, SubF32), true, GradSub),
          {MF_KERNEL_T(DType::kI8, SubInt, int8_t), MF_KERNEL_T(DType::kI16, SubInt, int16_t)}),
      WithKernels(
          Binary("mul", MF_KERNEL(DType::kF32, MulF32), true, GradMul, kReadsBoth),
          {MF_KERNEL_T(DType::kI8, MulInt, int8_t), MF_KERNEL_T(DType::kI16, MulInt, int16_t)}),
      Binary("div", MF_KERNEL(DType::kF32, DivF32), true),
      WithKernels(
          Binary("max", MF_KERNEL_T(DType::kF32, Maximum, float), false),
          {MF_KERNEL_T(DType::kI8, Maximum, int8_t), MF_KERNEL_T(DType::kI16, Maximum, int16_t)}),
      WithKernels(
          Binary("min", MF_KERNEL_T(DType::kF32, Minimum, float), false),
          {MF_KERNEL_T(DType::kI8, Minimum, int8_t), MF_KERNEL_T(DType::kI16, Minimum, int16_t)}),
      {.name = "fully_connected",
       .min_inputs = 2,
       .max_inputs = 3,
       .attrs = {kActivation, {"keep_num_dims", int64_t{0}}},
       .infer = InferFullyConnected,
       .cost = MatrixCost,
       .overlap_analytic = AnalyticFullyConnected,
       .overlap_algorithmic = AlgorithmicFullyConnected,
       .kernels = {MF_KERNEL(DType::kF32, FullyConnectedF32),
                   MF_KERNEL(DType::kI8, FullyConnectedI8),
                   MF_KERNEL(DType::kI16, FullyConnectedI16)},
       .prepare = PrepareFullyConnectedInt,
       .gradient = GradFullyConnected,
       .grad_reads_inputs = kReadsBoth},
      // fully_connected of a training graph (the gradient pass lowers float ones to it): one
      // BLAS product.
      {.name = "fully_connected_gemm",
       .min_inputs = 2,
       .max_inputs = 3,
       .attrs = {kActivation, {"keep_num_dims", int64_t{0}}},
       .infer = InferFullyConnected,
       .cost = MatrixCost,
       .kernels = {{DType::kF32, &FullyConnectedGemmF32<Direct>}},  // BLAS: no trace
       .gradient = GradFullyConnected,
       .grad_reads_inputs = kReadsBoth},
      {.name = "matmul",
       .min_inputs = 2,
       .max_inputs = 2,
       .attrs = {{"transpose_a", int64_t{0}}, {"transpose_b", int64_t{0}}},
       .infer = InferMatMul,
       .cost = MatrixCost,
       .kernels = {{DType::kF32, &MatMulF32<Direct>}},  // BLAS: no access model, no trace
       .gradient = GradMatMul,
       .grad_reads_inputs = kReadsBoth},
      {.name = "batch_matmul",
       .min_inputs = 2,
       .max_inputs = 2,
       .attrs = {{"transpose_a", int64_t{0}}, {"transpose_b", int64_t{0}}},
       .infer = InferBatchMatMul,
       .cost = MatrixCost,
       .kernels = {{DType::kF32, &BatchMatMulF32<Direct>}},  // BLAS: no access model, no trace
       .gradient = GradMatMul,
       .grad_reads_inputs = kReadsBoth},
      // TFLite's BATCH_MATMUL as TFLM runs it; "batch_matmul" above is the training op. TFLM's
      // transposed copies of the operands are persistent buffers (AllocatePersistentBuffer in
      // Prepare), not arena scratch, and these kernels need none: no scratch function.
      {.name = "tflite_batch_matmul",
       .min_inputs = 2,
       .max_inputs = 2,
       .attrs = {{"adj_x", int64_t{0}}, {"adj_y", int64_t{0}}},
       .infer = InferTfliteBatchMatMul,
       .cost = MatrixCost,
       .overlap_algorithmic = AlgorithmicTfliteBatchMatMul,
       .kernels = {MF_KERNEL(DType::kF32, TfliteBatchMatMulF32),
                   MF_KERNEL(DType::kI8, TfliteBatchMatMulI8),
                   MF_KERNEL(DType::kI16, TfliteBatchMatMulI16)},
       .prepare = PrepareBatchMatMulQuantized},
      {.name = "conv2d",
       .min_inputs = 2,
       .max_inputs = 3,
       .attrs = {kActivation, kStride, kDilation, kPadding, kPads},
       .infer = InferConv2D,
       .cost = ConvCost,
       .overlap_analytic = AnalyticWindow,
       .overlap_algorithmic = AlgorithmicConv2D,
       .kernels = {MF_KERNEL(DType::kF32, Conv2DF32), MF_KERNEL(DType::kI8, Conv2DI8),
                   MF_KERNEL(DType::kI16, Conv2DI16)},
       .prepare = PrepareConv2DI8,
       .gradient = GradConv2D,
       .grad_reads_inputs = kReadsBoth},
      // conv2d of a training graph (the gradient pass lowers float conv2d to it): the same op
      // computed as BLAS products over im2col chunks (its scratch).
      {.name = "conv2d_gemm",
       .min_inputs = 2,
       .max_inputs = 3,
       .attrs = {kActivation, kStride, kDilation, kPadding, kPads},
       .infer = InferConv2D,
       .cost = ConvCost,
       .kernels = {{DType::kF32, &Conv2DGemmF32<Direct>}},  // BLAS: no access model, no trace
       .scratch = Conv2DGemmScratch,
       .gradient = GradConv2D,
       .grad_reads_inputs = kReadsBoth},
      {.name = "depthwise_conv2d",
       .min_inputs = 2,
       .max_inputs = 3,
       .attrs = {kActivation, kStride, kDilation, kPadding, kPads, {"multiplier", int64_t{0}}},
       .infer = InferDepthwiseConv2D,
       .cost = ConvCost,
       .overlap_analytic = AnalyticWindow,
       .overlap_algorithmic = AlgorithmicDepthwise,
       .kernels = {MF_KERNEL(DType::kF32, DepthwiseConv2DF32),
                   MF_KERNEL(DType::kI8, DepthwiseConv2DI8),
                   MF_KERNEL(DType::kI16, DepthwiseConv2DI16)},
       .prepare = PrepareDepthwiseI8,
       .gradient = GradDepthwise,
       .grad_reads_inputs = kReadsBoth},
      {.name = "max_pool2d",
       .attrs = {kActivation, kStride, kPadding, kPads, {"filter", Ints{}, true}},
       .infer = InferPool2D,
       .cost = PoolCost,
       .overlap_analytic = AnalyticWindow,
       .overlap_algorithmic = AlgorithmicPool,
       .kernels = {MF_KERNEL(DType::kF32, MaxPool2DF32),
                   MF_KERNEL_T(DType::kI8, MaxPool2DInt, int8_t),
                   MF_KERNEL_T(DType::kI16, MaxPool2DInt, int16_t)},
       .gradient = GradMaxPool,
       .grad_reads_inputs = kReadsFirst},
      {.name = "avg_pool2d",
       .attrs = {kActivation, kStride, kPadding, kPads, {"filter", Ints{}, true}},
       .infer = InferPool2D,
       .cost = PoolCost,
       .overlap_analytic = AnalyticWindow,
       .overlap_algorithmic = AlgorithmicPool,
       .kernels = {MF_KERNEL(DType::kF32, AvgPool2DF32),
                   MF_KERNEL_T(DType::kI8, AvgPool2DInt, int8_t),
                   MF_KERNEL_T(DType::kI16, AvgPool2DInt, int16_t)},
       .gradient = GradAvgPool},
      {.name = "mean",
       .attrs = {{"axes", Ints{}, true}, {"keepdims", int64_t{0}}},
       .infer = InferMean,
       .overlap_analytic = AnalyticMean,
       .overlap_algorithmic = AlgorithmicMean,
       .kernels = {MF_KERNEL(DType::kF32, MeanF32), MF_KERNEL_T(DType::kI8, MeanQuantized, int8_t),
                   MF_KERNEL_T(DType::kI16, MeanQuantized, int16_t)},
       .scratch = MeanScratch,
       .gradient = GradMean},
      {.name = "softmax",
       .attrs = {{"beta", 1.0}, {"axis", int64_t{-1}}, {"output_dtype", std::string()}},
       .infer = InferSoftmax,
       .overlap_analytic = AnalyticElementwise,
       .overlap_algorithmic = AlgorithmicSoftmax,
       .kernels = {MF_KERNEL(DType::kF32, SoftmaxF32), MF_KERNEL(DType::kI8, SoftmaxI8),
                   MF_KERNEL(DType::kI16, SoftmaxI16)},
       .prepare = PrepareSoftmaxI16,
       .gradient = GradSoftmax,
       .grad_reads_outputs = kReadsFirst},
      // A joint graph's operators (joint/joint_graph.h): planned, recomputed by the framework
      // that traced them, never run by memfold. "target" names the framework's operator.
      {.name = "traced_op",
       .min_inputs = 0,
       .max_inputs = kVariadic,
       .num_outputs = kVariadic,
       .attrs = {{"target", std::string(), true}, {"flops", 0.0}},
       .cost = TracedCost,
       .traced = true},
      {.name = "traced_view",
       .attrs = {{"target", std::string(), true}},
       .cost = MoveCost,
       .alias = true,
       .traced = true},
      {.name = "reshape",
       .attrs = {{"shape", Ints{}, true}},
       .infer = InferReshape,
       .cost = MoveCost,
       .alias = true,
       .gradient = GradReshape},
      // view = 1: liveness may place the inputs inside the output (plan/liveness.h).
      {.name = "concat",
       .max_inputs = kVariadic,
       .attrs = {{"axis", int64_t{0}, true}, {"view", int64_t{0}}},
       .infer = InferConcat,
       .cost = MoveCost,
       .overlap_analytic = AnalyticConcat,
       .overlap_algorithmic = AlgorithmicConcat,
       .kernels = MF_MOVE_KERNELS(Concat),
       .gradient = GradConcat},
      {.name = "slice",
       .attrs = {{"begin", Ints{}, true}, {"size", Ints{}, true}, {"view", int64_t{0}}},
       .infer = InferSlice,
       .cost = MoveCost,
       .overlap_analytic = AnalyticSlice,
       .overlap_algorithmic = AlgorithmicSlice,
       .kernels = MF_MOVE_KERNELS(Slice),
       .gradient = GradSlice},
      {.name = "transpose",
       .attrs = {{"perm", Ints{}, true}},
       .infer = InferTranspose,
       .cost = MoveCost,
       .overlap_algorithmic = AlgorithmicTranspose,
       .kernels = MF_MOVE_KERNELS(Transpose),
       .gradient = GradTranspose},
      {.name = "reverse",  // TFLite's REVERSE_V2
       .attrs = {{"axes", Ints{}, true}},
       .infer = InferReverse,
       .cost = MoveCost,
       .kernels = MF_MOVE_KERNELS(Reverse)},
      {.name = "pad",
       .attrs = {{"paddings", Ints{}, true}, {"value", 0.0}},
       .infer = InferPad,
       .cost = MoveCost,
       .overlap_analytic = AnalyticPad,
       .overlap_algorithmic = AlgorithmicPad,
       .kernels = MF_MOVE_KERNELS(Pad),
       .gradient = GradPad},
      {.name = "broadcast_to",
       .attrs = {{"shape", Ints{}, true}},
       .infer = InferBroadcastTo,
       .cost = MoveCost,
       .overlap_analytic = AnalyticBroadcast,
       .overlap_algorithmic = AlgorithmicBroadcast,
       .kernels = MF_MOVE_KERNELS(BroadcastTo),
       .gradient = GradBroadcastTo},
      // Data movement whose loops have no closed-form O_s model yet: the planner gives them no
      // overlap (O_s = 0, safe); `memfold overlap` measures theirs by the trace method.
      {.name = "resize_nearest_neighbor",
       .attrs = {{"size", Ints{}, true},
                 {"align_corners", int64_t{0}},
                 {"half_pixel_centers", int64_t{0}}},
       .infer = InferResizeNearest,
       .cost = MoveCost,
       .kernels = MF_MOVE_KERNELS(ResizeNearest)},
      // TFLM's image-geometry operators (kernels/geometry_kernels.h).
      {.name = "resize_bilinear",
       .attrs = {{"size", Ints{}, true},
                 {"align_corners", int64_t{0}},
                 {"half_pixel_centers", int64_t{0}}},
       .infer = InferResizeBilinear,
       .cost = ResizeBilinearCost,
       .overlap_algorithmic = AlgorithmicResizeBilinear,
       .kernels = {MF_KERNEL(DType::kF32, ResizeBilinearF32),
                   MF_KERNEL(DType::kI8, ResizeBilinearI8)}},
      // TFLM's TRANSPOSE_CONV (its output_shape input is the output tensor's shape, here an
      // attribute); the integer kernels' accumulators (int32 for int8, int64 for int16) are the
      // scratch TFLM requests.
      {.name = "transpose_conv",
       .min_inputs = 2,
       .max_inputs = 3,
       .attrs = {kActivation, kStride, kPadding, {"output_shape", Ints{}, true}},
       .infer = InferTransposeConv,
       .cost = TransposeConvCost,
       .overlap_analytic = TransposeConvOverlap,
       .overlap_algorithmic = TransposeConvOverlap,
       .kernels = {MF_KERNEL(DType::kF32, TransposeConvF32), MF_KERNEL(DType::kI8, TransposeConvI8),
                   MF_KERNEL(DType::kI16, TransposeConvI16)},
       .scratch = TransposeConvScratch,
       .prepare = PrepareConvI8},
      // TFLM's MIRROR_PAD with the two stride buffers its Prepare requests as scratch.
      {.name = "mirror_pad",
       .attrs = {{"paddings", Ints{}, true}, {"mode", std::string("reflect")}},
       .infer = InferMirrorPad,
       .cost = MoveCost,
       .overlap_algorithmic = AlgorithmicMirrorPad,
       .kernels = MF_MOVE_KERNELS(MirrorPad),
       .scratch = MirrorPadScratch},
      {.name = "batch_to_space_nd",
       .attrs = {{"block_shape", Ints{}, true}, {"crops", Ints{}, true}},
       .infer = InferBatchToSpaceNd,
       .cost = MoveCost,
       .overlap_algorithmic = AlgorithmicBatchToSpaceNd,
       .kernels = MF_MOVE_KERNELS(BatchToSpaceNd)},
      {.name = "space_to_batch_nd",
       .attrs = {{"block_shape", Ints{}, true}, {"paddings", Ints{}, true}},
       .infer = InferSpaceToBatchNd,
       .cost = MoveCost,
       .overlap_algorithmic = AlgorithmicSpaceToBatchNd,
       .kernels = MF_MOVE_KERNELS(SpaceToBatchNd)},
      // TFLite's GATHER (axis, batch_dims); "gather" below is the training embedding lookup.
      {.name = "gather_axis",
       .min_inputs = 2,
       .max_inputs = 2,
       .attrs = {{"axis", int64_t{0}}, {"batch_dims", int64_t{0}}},
       .infer = InferGatherAxis,
       .cost = MoveCost,
       .overlap_analytic = AnalyticGatherAxis,
       .kernels = MF_MOVE_KERNELS(GatherAxis)},
      {.name = "cumsum",
       .attrs = {{"axis", int64_t{0}, true}, {"exclusive", int64_t{0}}, {"reverse", int64_t{0}}},
       .infer = InferCumsum,
       .overlap_algorithmic = AlgorithmicCumsum,
       .kernels = {MF_KERNEL(DType::kF32, CumsumF32), MF_KERNEL(DType::kI8, CumsumI8)},
       .prepare = PrepareCumsumI8},
      // Every read of a row precedes the row's writes, which follow the reads element by
      // element: the element-wise closed form bounds it (equal when types match).
      {.name = "l2_normalization",
       .attrs = {kActivation},
       .infer = InferL2Normalization,
       .overlap_analytic = AnalyticElementwise,
       .overlap_algorithmic = AlgorithmicL2Normalization,
       .kernels = {MF_KERNEL(DType::kF32, L2NormalizationF32),
                   MF_KERNEL(DType::kI8, L2NormalizationI8)}},
      {.name = "depth_to_space",
       .attrs = {{"block_size", int64_t{0}, true}},
       .infer = InferDepthToSpace,
       .cost = MoveCost,
       .kernels = MF_MOVE_KERNELS(DepthToSpace)},
      {.name = "space_to_depth",
       .attrs = {{"block_size", int64_t{0}, true}},
       .infer = InferSpaceToDepth,
       .cost = MoveCost,
       .kernels = MF_MOVE_KERNELS(SpaceToDepth)},
      {.name = "strided_slice",
       .attrs = {{"begin", Ints{}, true},
                 {"strides", Ints{}, true},
                 {"counts", Ints{}, true},
                 {"shape", Ints{}, true}},
       .infer = InferStridedSlice,
       .cost = MoveCost,
       .kernels = MF_MOVE_KERNELS(StridedSlice)},
      {.name = "pack",
       .max_inputs = kVariadic,
       .attrs = {{"axis", int64_t{0}}},
       .infer = InferPack,
       .cost = MoveCost,
       .kernels = MF_MOVE_KERNELS(Pack)},
      {.name = "unpack",
       .attrs = {{"axis", int64_t{0}}},
       .infer = InferUnpack,
       .cost = MoveCost,
       .kernels = MF_MOVE_KERNELS(Unpack)},
      {.name = "split",
       .attrs = {{"axis", int64_t{0}}, {"sizes", Ints{}, true}},
       .infer = InferSplit,
       .cost = MoveCost,
       .kernels = MF_MOVE_KERNELS(Split)},
      {.name = "batch_norm_apply",
       .min_inputs = 5,
       .max_inputs = 5,
       .attrs = {{"axis", int64_t{-1}}},
       .infer = InferBatchNormApply,
       .overlap_analytic = AnalyticBroadcast,
       .overlap_algorithmic = AlgorithmicBroadcast,
       .inplace_input = 0,
       .kernels = {MF_HOST_KERNEL(DType::kF32, BatchNormApplyF32)}},
      {.name = "mask_encode",
       .infer = InferMaskEncode,
       .kernels = {MF_HOST_KERNEL(DType::kF32, MaskEncodeF32)}},
      {.name = "mask_decode",
       .attrs = {{"value", 1.0}},
       .infer = InferMaskDecode,
       .kernels = {MF_HOST_KERNEL(DType::kBit, MaskDecode)}},
      {.name = "quantize",
       .attrs = {{"dtype", std::string(), true}},
       .infer = InferConvertType,
       .overlap_analytic = AnalyticElementwise,
       .overlap_algorithmic = AlgorithmicElementwise,
       .kernels = {MF_KERNEL(DType::kF32, QuantizeF32), MF_KERNEL_T(DType::kI8, Requantize, int8_t),
                   MF_KERNEL_T(DType::kU8, Requantize, uint8_t),
                   MF_KERNEL_T(DType::kI16, Requantize, int16_t),
                   MF_KERNEL_T(DType::kI32, Requantize, int32_t)}},
      {.name = "dequantize",
       .attrs = {{"dtype", std::string("f32")}},
       .infer = InferConvertType,
       .overlap_analytic = AnalyticElementwise,
       .overlap_algorithmic = AlgorithmicElementwise,
       .kernels = {MF_KERNEL_T(DType::kI8, Dequantize, int8_t),
                   MF_KERNEL_T(DType::kU8, Dequantize, uint8_t),
                   MF_KERNEL_T(DType::kI16, Dequantize, int16_t)}},
      {.name = "svdf",
       .min_inputs = 3,
       .max_inputs = 5,  // bias (input 3) is optional
       .attrs = {{"rank", int64_t{1}}, kActivation},
       .infer = InferSvdf,
       .overlap_analytic = SvdfOverlap,
       .overlap_algorithmic = SvdfOverlap,
       .kernels = {MF_KERNEL(DType::kF32, SvdfF32), MF_KERNEL(DType::kI8, SvdfI8)},
       .scratch = SvdfScratch},
      {.name = "unidirectional_sequence_lstm",
       .min_inputs = 9,  // input and weights; the rest are checked by position (InferLstm)
       .max_inputs = static_cast<int>(kLstmInputCount),
       .attrs = {{"cell_activation", std::string("tanh")},
                 {"cell_clip", 0.0},
                 {"time_major", int64_t{0}}},
       .infer = InferLstm,
       .overlap_analytic = LstmOverlap,
       .overlap_algorithmic = LstmOverlap,
       .kernels = {MF_KERNEL(DType::kF32, LstmF32), MF_KERNEL(DType::kI8, LstmInt),
                   MF_KERNEL(DType::kI16, LstmInt)},
       .scratch = LstmScratch,
       .prepare = PrepareLstm},
      // Training ops (train_infer.h, kernels/train_kernels.h).
      {.name = "relu_grad",
       .min_inputs = 2,
       .max_inputs = 2,
       .infer = InferUnaryGrad,
       .inplace_input = 0,
       .kernels = {MF_HOST_KERNEL(DType::kF32, ReluGradF32)}},
      {.name = "tanh_grad",
       .min_inputs = 2,
       .max_inputs = 2,
       .infer = InferUnaryGrad,
       .inplace_input = 0,
       .kernels = {MF_HOST_KERNEL(DType::kF32, TanhGradF32)}},
      {.name = "sigmoid_grad",
       .min_inputs = 2,
       .max_inputs = 2,
       .infer = InferUnaryGrad,
       .inplace_input = 0,
       .kernels = {MF_HOST_KERNEL(DType::kF32, SigmoidGradF32)}},
      {.name = "softmax_grad",
       .min_inputs = 2,
       .max_inputs = 2,
       .infer = InferSoftmaxGrad,
       .inplace_input = 0,
       .kernels = {MF_HOST_KERNEL(DType::kF32, SoftmaxGradF32)}},
      {.name = "softmax_cross_entropy",
       .min_inputs = 2,
       .max_inputs = 2,
       .infer = InferSoftmaxCrossEntropy,
       .cost = LossCost,
       .kernels = {MF_HOST_KERNEL(DType::kF32, SoftmaxCrossEntropyF32)},
       .gradient = GradSoftmaxCrossEntropy,
       .grad_reads_inputs = kReadsBoth},
      {.name = "softmax_cross_entropy_grad",
       .min_inputs = 3,
       .max_inputs = 3,
       .infer = InferSoftmaxCrossEntropyGrad,
       .cost = LossCost,
       .inplace_input = 1,
       .kernels = {MF_HOST_KERNEL(DType::kF32, SoftmaxCrossEntropyGradF32)}},
      {.name = "mse_loss",
       .min_inputs = 2,
       .max_inputs = 2,
       .infer = InferMseLoss,
       .cost = LossCost,
       .kernels = {MF_HOST_KERNEL(DType::kF32, MseLossF32)},
       .gradient = GradMse,
       .grad_reads_inputs = kReadsBoth},
      {.name = "mse_loss_grad",
       .min_inputs = 3,
       .max_inputs = 3,
       .infer = InferMseLossGrad,
       .cost = LossCost,
       .kernels = {MF_HOST_KERNEL(DType::kF32, MseLossGradF32)}},
      {.name = "reduce_sum",
       .attrs = {{"axes", Ints{}, true}, {"keepdims", int64_t{0}}},
       .infer = InferReduceSum,
       .cost = ReduceSumCost,
       .kernels = {MF_HOST_KERNEL(DType::kF32, ReduceSumF32)},
       .gradient = GradReduceSum},
      {.name = "conv2d_backprop_input",
       .min_inputs = 2,
       .max_inputs = 2,
       .attrs = {kActivation, kStride, kDilation, kPadding, kPads, {"input_shape", Ints{}, true}},
       .infer = InferConv2DBackpropInput,
       .cost = ConvBackpropCost,
       .kernels = {{DType::kF32, &Conv2DBackpropInputF32<Direct>}},  // BLAS: no trace
       .scratch = Conv2DBackpropInputScratch},
      {.name = "conv2d_backprop_filter",
       .min_inputs = 2,
       .max_inputs = 2,
       .attrs = {kActivation, kStride, kDilation, kPadding, kPads, {"filter_shape", Ints{}, true}},
       .infer = InferConv2DBackpropFilter,
       .cost = ConvBackpropCost,
       .kernels = {{DType::kF32, &Conv2DBackpropFilterF32<Direct>}},  // BLAS: no trace
       .scratch = Conv2DBackpropFilterScratch},
      {.name = "depthwise_conv2d_backprop_input",
       .min_inputs = 2,
       .max_inputs = 2,
       .attrs = {kActivation,
                 kStride,
                 kDilation,
                 kPadding,
                 kPads,
                 {"multiplier", int64_t{0}},
                 {"input_shape", Ints{}, true}},
       .infer = InferDepthwiseBackpropInput,
       .cost = ConvBackpropCost,
       .kernels = {MF_HOST_KERNEL(DType::kF32, DepthwiseBackpropInputF32)}},
      {.name = "depthwise_conv2d_backprop_filter",
       .min_inputs = 2,
       .max_inputs = 2,
       .attrs = {kActivation,
                 kStride,
                 kDilation,
                 kPadding,
                 kPads,
                 {"multiplier", int64_t{0}},
                 {"filter_shape", Ints{}, true}},
       .infer = InferDepthwiseBackpropFilter,
       .cost = ConvBackpropCost,
       .kernels = {MF_HOST_KERNEL(DType::kF32, DepthwiseBackpropFilterF32)}},
      {.name = "max_pool2d_grad",
       .min_inputs = 2,
       .max_inputs = 2,
       .attrs = {kActivation, kStride, kPadding, kPads, {"filter", Ints{}, true}},
       .infer = InferMaxPool2DGrad,
       .cost = PoolGradCost,
       .kernels = {MF_HOST_KERNEL(DType::kF32, MaxPool2DGradF32)}},
      {.name = "avg_pool2d_grad",
       .attrs = {kActivation,
                 kStride,
                 kPadding,
                 kPads,
                 {"filter", Ints{}, true},
                 {"input_shape", Ints{}, true}},
       .infer = InferAvgPool2DGrad,
       .cost = PoolGradCost,
       .kernels = {MF_HOST_KERNEL(DType::kF32, AvgPool2DGradF32)}},
      {.name = "gather",
       .min_inputs = 2,
       .max_inputs = 2,
       .infer = InferGather,
       .cost = MoveCost,
       .kernels = {MF_HOST_KERNEL(DType::kF32, GatherF32)},
       .gradient = GradGather,
       .grad_reads_inputs = kReadsSecond},
      {.name = "scatter_add",
       .min_inputs = 2,
       .max_inputs = 2,
       .attrs = {{"rows", int64_t{0}, true}},
       .infer = InferScatterAdd,
       .cost = ScatterAddCost,
       .kernels = {MF_HOST_KERNEL(DType::kF32, ScatterAddF32)}},
      {.name = "batch_norm_train",
       .min_inputs = 5,
       .max_inputs = 5,
       .num_outputs = 3,
       .attrs = {{"epsilon", 1e-5}, {"momentum", 0.9}, {"axis", int64_t{-1}}},
       .infer = InferBatchNormTrain,
       .cost = NormCost,
       .kernels = {MF_HOST_KERNEL(DType::kF32, BatchNormTrainF32)},
       .gradient = GradBatchNorm,
       .grad_reads_inputs = 0b011,
       .grad_reads_outputs = 0b110},
      {.name = "batch_norm_grad",
       .min_inputs = 5,
       .max_inputs = 5,
       .num_outputs = 3,
       .attrs = {{"axis", int64_t{-1}}},
       .infer = InferBatchNormGrad,
       .cost = NormCost,
       .inplace_input = 0,
       .kernels = {MF_HOST_KERNEL(DType::kF32, BatchNormGradF32)}},
      {.name = "layer_norm",
       .min_inputs = 3,
       .max_inputs = 3,
       .num_outputs = 3,
       .attrs = {{"epsilon", 1e-5}},
       .infer = InferLayerNorm,
       .cost = NormCost,
       .kernels = {MF_HOST_KERNEL(DType::kF32, LayerNormF32)},
       .gradient = GradLayerNorm,
       .grad_reads_inputs = 0b011,
       .grad_reads_outputs = 0b110},
      {.name = "layer_norm_grad",
       .min_inputs = 5,
       .max_inputs = 5,
       .num_outputs = 3,
       .infer = InferLayerNormGrad,
       .cost = NormCost,
       .inplace_input = 0,
       .kernels = {MF_HOST_KERNEL(DType::kF32, LayerNormGradF32)}},
      {.name = "dropout",
       .num_outputs = 2,
       .attrs = {{"rate", 0.1}, {"seed", int64_t{0}}},
       .infer = InferDropout,
       .kernels = {MF_HOST_KERNEL(DType::kF32, DropoutF32)},
       .gradient = GradDropout,
       .grad_reads_outputs = kReadsSecond},
      {.name = "dropout_grad",
       .min_inputs = 2,
       .max_inputs = 2,
       .infer = InferUnaryGrad,
       .inplace_input = 0,
       .kernels = {MF_HOST_KERNEL(DType::kF32, DropoutGradF32)}},
      {.name = "sgd_momentum",
       .min_inputs = 3,
       .max_inputs = 3,
       .num_outputs = 2,
       .attrs = {{"lr", 0.01}, {"momentum", 0.9}},
       .infer = InferSgdMomentum,
       .cost = OptimizerCost,
       .kernels = {MF_HOST_KERNEL(DType::kF32, SgdMomentumF32)},
       .updates_input = {0, 2}},
      {.name = "adam",
       .min_inputs = 4,
       .max_inputs = 4,
       .num_outputs = 3,
       .attrs = {{"lr", 0.001},
                 {"beta1", 0.9},
                 {"beta2", 0.999},
                 {"epsilon", 1e-8},
                 {"step", int64_t{1}}},
       .infer = InferAdam,
       .cost = OptimizerCost,
       .kernels = {MF_HOST_KERNEL(DType::kF32, AdamF32)},
       .updates_input = {0, 2, 3}},
  });
}
#undef MF_MOVE_KERNELS

}  // namespace memfold
