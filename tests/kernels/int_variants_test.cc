// Integer variants of operators that had float kernels only. MAXIMUM / MINIMUM and REDUCE_MAX /
// REDUCE_MIN on int8 and int16 compare the raw values (TFLM's maximum_minimum.cc and reduce.cc
// keep the input's quantisation): the float vectors of maximum_minimum_test.cc (FloatTest) in
// int16 at scale 0.01, exact. 16x8 convolution (int16 activations, int8 per-channel filters,
// int64 or int32 bias) against TensorFlow Lite Micro's conv_test.cc:
// SimpleTestQuantized16x8PerChannel64bBias and ...32bBias (input [2, 2, 4, 1], three 2x2 filters,
// stride 2, VALID; input scale 0.5, output scale 1; filters quantised per channel symmetrically as
// TFLM's test helper does, biases at input scale x filter scale), goldens within TFLM's tolerance
// of 1.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tests/kernels/kernel_test_util.h"

namespace memfold {
namespace {

const std::vector<float> kInput = {1, 1, 1, 1, 2, 2, 2, 2, 1, 2, 3, 4, 1, 2, 3, 4};
const std::vector<float> kFilter = {1, 2, 3, 4, -1, 1, -1, 1, -1, -1, 1, 1};
const std::vector<float> kBias = {1, 2, 3};
const std::vector<float> kGolden = {18, 2, 5, 18, 2, 5, 17, 4, 3, 37, 4, 3};

template <typename Bias>
std::vector<int16_t> RunConv16x8(DType bias_type) {
  TestNet net;
  std::vector<int16_t> x;
  for (float v : kInput) x.push_back(static_cast<int16_t>(std::round(v / 0.5f)));
  const ValueId in = net.AddInput({2, 2, 4, 1}, DType::kI16, ToBytes(x), Quant({0.5f}));
  // Per output channel: scale max |w| / 127, values rounded (SymmetricPerChannelQuantize).
  std::vector<float> scales;
  std::vector<int8_t> w;
  std::vector<Bias> b;
  for (size_t c = 0; c < 3; ++c) {
    float peak = 0;
    for (size_t k = 0; k < 4; ++k) peak = std::max(peak, std::fabs(kFilter[c * 4 + k]));
    scales.push_back(peak / 127.0f);
    for (size_t k = 0; k < 4; ++k) {
      w.push_back(static_cast<int8_t>(std::round(kFilter[c * 4 + k] / scales.back())));
    }
    b.push_back(static_cast<Bias>(std::round(kBias[c] / (0.5f * scales.back()))));
  }
  const ValueId filter = net.AddConstant({3, 2, 2, 1}, DType::kI8, ToBytes(w), Quant(scales));
  std::vector<float> bias_scales;
  for (float s : scales) bias_scales.push_back(0.5f * s);
  const ValueId bias = net.AddConstant({3}, bias_type, ToBytes(b), Quant(bias_scales));
  const ValueId out = net.AddNode(
      "conv2d", {in, filter, bias},
      MakeAttrs({{"stride", std::vector<int64_t>{2, 2}}, {"padding", std::string("valid")}}));
  net.SetQuant(out, Quant({1.0f}));
  EXPECT_EQ(net.ShapeOf(out), (Shape{2, 1, 2, 3}));
  return FromBytes<int16_t>(net.RunBytes(out));
}

TEST(TflmGoldenIntegerVariants, Conv16x8PerChannel64bAnd32bBias) {
  for (const std::vector<int16_t>& got :
       {RunConv16x8<int64_t>(DType::kI64), RunConv16x8<int32_t>(DType::kI32)}) {
    ASSERT_EQ(got.size(), kGolden.size());
    for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], kGolden[k], 1.0) << k;
  }
}

std::vector<int16_t> Hundredths(const std::vector<double>& values) {
  std::vector<int16_t> out;
  for (double v : values) out.push_back(static_cast<int16_t>(std::lround(v * 100)));
  return out;
}

