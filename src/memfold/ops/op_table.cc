// The op table: one row per operator. Keep rows short; put logic in infer.cc, cost.cc and
// the kernels.
#include "memfold/ops/op_table.h"

#include <cstdint>
#include <string>

#include "memfold/ops/cost.h"
#include "memfold/ops/gradient.h"
#include "memfold/ops/infer.h"
#include "memfold/ops/kernels/access.h"
#include "memfold/ops/overlap_models.h"
#include "memfold/ops/train_infer.h"
#include "memfold/ops/kernels/convert_kernels.h"
#include "memfold/ops/kernels/float_kernels.h"
#include "memfold/ops/kernels/int_kernels.h"
#include "memfold/ops/kernels/svdf.h"
#include "memfold/ops/kernels/train_kernels.h"

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
#define MF_MOVE_KERNELS(K)                                                         \
  std::vector<KernelEntry> {                                                       \
    MF_KERNEL_T(DType::kF32, K, float), MF_KERNEL_T(DType::kI8, K, int8_t),         \
        MF_KERNEL_T(DType::kU8, K, uint8_t), MF_KERNEL_T(DType::kBool, K, uint8_t), \
        MF_KERNEL_T(DType::kI16, K, int16_t), MF_KERNEL_T(DType::kI32, K, int32_t), \
        MF_KERNEL_T(DType::kI64, K, int64_t)                                        \
  }

// Bits of OpDef::grad_reads_*.
constexpr uint32_t kReadsFirst = 1, kReadsSecond = 2, kReadsBoth = 3;

OpDef Unary(std::string_view name, KernelEntry f32, GradientFn gradient = nullptr,
            uint32_t reads_outputs = 0) {
  return {.name = name, .infer = InferSameAsInput,
          .overlap_analytic = AnalyticElementwise, .overlap_algorithmic = AlgorithmicElementwise,
          .inplace_input = 0,
          .kernels = {f32}, .gradient = gradient, .grad_reads_outputs = reads_outputs};
}

OpDef Binary(std::string_view name, KernelEntry f32, bool fused_activation,
             GradientFn gradient = nullptr, uint32_t reads_inputs = 0) {
  OpDef def{.name = name, .min_inputs = 2, .max_inputs = 2, .infer = InferBroadcast,
            .overlap_analytic = AnalyticBroadcast, .overlap_algorithmic = AlgorithmicBroadcast,
            .inplace_input = 0, .kernels = {f32}, .gradient = gradient,
            .grad_reads_inputs = reads_inputs};
  if (fused_activation) def.attrs = {kActivation};
  return def;
}

// A row with one more kernel (the int8 variants of the binary ops).
OpDef WithKernel(OpDef def, KernelEntry kernel) {
  def.kernels.push_back(kernel);
  return def;
}

}  // namespace

