// The kernels memfold had before issue 16 against TensorFlow Lite Micro's own kernel-test vectors
// (their bit-exactness on whole models is checked in tflm_reference_test.cc against TFLM's
// outputs for the shared models): conv_test.cc, depthwise_conv_test.cc,
// fully_connected_test.cc, pooling_test.cc, softmax_test.cc, add_test.cc and mul_test.cc, the
// case named beside each, compared with TFLM's tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tests/kernels/kernel_test_util.h"

namespace memfold {
namespace {

using Floats = std::vector<float>;
using Ints = std::vector<int64_t>;

Floats RunFloatNode(const std::string& op, const std::vector<std::pair<Shape, Floats>>& inputs,
                    Attrs attrs, bool constants_after_first = true) {
  TestNet net;
  std::vector<ValueId> ids;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const auto& [shape, data] = inputs[k];
    ids.push_back(k > 0 && constants_after_first
                      ? net.AddConstant(shape, DType::kF32, ToBytes(data))
                      : net.AddInput(shape, DType::kF32, ToBytes(data)));
  }
  return FromBytes<float>(net.RunBytes(net.AddNode(op, ids, std::move(attrs))));
}

void ExpectNear(const Floats& got, const Floats& expected, float tolerance) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], expected[k], tolerance) << k;
}

// conv_test.cc's common data: input [2, 2, 4, 1], three 2x2 filters, stride 2, VALID.
const Floats kConvInput = {1, 1, 1, 1, 2, 2, 2, 2, 1, 2, 3, 4, 1, 2, 3, 4};
const Floats kConvFilter = {1, 2, 3, 4, -1, 1, -1, 1, -1, -1, 1, 1};
const Floats kConvBias = {1, 2, 3};
const Floats kConvGolden = {18, 2, 5, 18, 2, 5, 17, 4, 3, 37, 4, 3};
Attrs ConvStride2Valid() {
  return MakeAttrs({{"stride", Ints{2, 2}}, {"padding", std::string("valid")}});
}

// conv_test.cc SimpleTestFloat.
TEST(TflmGoldenExisting, ConvFloat) {
  ExpectNear(
      RunFloatNode("conv2d",
                   {{{2, 2, 4, 1}, kConvInput}, {{3, 2, 2, 1}, kConvFilter}, {{3}, kConvBias}},
                   ConvStride2Valid()),
      kConvGolden, 1e-5f);
}

// conv_test.cc SimpleTestQuantizedPerChannel: input scale 0.5, output scale 1, filters quantised
// per channel symmetrically, int32 biases at input x filter scale; within 1.
TEST(TflmGoldenExisting, ConvInt8PerChannel) {
  TestNet net;
  std::vector<int8_t> x;
  for (float v : kConvInput) x.push_back(static_cast<int8_t>(std::round(v / 0.5f)));
  const ValueId in = net.AddInput({2, 2, 4, 1}, DType::kI8, ToBytes(x), Quant({0.5f}));
  std::vector<float> scales, bias_scales;
  std::vector<int8_t> w;
  std::vector<int32_t> b;
  for (size_t c = 0; c < 3; ++c) {
    float peak = 0;
    for (size_t k = 0; k < 4; ++k) peak = std::max(peak, std::fabs(kConvFilter[c * 4 + k]));
    scales.push_back(peak / 127.0f);
    bias_scales.push_back(0.5f * scales.back());
    for (size_t k = 0; k < 4; ++k)
      w.push_back(static_cast<int8_t>(std::round(kConvFilter[c * 4 + k] / scales.back())));
    b.push_back(static_cast<int32_t>(std::round(kConvBias[c] / bias_scales.back())));
  }
  const ValueId filter = net.AddConstant({3, 2, 2, 1}, DType::kI8, ToBytes(w), Quant(scales));
  const ValueId bias = net.AddConstant({3}, DType::kI32, ToBytes(b), Quant(bias_scales));
  const ValueId out = net.AddNode("conv2d", {in, filter, bias}, ConvStride2Valid());
  net.SetQuant(out, Quant({1.0f}));
  const std::vector<int8_t> got = FromBytes<int8_t>(net.RunBytes(out));
  ASSERT_EQ(got.size(), kConvGolden.size());
  for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], kConvGolden[k], 1.0) << k;
}

