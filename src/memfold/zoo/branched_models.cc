// Branched reference models with the published layer shapes, laid out as TensorFlow Lite's
// converter lays out the hosted float models: NHWC, batch norm folded into the preceding
// convolution's weights and bias, activations fused into the convolutions, branches joined by
// channel concatenation, a global average pool (MEAN), the classifier and a softmax.
//
//   squeezenet    SqueezeNet 1.1 (Iandola et al. 2016; torchvision squeezenet1_1): conv 3x3/2,
//                 fire modules (squeeze 1x1, expand 1x1 and 3x3, concat), VALID max pools.
//   densenet121   DenseNet-121 (Huang et al. 2017; torchvision densenet121 / Keras DenseNet121):
//                 growth 32, blocks 6/12/24/16, bottleneck 4k, compression 0.5.
//   inception_v3  Inception v3 (Szegedy et al. 2016; Keras InceptionV3, no auxiliary head).
//
// DenseNet's layers are pre-activation (BN-ReLU-conv): the norm that follows a convolution
// (norm0 after conv0, norm2 after each bottleneck 1x1) folds into that convolution. The norm in
// front of each layer, each transition and the classifier reads a concatenation shared by
// several layers, so it cannot fold; it is kept as TFLite's converter emits a free-standing
// batch norm: MUL by the per-channel scale gamma/sqrt(var+eps), then ADD of the shift
// beta - mean*scale with the ReLU fused into the ADD. Dense blocks concatenate as Keras does,
// each layer's features appended to the running concatenation.
//
// Weights are deterministic pseudo-random (zoo/builder.h); convolutions followed by a ReLU use
// He-uniform ranges (sqrt(6 / fan_in)) so that activations keep their magnitude with depth.
// Building is O(parameters).
#include <cmath>
#include <string>
#include <vector>

#include "memfold/ops/builder.h"
#include "memfold/zoo/zoo.h"