std::vector<OpDef> BuildOpTable() {
  return {
      Unary("relu", MF_KERNEL(DType::kF32, ReluF32), GradRelu, kReadsFirst),
      Unary("relu6", MF_KERNEL(DType::kF32, Relu6F32)),
      Unary("tanh", MF_KERNEL(DType::kF32, TanhF32), GradTanh, kReadsFirst),
      Unary("sigmoid", MF_KERNEL(DType::kF32, SigmoidF32), GradSigmoid, kReadsFirst),
      Unary("exp", MF_KERNEL(DType::kF32, ExpF32), GradExp, kReadsFirst),
      Unary("neg", MF_KERNEL(DType::kF32, NegF32), GradNeg),
      Unary("hard_swish", MF_KERNEL(DType::kF32, HardSwishF32)),
      WithKernel(Binary("add", MF_KERNEL(DType::kF32, AddF32), true, GradAdd), MF_KERNEL(DType::kI8, AddI8)),
      WithKernel(Binary("sub", MF_KERNEL(DType::kF32, SubF32), true, GradSub), MF_KERNEL(DType::kI8, SubI8)),
      WithKernel(Binary("mul", MF_KERNEL(DType::kF32, MulF32), true, GradMul, kReadsBoth), MF_KERNEL(DType::kI8, MulI8)),
      Binary("div", MF_KERNEL(DType::kF32, DivF32), true),
      Binary("max", MF_KERNEL(DType::kF32, MaxF32), false),
      Binary("min", MF_KERNEL(DType::kF32, MinF32), false),
      {.name = "fully_connected", .min_inputs = 2, .max_inputs = 3,
       .attrs = {kActivation, {"keep_num_dims", int64_t{0}}},
       .infer = InferFullyConnected, .cost = MatrixCost,
       .overlap_analytic = AnalyticFullyConnected, .overlap_algorithmic = AlgorithmicFullyConnected,
       .kernels = {MF_KERNEL(DType::kF32, FullyConnectedF32), MF_KERNEL(DType::kI8, FullyConnectedI8)},
       .gradient = GradFullyConnected, .grad_reads_inputs = kReadsBoth},
      {.name = "matmul", .min_inputs = 2, .max_inputs = 2,
       .attrs = {{"transpose_a", int64_t{0}}, {"transpose_b", int64_t{0}}},
       .infer = InferMatMul, .cost = MatrixCost,
       .kernels = {{DType::kF32, &MatMulF32<Direct>}},  // BLAS: no access model, no trace
       .gradient = GradMatMul, .grad_reads_inputs = kReadsBoth},
      {.name = "batch_matmul", .min_inputs = 2, .max_inputs = 2,
       .attrs = {{"transpose_a", int64_t{0}}, {"transpose_b", int64_t{0}}},
       .infer = InferBatchMatMul, .cost = MatrixCost,
       .kernels = {{DType::kF32, &BatchMatMulF32<Direct>}},  // BLAS: no access model, no trace
       .gradient = GradMatMul, .grad_reads_inputs = kReadsBoth},
      {.name = "conv2d", .min_inputs = 2, .max_inputs = 3,
       .attrs = {kActivation, kStride, kDilation, kPadding, kPads},
       .infer = InferConv2D, .cost = ConvCost,
       .overlap_analytic = AnalyticWindow, .overlap_algorithmic = AlgorithmicConv2D,
       .kernels = {MF_KERNEL(DType::kF32, Conv2DF32), MF_KERNEL(DType::kI8, Conv2DI8)},
       .gradient = GradConv2D, .grad_reads_inputs = kReadsBoth},
      {.name = "depthwise_conv2d", .min_inputs = 2, .max_inputs = 3,
       .attrs = {kActivation, kStride, kDilation, kPadding, kPads, {"multiplier", int64_t{0}}},
       .infer = InferDepthwiseConv2D, .cost = ConvCost,
       .overlap_analytic = AnalyticWindow, .overlap_algorithmic = AlgorithmicDepthwise,
       .kernels = {MF_KERNEL(DType::kF32, DepthwiseConv2DF32), MF_KERNEL(DType::kI8, DepthwiseConv2DI8)},
       .gradient = GradDepthwise, .grad_reads_inputs = kReadsBoth},
      {.name = "max_pool2d",
       .attrs = {kActivation, kStride, kPadding, kPads, {"filter", Ints{}, true}},
       .infer = InferPool2D, .cost = PoolCost,
       .overlap_analytic = AnalyticWindow, .overlap_algorithmic = AlgorithmicPool,
       .kernels = {MF_KERNEL(DType::kF32, MaxPool2DF32), MF_KERNEL(DType::kI8, MaxPool2DI8)},
       .gradient = GradMaxPool, .grad_reads_inputs = kReadsFirst},
      {.name = "avg_pool2d",
       .attrs = {kActivation, kStride, kPadding, kPads, {"filter", Ints{}, true}},
       .infer = InferPool2D, .cost = PoolCost,
       .overlap_analytic = AnalyticWindow, .overlap_algorithmic = AlgorithmicPool,
       .kernels = {MF_KERNEL(DType::kF32, AvgPool2DF32), MF_KERNEL(DType::kI8, AvgPool2DI8)},
       .gradient = GradAvgPool},
      {.name = "mean", .attrs = {{"axes", Ints{}, true}, {"keepdims", int64_t{0}}},
       .infer = InferMean, .overlap_analytic = AnalyticMean, .overlap_algorithmic = AlgorithmicMean,
       .kernels = {MF_KERNEL(DType::kF32, MeanF32), MF_KERNEL_T(DType::kI8, MeanQuantized, int8_t),
                   MF_KERNEL_T(DType::kI16, MeanQuantized, int16_t)},
       .scratch = MeanScratch, .gradient = GradMean},
      {.name = "softmax",
       .attrs = {{"beta", 1.0}, {"axis", int64_t{-1}}, {"output_dtype", std::string()}},
       .infer = InferSoftmax,
       .overlap_analytic = AnalyticElementwise, .overlap_algorithmic = AlgorithmicSoftmax,
       .kernels = {MF_KERNEL(DType::kF32, SoftmaxF32), MF_KERNEL(DType::kI8, SoftmaxI8)},
       .gradient = GradSoftmax, .grad_reads_outputs = kReadsFirst},
      {.name = "reshape", .attrs = {{"shape", Ints{}, true}}, .infer = InferReshape,
       .cost = MoveCost, .alias = true, .gradient = GradReshape},
      // view = 1: liveness may place the inputs inside the output (plan/liveness.h).
      {.name = "concat", .max_inputs = kVariadic, .attrs = {{"axis", int64_t{0}, true}, {"view", int64_t{0}}},
       .infer = InferConcat, .cost = MoveCost,
       .overlap_analytic = AnalyticConcat, .overlap_algorithmic = AlgorithmicConcat, .kernels = MF_MOVE_KERNELS(Concat),
       .gradient = GradConcat},
      {.name = "slice", .attrs = {{"begin", Ints{}, true}, {"size", Ints{}, true}, {"view", int64_t{0}}},
       .infer = InferSlice, .cost = MoveCost,
       .overlap_analytic = AnalyticSlice, .overlap_algorithmic = AlgorithmicSlice, .kernels = MF_MOVE_KERNELS(Slice),
       .gradient = GradSlice},
      {.name = "transpose", .attrs = {{"perm", Ints{}, true}}, .infer = InferTranspose,
       .cost = MoveCost, .overlap_algorithmic = AlgorithmicTranspose, .kernels = MF_MOVE_KERNELS(Transpose),
       .gradient = GradTranspose},
      {.name = "pad", .attrs = {{"paddings", Ints{}, true}, {"value", 0.0}},
       .infer = InferPad, .cost = MoveCost,
       .overlap_analytic = AnalyticPad, .overlap_algorithmic = AlgorithmicPad, .kernels = MF_MOVE_KERNELS(Pad),
       .gradient = GradPad},
      {.name = "broadcast_to", .attrs = {{"shape", Ints{}, true}}, .infer = InferBroadcastTo,
       .cost = MoveCost, .overlap_analytic = AnalyticBroadcast,
       .overlap_algorithmic = AlgorithmicBroadcast, .kernels = MF_MOVE_KERNELS(BroadcastTo),
       .gradient = GradBroadcastTo},
      {.name = "batch_norm_apply", .min_inputs = 5, .max_inputs = 5, .infer = InferSameAsInput,
       .overlap_analytic = AnalyticBroadcast, .overlap_algorithmic = AlgorithmicBroadcast,
       .inplace_input = 0, .kernels = {MF_KERNEL(DType::kF32, BatchNormApplyF32)}},
      {.name = "mask_encode", .infer = InferMaskEncode, .kernels = {MF_KERNEL(DType::kF32, MaskEncodeF32)}},
      {.name = "mask_decode", .attrs = {{"value", 1.0}}, .infer = InferMaskDecode,
       .kernels = {MF_KERNEL(DType::kBit, MaskDecode)}},
      {.name = "quantize", .attrs = {{"dtype", std::string(), true}}, .infer = InferConvertType,
       .overlap_analytic = AnalyticElementwise, .overlap_algorithmic = AlgorithmicElementwise,
       .kernels = {MF_KERNEL(DType::kF32, QuantizeF32), MF_KERNEL_T(DType::kI8, Requantize, int8_t),
                   MF_KERNEL_T(DType::kU8, Requantize, uint8_t), MF_KERNEL_T(DType::kI16, Requantize, int16_t),
                   MF_KERNEL_T(DType::kI32, Requantize, int32_t)}},
      {.name = "dequantize", .attrs = {{"dtype", std::string("f32")}}, .infer = InferConvertType,
       .overlap_analytic = AnalyticElementwise, .overlap_algorithmic = AlgorithmicElementwise,
       .kernels = {MF_KERNEL_T(DType::kI8, Dequantize, int8_t), MF_KERNEL_T(DType::kU8, Dequantize, uint8_t),
                   MF_KERNEL_T(DType::kI16, Dequantize, int16_t)}},
      {.name = "svdf", .min_inputs = 3, .max_inputs = 5,  // bias (input 3) is optional
       .attrs = {{"rank", int64_t{1}}, kActivation}, .infer = InferSvdf,
       .overlap_analytic = SvdfOverlap, .overlap_algorithmic = SvdfOverlap,
       .kernels = {MF_KERNEL(DType::kF32, SvdfF32), MF_KERNEL(DType::kI8, SvdfI8)},
       .scratch = SvdfScratch},
      // Training ops (train_infer.h, kernels/train_kernels.h).
      {.name = "relu_grad", .min_inputs = 2, .max_inputs = 2, .infer = InferUnaryGrad,
       .inplace_input = 0, .kernels = {MF_KERNEL(DType::kF32, ReluGradF32)}},
      {.name = "tanh_grad", .min_inputs = 2, .max_inputs = 2, .infer = InferUnaryGrad,
       .inplace_input = 0, .kernels = {MF_KERNEL(DType::kF32, TanhGradF32)}},
      {.name = "sigmoid_grad", .min_inputs = 2, .max_inputs = 2, .infer = InferUnaryGrad,
       .inplace_input = 0, .kernels = {MF_KERNEL(DType::kF32, SigmoidGradF32)}},
      {.name = "softmax_grad", .min_inputs = 2, .max_inputs = 2, .infer = InferSoftmaxGrad,
       .inplace_input = 0, .kernels = {MF_KERNEL(DType::kF32, SoftmaxGradF32)}},
      {.name = "softmax_cross_entropy", .min_inputs = 2, .max_inputs = 2,
       .infer = InferSoftmaxCrossEntropy, .cost = LossCost,
       .kernels = {MF_KERNEL(DType::kF32, SoftmaxCrossEntropyF32)},
       .gradient = GradSoftmaxCrossEntropy, .grad_reads_inputs = kReadsBoth},
      {.name = "softmax_cross_entropy_grad", .min_inputs = 3, .max_inputs = 3,
       .infer = InferSoftmaxCrossEntropyGrad, .cost = LossCost, .inplace_input = 1,
       .kernels = {MF_KERNEL(DType::kF32, SoftmaxCrossEntropyGradF32)}},
      {.name = "mse_loss", .min_inputs = 2, .max_inputs = 2, .infer = InferMseLoss, .cost = LossCost,
       .kernels = {MF_KERNEL(DType::kF32, MseLossF32)},
       .gradient = GradMse, .grad_reads_inputs = kReadsBoth},
      {.name = "mse_loss_grad", .min_inputs = 3, .max_inputs = 3, .infer = InferMseLossGrad,
       .cost = LossCost, .kernels = {MF_KERNEL(DType::kF32, MseLossGradF32)}},
      {.name = "reduce_sum", .attrs = {{"axes", Ints{}, true}, {"keepdims", int64_t{0}}},
       .infer = InferReduceSum, .cost = ReduceSumCost, .kernels = {MF_KERNEL(DType::kF32, ReduceSumF32)},
       .gradient = GradReduceSum},
      {.name = "conv2d_backprop_input", .min_inputs = 2, .max_inputs = 2,
       .attrs = {kActivation, kStride, kDilation, kPadding, kPads, {"input_shape", Ints{}, true}},
       .infer = InferConv2DBackpropInput, .cost = ConvBackpropCost,
       .kernels = {MF_KERNEL(DType::kF32, Conv2DBackpropInputF32)}},
      {.name = "conv2d_backprop_filter", .min_inputs = 2, .max_inputs = 2,
       .attrs = {kActivation, kStride, kDilation, kPadding, kPads, {"filter_shape", Ints{}, true}},
       .infer = InferConv2DBackpropFilter, .cost = ConvBackpropCost,
       .kernels = {MF_KERNEL(DType::kF32, Conv2DBackpropFilterF32)},
       .scratch = Conv2DBackpropFilterScratch},
      {.name = "depthwise_conv2d_backprop_input", .min_inputs = 2, .max_inputs = 2,
       .attrs = {kActivation, kStride, kDilation, kPadding, kPads, {"multiplier", int64_t{0}},
                 {"input_shape", Ints{}, true}},
       .infer = InferDepthwiseBackpropInput, .cost = ConvBackpropCost,
       .kernels = {MF_KERNEL(DType::kF32, DepthwiseBackpropInputF32)}},
      {.name = "depthwise_conv2d_backprop_filter", .min_inputs = 2, .max_inputs = 2,
       .attrs = {kActivation, kStride, kDilation, kPadding, kPads, {"multiplier", int64_t{0}},
                 {"filter_shape", Ints{}, true}},
       .infer = InferDepthwiseBackpropFilter, .cost = ConvBackpropCost,
       .kernels = {MF_KERNEL(DType::kF32, DepthwiseBackpropFilterF32)}},
      {.name = "max_pool2d_grad", .min_inputs = 2, .max_inputs = 2,
       .attrs = {kActivation, kStride, kPadding, kPads, {"filter", Ints{}, true}},
       .infer = InferMaxPool2DGrad, .cost = PoolGradCost,
       .kernels = {MF_KERNEL(DType::kF32, MaxPool2DGradF32)}},
      {.name = "avg_pool2d_grad",
       .attrs = {kActivation, kStride, kPadding, kPads, {"filter", Ints{}, true},
                 {"input_shape", Ints{}, true}},
       .infer = InferAvgPool2DGrad, .cost = PoolGradCost,
       .kernels = {MF_KERNEL(DType::kF32, AvgPool2DGradF32)}},
      {.name = "gather", .min_inputs = 2, .max_inputs = 2, .infer = InferGather, .cost = MoveCost,
       .kernels = {MF_KERNEL(DType::kF32, GatherF32)},
       .gradient = GradGather, .grad_reads_inputs = kReadsSecond},
      {.name = "scatter_add", .min_inputs = 2, .max_inputs = 2, .attrs = {{"rows", int64_t{0}, true}},
       .infer = InferScatterAdd, .cost = ScatterAddCost, .kernels = {MF_KERNEL(DType::kF32, ScatterAddF32)}},
      {.name = "batch_norm_train", .min_inputs = 5, .max_inputs = 5, .num_outputs = 3,
       .attrs = {{"epsilon", 1e-5}, {"momentum", 0.9}}, .infer = InferBatchNormTrain, .cost = NormCost,
       .kernels = {MF_KERNEL(DType::kF32, BatchNormTrainF32)},
       .gradient = GradBatchNorm, .grad_reads_inputs = 0b011, .grad_reads_outputs = 0b110},
      {.name = "batch_norm_grad", .min_inputs = 5, .max_inputs = 5, .num_outputs = 3,
       .infer = InferBatchNormGrad, .cost = NormCost, .inplace_input = 0, .kernels = {MF_KERNEL(DType::kF32, BatchNormGradF32)}},
      {.name = "layer_norm", .min_inputs = 3, .max_inputs = 3, .num_outputs = 3,
       .attrs = {{"epsilon", 1e-5}}, .infer = InferLayerNorm, .cost = NormCost,
       .kernels = {MF_KERNEL(DType::kF32, LayerNormF32)},
       .gradient = GradLayerNorm, .grad_reads_inputs = 0b011, .grad_reads_outputs = 0b110},
      {.name = "layer_norm_grad", .min_inputs = 5, .max_inputs = 5, .num_outputs = 3,
       .infer = InferLayerNormGrad, .cost = NormCost, .inplace_input = 0, .kernels = {MF_KERNEL(DType::kF32, LayerNormGradF32)}},
      {.name = "dropout", .num_outputs = 2, .attrs = {{"rate", 0.1}, {"seed", int64_t{0}}},
       .infer = InferDropout, .kernels = {MF_KERNEL(DType::kF32, DropoutF32)},
       .gradient = GradDropout, .grad_reads_outputs = kReadsSecond},
      {.name = "dropout_grad", .min_inputs = 2, .max_inputs = 2, .infer = InferUnaryGrad,
       .inplace_input = 0, .kernels = {MF_KERNEL(DType::kF32, DropoutGradF32)}},
      {.name = "sgd_momentum", .min_inputs = 3, .max_inputs = 3, .num_outputs = 2,
       .attrs = {{"lr", 0.01}, {"momentum", 0.9}}, .infer = InferSgdMomentum, .cost = OptimizerCost,
       .kernels = {MF_KERNEL(DType::kF32, SgdMomentumF32)}, .updates_input = {0, 2}},
      {.name = "adam", .min_inputs = 4, .max_inputs = 4, .num_outputs = 3,
       .attrs = {{"lr", 0.001}, {"beta1", 0.9}, {"beta2", 0.999}, {"epsilon", 1e-8}, {"step", int64_t{1}}},
       .infer = InferAdam, .cost = OptimizerCost,
       .kernels = {MF_KERNEL(DType::kF32, AdamF32)}, .updates_input = {0, 2, 3}},
  };
}
#undef MF_MOVE_KERNELS

}  // namespace memfold