// depthwise_conv_test.cc SimpleTest: input [1, 3, 2, 2], depth multiplier 2, VALID, stride 1.
TEST(TflmGoldenExisting, DepthwiseConvFloat) {
  ExpectNear(
      RunFloatNode("depthwise_conv2d",
                   {{{1, 3, 2, 2}, {1, 2, 7, 8, 3, 4, 9, 10, 5, 6, 11, 12}},
                    {{1, 2, 2, 4}, {1, 2, 3, 4, -9, 10, -11, 12, 5, 6, 7, 8, 13, -14, 15, -16}},
                    {{4}, {1, 2, 3, 4}}},
                   MakeAttrs({{"multiplier", int64_t{2}}, {"padding", std::string("valid")}})),
      {71, -34, 99, -20, 91, -26, 127, -4}, 1e-5f);
}

// fully_connected_test.cc SimpleTest.
TEST(TflmGoldenExisting, FullyConnectedFloat) {
  Floats weights;
  for (int u = 0; u < 3; ++u) {
    for (int k = 1; k <= 10; ++k) weights.push_back(static_cast<float>(k));
  }
  ExpectNear(
      RunFloatNode("fully_connected",
                   {{{2, 10}, {1, 2, 3, 4, 5, 6, 7, 8, -9, -10, 1, 2, 3, 4, 5, 6, 7, -8, 9, -10}},
                    {{3, 10}, weights},
                    {{3}, {1, 2, 3}}},
                   {}),
      {24, 25, 26, 58, 59, 60}, 1e-5f);
}

// pooling_test.cc SimpleAveragePoolTestFloat / SimpleMaxPoolTestFloat: 2x2 windows, stride 2.
TEST(TflmGoldenExisting, PoolingFloat) {
  const Floats input = {0, 6, 2, 4, 3, 2, 10, 7};
  const Attrs pool = MakeAttrs(
      {{"filter", Ints{2, 2}}, {"stride", Ints{2, 2}}, {"padding", std::string("valid")}});
  ExpectNear(RunFloatNode("avg_pool2d", {{{1, 2, 4, 1}, input}}, pool), {2.75f, 5.75f}, 1e-5f);
  ExpectNear(RunFloatNode("max_pool2d", {{{1, 2, 4, 1}, input}}, pool), {6, 10}, 1e-5f);
}

// softmax_test.cc SimpleTest.
TEST(TflmGoldenExisting, SoftmaxFloat) {
  ExpectNear(RunFloatNode("softmax", {{{2, 5}, {1, 2, 3, 4, 5, -1, -2, -3, -4, -5}}}, {}),
             {0.011656231f, 0.031684921f, 0.086128544f, 0.234121657f, 0.636408647f, 0.636408647f,
              0.234121657f, 0.086128544f, 0.031684921f, 0.011656231f},
             1e-5f);
}

// add_test.cc FloatAddNoActivation, mul_test.cc's float case on the same operands.
TEST(TflmGoldenExisting, AddAndMulFloat) {
  const std::vector<std::pair<Shape, Floats>> operands = {{{1, 2, 2, 1}, {-2.0f, 0.2f, 0.7f, 0.8f}},
                                                          {{1, 2, 2, 1}, {0.1f, 0.2f, 0.3f, 0.5f}}};
  ExpectNear(RunFloatNode("add", operands, {}, false), {-1.9f, 0.4f, 1.0f, 1.3f}, 1e-5f);
  ExpectNear(RunFloatNode("mul", operands, {}, false), {-0.2f, 0.04f, 0.21f, 0.4f}, 1e-5f);
}

}  // namespace
}  // namespace memfold