namespace memfold {
namespace {

constexpr int64_t kClasses = 1000;

struct ConvSpec {
  int64_t out_c;
  int64_t k_h, k_w;
  int64_t stride = 1;
  std::string padding = "same";
  std::string activation = "relu";
  bool bias = true;
};

ValueId Conv(GraphBuilder& b, ValueId x, const ConvSpec& spec, const std::string& name) {
  const int64_t in_c = b.shape(x)[3];
  const int64_t fan_in = spec.k_h * spec.k_w * in_c;
  const float range = spec.activation == "none" ? std::sqrt(3.0f / static_cast<float>(fan_in))
                                                : std::sqrt(6.0f / static_cast<float>(fan_in));
  const ValueId w = b.Weight(name + "/weights", {spec.out_c, spec.k_h, spec.k_w, in_c}, range);
  std::vector<ValueId> inputs = {x, w};
  if (spec.bias) inputs.push_back(b.Weight(name + "/bias", {spec.out_c}, 0.01f));
  return b.Op("conv2d", inputs, ConvAttrs(spec.stride, spec.activation, spec.padding), name,
              "conv");
}

ValueId Concat(GraphBuilder& b, std::vector<ValueId> parts, const std::string& name) {
  Attrs attrs;
  attrs.Set("axis", int64_t{3});
  return b.Op("concat", std::move(parts), attrs, name, "conv");
}

ValueId Pool(GraphBuilder& b, const std::string& op, ValueId x, int64_t k, int64_t stride,
             const std::string& padding, const std::string& name) {
  return b.Op(op, {x}, PoolAttrs(k, k, stride, padding), name, "pool");
}

// Global average pool over height and width (Keras GlobalAveragePooling2D converts to MEAN).
ValueId GlobalMean(GraphBuilder& b, ValueId x, const std::string& name) {
  Attrs attrs;
  attrs.Set("axes", std::vector<int64_t>{1, 2});
  return b.Op("mean", {x}, attrs, name, "pool");
}

Result<Graph> FullyConnectedSoftmax(GraphBuilder& b, ValueId x, const std::string& name) {
  const int64_t depth = b.shape(x).back();
  const ValueId w = b.LayerWeight(name + "/weights", {kClasses, depth}, depth);
  const ValueId bias = b.Weight(name + "/bias", {kClasses}, 0.01f);
  x = b.Op("fully_connected", {x, w, bias}, {}, name, "output");
  return b.Finish({b.Op("softmax", {x}, {}, "predictions", "output")});
}

// --- SqueezeNet 1.1 -------------------------------------------------------------------------

ValueId Fire(GraphBuilder& b, ValueId x, int64_t squeeze, int64_t expand, const std::string& name) {
  x = Conv(b, x, {.out_c = squeeze, .k_h = 1, .k_w = 1}, name + "/squeeze1x1");
  const ValueId e1 = Conv(b, x, {.out_c = expand, .k_h = 1, .k_w = 1}, name + "/expand1x1");
  const ValueId e3 = Conv(b, x, {.out_c = expand, .k_h = 3, .k_w = 3}, name + "/expand3x3");
  return Concat(b, {e1, e3}, name + "/concat");
}

// --- DenseNet-121 ---------------------------------------------------------------------------

constexpr int64_t kGrowth = 32;
constexpr int64_t kBottleneck = 4 * kGrowth;

// Per-channel scale gamma/sqrt(var+eps) of an unfolded norm: positive, in [0.75, 1.25),
// a deterministic pattern of 64 steps (exact in float on every machine).
std::vector<float> NormScale(int64_t channels, int64_t salt) {
  std::vector<float> scale(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    scale[static_cast<size_t>(c)] = 0.75f + static_cast<float>((37 * c + 11 * salt) % 64) / 128.0f;
  }
  return scale;
}

// A small number that differs between most layer names, so layers get different scales.
int64_t NameSalt(const std::string& name) {
  int64_t salt = 0;
  for (char ch : name) salt = (salt * 31 + static_cast<unsigned char>(ch)) % 64;
  return salt;
}

// The unfolded batch norm and ReLU in front of a convolution: MUL then ADD with fused ReLU.
ValueId NormRelu(GraphBuilder& b, ValueId x, const std::string& name) {
  const int64_t c = b.shape(x)[3];
  const ValueId scale =
      b.Constant(name + "/scale", {c}, NormScale(c, NameSalt(name)), Role::kWeight);
  const ValueId shift = b.Weight(name + "/shift", {c}, 0.1f);
  Attrs relu;
  relu.Set("activation", std::string("relu"));
  x = b.Op("mul", {x, scale}, {}, name + "/mul", "norm");
  return b.Op("add", {x, shift}, relu, name + "/add", "norm");
}

// One dense layer: norm1-relu, 1x1 conv to 4k with norm2 folded (bias, fused ReLU), 3x3 conv
// to k (no bias: torchvision's conv2 has none and no norm follows it).
ValueId DenseLayer(GraphBuilder& b, ValueId x, const std::string& name) {
  x = NormRelu(b, x, name + "/norm1");
  x = Conv(b, x, {.out_c = kBottleneck, .k_h = 1, .k_w = 1}, name + "/conv1");
  return Conv(b, x, {.out_c = kGrowth, .k_h = 3, .k_w = 3, .activation = "none", .bias = false},
              name + "/conv2");
}

ValueId DenseBlock(GraphBuilder& b, ValueId x, int layers, const std::string& name) {
  for (int i = 1; i <= layers; ++i) {
    const std::string layer = name + "/layer" + std::to_string(i);
    x = Concat(b, {x, DenseLayer(b, x, layer)}, layer + "/concat");
  }
  return x;
}

// Transition: norm-relu, 1x1 conv halving the channels (no bias), 2x2 average pool.
ValueId Transition(GraphBuilder& b, ValueId x, const std::string& name) {
  x = NormRelu(b, x, name + "/norm");
  x = Conv(b, x,
           {.out_c = b.shape(x)[3] / 2, .k_h = 1, .k_w = 1, .activation = "none", .bias = false},
           name + "/conv");
  return Pool(b, "avg_pool2d", x, 2, 2, "valid", name + "/pool");
}

// --- Inception v3 ---------------------------------------------------------------------------

// Keras conv2d_bn: convolution with the norm folded into a bias, fused ReLU.
ValueId ConvBn(GraphBuilder& b, ValueId x, int64_t out_c, int64_t k_h, int64_t k_w,
               const std::string& name, int64_t stride = 1, const std::string& padding = "same") {
  return Conv(b, x, {.out_c = out_c, .k_h = k_h, .k_w = k_w, .stride = stride, .padding = padding},
              name);
}

ValueId AvgPoolBranch(GraphBuilder& b, ValueId x, int64_t out_c, const std::string& name) {
  x = Pool(b, "avg_pool2d", x, 3, 1, "same", name + "/pool");
  return ConvBn(b, x, out_c, 1, 1, name + "/conv");
}

// Inception-A (mixed 5b-5d, Keras mixed0-2): 1x1 | 1x1-5x5 | 1x1-3x3-3x3 | avgpool-1x1.
ValueId InceptionA(GraphBuilder& b, ValueId x, int64_t pool_c, const std::string& name) {
  const ValueId b1 = ConvBn(b, x, 64, 1, 1, name + "/branch1x1");
  ValueId b5 = ConvBn(b, x, 48, 1, 1, name + "/branch5x5_1");
  b5 = ConvBn(b, b5, 64, 5, 5, name + "/branch5x5_2");
  ValueId b3 = ConvBn(b, x, 64, 1, 1, name + "/branch3x3dbl_1");
  b3 = ConvBn(b, b3, 96, 3, 3, name + "/branch3x3dbl_2");
  b3 = ConvBn(b, b3, 96, 3, 3, name + "/branch3x3dbl_3");
  return Concat(b, {b1, b5, b3, AvgPoolBranch(b, x, pool_c, name + "/branch_pool")}, name);
}

// Reduction (mixed 6a, Keras mixed3): 3x3/2 | 1x1-3x3-3x3/2 | maxpool 3x3/2.
ValueId ReductionA(GraphBuilder& b, ValueId x, const std::string& name) {
  const ValueId b3 = ConvBn(b, x, 384, 3, 3, name + "/branch3x3", 2, "valid");
  ValueId bd = ConvBn(b, x, 64, 1, 1, name + "/branch3x3dbl_1");
  bd = ConvBn(b, bd, 96, 3, 3, name + "/branch3x3dbl_2");
  bd = ConvBn(b, bd, 96, 3, 3, name + "/branch3x3dbl_3", 2, "valid");
  return Concat(b, {b3, bd, Pool(b, "max_pool2d", x, 3, 2, "valid", name + "/branch_pool")}, name);
}

// Inception-B (mixed 6b-6e, Keras mixed4-7) with factorised 7x7 convolutions of width m.
ValueId InceptionB(GraphBuilder& b, ValueId x, int64_t m, const std::string& name) {
  const ValueId b1 = ConvBn(b, x, 192, 1, 1, name + "/branch1x1");
  ValueId b7 = ConvBn(b, x, m, 1, 1, name + "/branch7x7_1");
  b7 = ConvBn(b, b7, m, 1, 7, name + "/branch7x7_2");
  b7 = ConvBn(b, b7, 192, 7, 1, name + "/branch7x7_3");
  ValueId bd = ConvBn(b, x, m, 1, 1, name + "/branch7x7dbl_1");
  bd = ConvBn(b, bd, m, 7, 1, name + "/branch7x7dbl_2");
  bd = ConvBn(b, bd, m, 1, 7, name + "/branch7x7dbl_3");
  bd = ConvBn(b, bd, m, 7, 1, name + "/branch7x7dbl_4");
  bd = ConvBn(b, bd, 192, 1, 7, name + "/branch7x7dbl_5");
  return Concat(b, {b1, b7, bd, AvgPoolBranch(b, x, 192, name + "/branch_pool")}, name);
}

// Reduction (mixed 7a, Keras mixed8): 1x1-3x3/2 | 1x1-1x7-7x1-3x3/2 | maxpool 3x3/2.
ValueId ReductionB(GraphBuilder& b, ValueId x, const std::string& name) {
  ValueId b3 = ConvBn(b, x, 192, 1, 1, name + "/branch3x3_1");
  b3 = ConvBn(b, b3, 320, 3, 3, name + "/branch3x3_2", 2, "valid");
  ValueId b7 = ConvBn(b, x, 192, 1, 1, name + "/branch7x7x3_1");
  b7 = ConvBn(b, b7, 192, 1, 7, name + "/branch7x7x3_2");
  b7 = ConvBn(b, b7, 192, 7, 1, name + "/branch7x7x3_3");
  b7 = ConvBn(b, b7, 192, 3, 3, name + "/branch7x7x3_4", 2, "valid");
  return Concat(b, {b3, b7, Pool(b, "max_pool2d", x, 3, 2, "valid", name + "/branch_pool")}, name);
}

// A 1x3 and a 3x1 convolution of the same input, concatenated (Keras mixed9_i).
ValueId SplitThree(GraphBuilder& b, ValueId x, const std::string& name) {
  const ValueId row = ConvBn(b, x, 384, 1, 3, name + "_1x3");
  const ValueId col = ConvBn(b, x, 384, 3, 1, name + "_3x1");
  return Concat(b, {row, col}, name);
}

// Inception-C (mixed 7b-7c, Keras mixed9-10).
ValueId InceptionC(GraphBuilder& b, ValueId x, const std::string& name) {
  const ValueId b1 = ConvBn(b, x, 320, 1, 1, name + "/branch1x1");
  const ValueId b3 =
      SplitThree(b, ConvBn(b, x, 384, 1, 1, name + "/branch3x3_1"), name + "/branch3x3");
  ValueId bd = ConvBn(b, x, 448, 1, 1, name + "/branch3x3dbl_1");
  bd = SplitThree(b, ConvBn(b, bd, 384, 3, 3, name + "/branch3x3dbl_2"), name + "/branch3x3dbl");
  return Concat(b, {b1, b3, bd, AvgPoolBranch(b, x, 192, name + "/branch_pool")}, name);
}

}  // namespace

Result<Graph> BuildSqueezeNet(const ZooArgs& args) {
  const int64_t res = args.Int("res");
  GraphBuilder b("squeezenet");
  ValueId x = b.Input("input", {args.Int("batch"), res, res, 3});
  // torchvision pads neither conv1 nor the pools; its pools round up (ceil_mode), which VALID
  // matches whenever (size - 3) is even, as at 224 (111 -> 55 -> 27 -> 13).
  x = Conv(b, x, {.out_c = 64, .k_h = 3, .k_w = 3, .stride = 2, .padding = "valid"}, "conv1");
  x = Pool(b, "max_pool2d", x, 3, 2, "valid", "pool1");
  x = Fire(b, x, 16, 64, "fire2");
  x = Fire(b, x, 16, 64, "fire3");
  x = Pool(b, "max_pool2d", x, 3, 2, "valid", "pool3");
  x = Fire(b, x, 32, 128, "fire4");
  x = Fire(b, x, 32, 128, "fire5");
  x = Pool(b, "max_pool2d", x, 3, 2, "valid", "pool5");
  x = Fire(b, x, 48, 192, "fire6");
  x = Fire(b, x, 48, 192, "fire7");
  x = Fire(b, x, 64, 256, "fire8");
  x = Fire(b, x, 64, 256, "fire9");
  // The classifier is a 1x1 convolution to the classes with ReLU, averaged over the map.
  x = Conv(b, x, {.out_c = kClasses, .k_h = 1, .k_w = 1}, "conv10");
  x = GlobalMean(b, x, "pool10");
  return b.Finish({b.Op("softmax", {x}, {}, "predictions", "output")});
}

Result<Graph> BuildDenseNet121(const ZooArgs& args) {
  const int64_t res = args.Int("res");
  GraphBuilder b("densenet121");
  ValueId x = b.Input("input", {args.Int("batch"), res, res, 3});
  x = Conv(b, x, {.out_c = 64, .k_h = 7, .k_w = 7, .stride = 2}, "conv0");  // norm0 folded
  // torchvision pads the 3x3/2 max pool by one; after the ReLU a SAME pool takes the same max.
  x = Pool(b, "max_pool2d", x, 3, 2, "same", "pool0");
  constexpr int kLayers[] = {6, 12, 24, 16};
  for (int block = 0; block < 4; ++block) {
    x = DenseBlock(b, x, kLayers[block], "block" + std::to_string(block + 1));
    if (block < 3) x = Transition(b, x, "transition" + std::to_string(block + 1));
  }
  x = NormRelu(b, x, "norm5");
  return FullyConnectedSoftmax(b, GlobalMean(b, x, "avg_pool"), "classifier");
}

Result<Graph> BuildInceptionV3(const ZooArgs& args) {
  const int64_t res = args.Int("res");
  GraphBuilder b("inception_v3");
  ValueId x = b.Input("input", {args.Int("batch"), res, res, 3});
  x = ConvBn(b, x, 32, 3, 3, "conv2d_1a_3x3", 2, "valid");
  x = ConvBn(b, x, 32, 3, 3, "conv2d_2a_3x3", 1, "valid");
  x = ConvBn(b, x, 64, 3, 3, "conv2d_2b_3x3");
  x = Pool(b, "max_pool2d", x, 3, 2, "valid", "maxpool_3a_3x3");
  x = ConvBn(b, x, 80, 1, 1, "conv2d_3b_1x1", 1, "valid");
  x = ConvBn(b, x, 192, 3, 3, "conv2d_4a_3x3", 1, "valid");
  x = Pool(b, "max_pool2d", x, 3, 2, "valid", "maxpool_5a_3x3");
  x = InceptionA(b, x, 32, "mixed_5b");
  x = InceptionA(b, x, 64, "mixed_5c");
  x = InceptionA(b, x, 64, "mixed_5d");
  x = ReductionA(b, x, "mixed_6a");
  x = InceptionB(b, x, 128, "mixed_6b");
  x = InceptionB(b, x, 160, "mixed_6c");
  x = InceptionB(b, x, 160, "mixed_6d");
  x = InceptionB(b, x, 192, "mixed_6e");
  x = ReductionB(b, x, "mixed_7a");
  x = InceptionC(b, x, "mixed_7b");
  x = InceptionC(b, x, "mixed_7c");
  return FullyConnectedSoftmax(b, GlobalMean(b, x, "avg_pool"), "predictions_fc");
}

}  // namespace memfold