TEST(TflmGoldenIntegerVariants, MaximumMinimumAndReductions) {
  const std::vector<double> a = {1.0, 0.0, -1.0, 11.0, -2.0, -1.44};
  const std::vector<double> b = {-1.0, 0.0, 1.0, 12.0, -3.0, -1.43};
  for (const auto& [op, golden] :
       {std::pair{"max", std::vector<double>{1.0, 0.0, 1.0, 12.0, -2.0, -1.43}},
        std::pair{"min", std::vector<double>{-1.0, 0.0, -1.0, 11.0, -3.0, -1.44}}}) {
    TestNet net;
    const ValueId x = net.AddInput({3, 1, 2}, DType::kI16, ToBytes(Hundredths(a)), Quant({0.01f}));
    const ValueId y = net.AddInput({3, 1, 2}, DType::kI16, ToBytes(Hundredths(b)), Quant({0.01f}));
    const ValueId out = net.AddNode(op, {x, y}, {});
    net.SetQuant(out, Quant({0.01f}));
    EXPECT_EQ(FromBytes<int16_t>(net.RunBytes(out)), Hundredths(golden)) << op;
  }
  // The same values in int8 (tenths), reduced over the last axis and over everything.
  std::vector<int8_t> tenths;
  for (double v : a) tenths.push_back(static_cast<int8_t>(std::lround(v * 10)));
  for (const char* op : {"reduce_max", "reduce_min"}) {
    TestNet net;
    const ValueId x = net.AddInput({3, 2}, DType::kI8, ToBytes(tenths), Quant({0.1f}, 3));
    const ValueId rows = net.AddNode(op, {x}, MakeAttrs({{"axes", std::vector<int64_t>{1}}}));
    net.SetQuant(rows, Quant({0.1f}, 3));
    const bool max = std::string(op) == "reduce_max";
    EXPECT_EQ(FromBytes<int8_t>(net.RunBytes(rows)),
              max ? (std::vector<int8_t>{10, 110, -14}) : (std::vector<int8_t>{0, -10, -20}));
  }
}

// SUM on int8 requantises the sum of (x - zero point) like MEAN without the division (TFLM's
// QuantizedMeanOrSum with compute_sum), with its int32 scratch.
TEST(TflmGoldenIntegerVariants, SumInt8) {
  TestNet net;
  const ValueId x = net.AddInput({2, 3}, DType::kI8, ToBytes<int8_t>({3, 5, 7, 1, 9, -3}),
                                 Quant({0.5f}, 1));  // 1, 2, 3 | 0, 4, -2
  const ValueId rows = net.AddNode("sum", {x}, MakeAttrs({{"axes", std::vector<int64_t>{1}}}));
  net.SetQuant(rows, Quant({0.25f}, -5));
  EXPECT_EQ(FromBytes<int8_t>(net.RunBytes(rows)), (std::vector<int8_t>{19, 3}));  // 6, 2
}

// Comparisons on int8 bring both operands to a common scale first (ComparisonWithScaling): 1, 2, 3
// at scale 0.5 against 1, 2, 2 at scale 0.25 and zero point 2.
TEST(TflmGoldenIntegerVariants, ComparisonsInt8RescaleBothSides) {
  for (const auto& [op, golden] : {std::pair{"equal", std::vector<uint8_t>{1, 1, 0}},
                                   std::pair{"greater", std::vector<uint8_t>{0, 0, 1}},
                                   std::pair{"less_equal", std::vector<uint8_t>{1, 1, 0}}}) {
    TestNet net;
    const ValueId a = net.AddInput({3}, DType::kI8, ToBytes<int8_t>({2, 4, 6}), Quant({0.5f}));
    const ValueId b =
        net.AddInput({3}, DType::kI8, ToBytes<int8_t>({6, 10, 10}), Quant({0.25f}, 2));
    EXPECT_EQ(FromBytes<uint8_t>(net.RunBytes(net.AddNode(op, {a, b}, {}))), golden) << op;
  }
}

// ADD, SUB and MUL on int16 (16x8 models): the int8 arithmetic with a left shift of 15 instead
// of 20 for add and sub; results within one output step of the real sum, difference, product
// (add_test.cc / mul_test.cc check int16 the same way), broadcasting a [1, 4] row.
TEST(TflmGoldenIntegerVariants, AddSubMulInt16) {
  const std::vector<float> a = {-0.8f, 0.2f, 0.9f, 0.7f, 0.1f, -0.3f, 0.5f, -0.6f};
  const std::vector<float> b = {0.6f, 0.4f, -0.9f, 0.8f};
  const float sa = 1.0f / 32768, sb = 1.0f / 16384, so = 2.0f / 32768;
  auto quantize = [](const std::vector<float>& v, float scale) {
    std::vector<int16_t> q;
    for (float x : v) q.push_back(static_cast<int16_t>(std::lround(x / scale)));
    return q;
  };
  for (const char* op : {"add", "sub", "mul"}) {
    TestNet net;
    const ValueId x = net.AddInput({2, 4}, DType::kI16, ToBytes(quantize(a, sa)), Quant({sa}));
    const ValueId y = net.AddInput({1, 4}, DType::kI16, ToBytes(quantize(b, sb)), Quant({sb}));
    const ValueId out = net.AddNode(op, {x, y}, {});
    net.SetQuant(out, Quant({so}));
    const std::vector<int16_t> got = FromBytes<int16_t>(net.RunBytes(out));
    ASSERT_EQ(got.size(), a.size()) << op;
    for (size_t k = 0; k < got.size(); ++k) {
      const float u = a[k], v = b[k % 4];
      const float real = std::string(op) == "add"   ? u + v
                         : std::string(op) == "sub" ? u - v
                                                    : u * v;
      EXPECT_NEAR(got[k] * so, real, so) << op << " " << k;
    }
  }
}

}  // namespace
}  // namespace memfold
