// int8 kernels and the fixed-point helpers under them, against results computed by hand.
//
// Notation in the comments: M = quantised multiplier, s = shift, so a real multiplier is
// M * 2^(s - 31). SRDHM(a, b) = round(a * b / 2^31) with ties toward +infinity (gemmlowp adds
// 2^30, or 1 - 2^30 for negative products, then truncates), RDBPOT(x, e) = x / 2^e rounded with
// ties away from zero. MultiplyByQuantizedMultiplier(x, M, s) = RDBPOT(SRDHM(x * 2^max(s,0), M),
// max(-s, 0)): two roundings, which is what TFLite (and therefore memfold) computes.
//
// Kernel tests build a one-op graph and run it through the unplanned executor, so shape
// inference, the registry's dtype dispatch and the kernel are exercised together.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "memfold/exec/executor.h"
#include "memfold/ir/graph.h"
#include "memfold/ops/kernels/quant_math.h"
#include "memfold/ops/registry.h"
#include "tests/kernels/kernel_test_util.h"

namespace memfold {
namespace {

constexpr int32_t kHalf = int32_t{1} << 30;  // 0.5 in Q0.31
constexpr int32_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int32_t kInt32Min = std::numeric_limits<int32_t>::min();

// A quantised graph under construction plus the bytes of its inputs.
class QNet : public TestNet {
 public:
  ValueId Input(const Shape& shape, const std::vector<int8_t>& values, float scale,
                int64_t zero_point) {
    const ValueId id = AddInput(shape, DType::kI8, ToBytes(values));
    graph_.value(id).quant = Quant({scale}, zero_point);
    return id;
  }

  template <typename T>
  ValueId Constant(const Shape& shape, DType dtype, const std::vector<T>& values,
                   std::optional<Quantization> quant) {
    return AddConstant(shape, dtype, ToBytes(values), std::move(quant));
  }

  // The op's output gets per-tensor quantisation (scale, zero point).
  ValueId Op(std::string_view op, std::vector<ValueId> inputs, Attrs attrs, float scale,
             int64_t zero_point) {
    const ValueId y = AddNode(op, std::move(inputs), std::move(attrs));
    if (y != kNoValue) graph_.value(y).quant = Quant({scale}, zero_point);
    return y;
  }

  template <typename T = int8_t>
  std::vector<T> Run(ValueId output) {
    return FromBytes<T>(RunBytes(output));
  }
};

// ---------------------------------------------------------------------------------------------
// Fixed-point helpers.

TEST(QuantMath, QuantizeMultiplierNormalisesToHalfOpenUnitInterval) {
  int32_t m = 0;
  int s = 0;
  QuantizeMultiplier(0.5, &m, &s);  // 0.5 = 0.5 * 2^0 -> M = 0.5 * 2^31
  EXPECT_EQ(m, kHalf);
  EXPECT_EQ(s, 0);
  QuantizeMultiplier(0.75, &m, &s);  // 0.75 * 2^31 = 1610612736
  EXPECT_EQ(m, 1610612736);
  EXPECT_EQ(s, 0);
  QuantizeMultiplier(0.25, &m, &s);  // 0.5 * 2^-1
  EXPECT_EQ(m, kHalf);
  EXPECT_EQ(s, -1);
  QuantizeMultiplier(3.0, &m, &s);  // 0.75 * 2^2
  EXPECT_EQ(m, 1610612736);
  EXPECT_EQ(s, 2);
  // 1 - 2^-40: frexp gives 0.99999999999909 * 2^0, which rounds to 2^31 and is renormalised
  // to 2^30 with the shift one higher.
  QuantizeMultiplier(1.0 - std::ldexp(1.0, -40), &m, &s);
  EXPECT_EQ(m, kHalf);
  EXPECT_EQ(s, 1);
  // Below 2^-32 the shift would be < -31: flushed to zero.
  QuantizeMultiplier(std::ldexp(1.0, -40), &m, &s);
  EXPECT_EQ(m, 0);
  EXPECT_EQ(s, 0);
}

TEST(QuantMath, SaturatingRoundingDoublingHighMulRoundsTiesTowardPlusInfinity) {
  // 0.5 * 0.5 = 0.25 = 2^29 in Q0.31.
  EXPECT_EQ(SaturatingRoundingDoublingHighMul(kHalf, kHalf), int32_t{1} << 29);
  // 1 * 0.5 = 0.5 raw units: (2^30 + 2^30) / 2^31 = 1.
  EXPECT_EQ(SaturatingRoundingDoublingHighMul(1, kHalf), 1);
  // -1 * 0.5 = -0.5: (-2^30 + 1 - 2^30) / 2^31 = -0.99.. truncates to 0 (not -1).
  EXPECT_EQ(SaturatingRoundingDoublingHighMul(-1, kHalf), 0);
  // -3 * 0.5 = -1.5: (-3 * 2^30 + 1 - 2^30) / 2^31 = -1.99.. truncates to -1.
  EXPECT_EQ(SaturatingRoundingDoublingHighMul(-3, kHalf), -1);
  // The one overflow: (-1) * (-1) saturates to the largest value.
  EXPECT_EQ(SaturatingRoundingDoublingHighMul(kInt32Min, kInt32Min), kInt32Max);
}

TEST(QuantMath, RoundingDivideByPOTRoundsTiesAwayFromZero) {
  EXPECT_EQ(RoundingDivideByPOT(5, 1), 3);    // 2.5 -> 3
  EXPECT_EQ(RoundingDivideByPOT(-5, 1), -3);  // -2.5 -> -3
  EXPECT_EQ(RoundingDivideByPOT(6, 2), 2);    // 1.5 -> 2
  EXPECT_EQ(RoundingDivideByPOT(-6, 2), -2);  // -1.5 -> -2
  EXPECT_EQ(RoundingDivideByPOT(-2, 2), -1);  // -0.5 -> -1
  EXPECT_EQ(RoundingDivideByPOT(7, 2), 2);    // 1.75 -> 2
  EXPECT_EQ(RoundingDivideByPOT(-7, 2), -2);  // -1.75 -> -2
  EXPECT_EQ(RoundingDivideByPOT(1, 2), 0);    // 0.25 -> 0
  EXPECT_EQ(RoundingDivideByPOT(-1, 2), 0);   // -0.25 -> 0
  EXPECT_EQ(RoundingDivideByPOT(100, 0), 100);
  // Out-of-range exponents from broken models stay defined: 0 beyond 62, no division below 0.
  EXPECT_EQ(RoundingDivideByPOT(std::numeric_limits<int32_t>::min(), 200), 0);
  EXPECT_EQ(RoundingDivideByPOT(-7, -107), -7);
}

TEST(QuantMath, MultiplyByQuantizedMultiplierRoundsTwice) {
  // Real multiplier 0.25 = M 2^30, s -1.
  // x = 2 (0.5 exactly): SRDHM(2, 2^30) = 1, RDBPOT(1, 1) = 0.5 -> 1.
  EXPECT_EQ(MultiplyByQuantizedMultiplier(int32_t{2}, kHalf, -1), 1);
  // x = -2 (-0.5): SRDHM = (-2^31 + 1 - 2^30) / 2^31 -> -1, RDBPOT(-1, 1) = -0.5 -> -1.
  EXPECT_EQ(MultiplyByQuantizedMultiplier(int32_t{-2}, kHalf, -1), -1);
  // x = 1 (0.25): SRDHM(1, 2^30) = 0.5 -> 1, then RDBPOT(1, 1) = 0.5 -> 1. A single rounding
  // would give 0; TFLite's double rounding gives 1.
  EXPECT_EQ(MultiplyByQuantizedMultiplier(int32_t{1}, kHalf, -1), 1);
  // x = -1 (-0.25): SRDHM(-1, 2^30) = -0.5 -> 0, RDBPOT(0, 1) = 0.
  EXPECT_EQ(MultiplyByQuantizedMultiplier(int32_t{-1}, kHalf, -1), 0);
  // x = -3 (-0.75): SRDHM = -1.5 -> -1, RDBPOT(-1, 1) = -0.5 -> -1.
  EXPECT_EQ(MultiplyByQuantizedMultiplier(int32_t{-3}, kHalf, -1), -1);
  // Positive shift: 3 * 0.5 * 2^2 = 6: x * 4 = 12, SRDHM(12, 2^30) = 6, no right shift.
  EXPECT_EQ(MultiplyByQuantizedMultiplier(int32_t{3}, kHalf, 2), 6);
  // Large right shift: 1000 * 0.5 * 2^-10 = 0.488: SRDHM = 500, RDBPOT(500, 10) = 0.488 -> 0.
  EXPECT_EQ(MultiplyByQuantizedMultiplier(int32_t{1000}, kHalf, -10), 0);
  // 1024 * 0.5 * 2^-10 = 0.5: SRDHM = 512, RDBPOT(512, 10) = 0.5 -> 1.
  EXPECT_EQ(MultiplyByQuantizedMultiplier(int32_t{1024}, kHalf, -10), 1);
}

// The prepared form equals the two roundings, composed from the out-of-line SRDHM and RDBPOT,
// for every multiplier with a record (QuantizeMultiplier's [2^30, 2^31) and 0), shifts of both
// signs up to the clamp, and sums at and near the int32 limits, where the wrap of the doubled
// multiplier and of the left shift show. The others (negative scales' multipliers) have none,
// and QuantizeMultiplier makes only multipliers with one from non-negative reals.
TEST(QuantMath, PreparedMultiplierEqualsTwoRoundings) {
  std::mt19937 rng(31);
  std::uniform_int_distribution<int32_t> prepared(kHalf, kInt32Max);
  std::vector<int32_t> multipliers = {0, kHalf, kHalf + 1, kInt32Max - 1, kInt32Max};
  std::vector<int32_t> xs = {
      0, 1, -1, 2, -2, 3, 1 << 20, -(1 << 20), kInt32Max, kInt32Min, kInt32Max - 1, kInt32Min + 1};
  for (int i = 0; i < 40; ++i) multipliers.push_back(prepared(rng));
  for (int i = 0; i < 200; ++i) xs.push_back(static_cast<int32_t>(rng()) >> (i % 31));
  int checked = 0;
  for (int32_t m : multipliers) {
    ASSERT_TRUE(HasPreparedMultiplier(m));
    for (int shift = -33; shift <= 33; ++shift) {
      int32_t record[kPreparedMultiplierWords];
      PrepareMultiplier(m, shift, record);
      const int left = std::clamp(shift, 0, 31), right = std::clamp(-shift, 0, 31);
      for (int32_t x : xs) {
        const auto shifted = static_cast<int32_t>(static_cast<uint32_t>(x) << left);
        const int32_t expected =
            RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(shifted, m), right);
        ASSERT_EQ(MultiplyByPreparedMultiplier(x, record), expected)
            << "x " << x << " multiplier " << m << " shift " << shift;
        ASSERT_EQ(MultiplyByQuantizedMultiplier(x, m, shift), expected);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100000);
  for (int32_t m : {-1, 1, kHalf - 1, -kHalf, kInt32Min + 1})
    EXPECT_FALSE(HasPreparedMultiplier(m));
  for (double real = 1e-12; real < 1e6; real *= 1.37) {
    int32_t m = 0;
    int shift = 0;
    QuantizeMultiplier(real, &m, &shift);
    EXPECT_TRUE(HasPreparedMultiplier(m)) << real;
  }
}

TEST(QuantMath, ActivationRangeRelu6) {
  // Scale 0.05, zero point -100: relu6 clamps to [-100 + round(0 / 0.05),
  // -100 + round(6 / 0.05)] = [-100, -100 + 120] = [-100, 20].
  const QuantRange r = QuantizedActivationRange("relu6", DType::kI8, 0.05f, -100);
  EXPECT_EQ(r.min, -100);
  EXPECT_EQ(r.max, 20);
  // With zero point -128 and scale 0.01, 6 / 0.01 = 600 exceeds the int8 range: [-128, 127].
  const QuantRange wide = QuantizedActivationRange("relu6", DType::kI8, 0.01f, -128);
  EXPECT_EQ(wide.min, -128);
  EXPECT_EQ(wide.max, 127);
  // relu only raises the floor: zero point 10 -> [10, 127].
  const QuantRange relu = QuantizedActivationRange("relu", DType::kI8, 0.1f, 10);
  EXPECT_EQ(relu.min, 10);
  EXPECT_EQ(relu.max, 127);
}

TEST(QuantMath, SoftmaxScaling) {
  // beta 1, input scale 1: 1 * 1 * 2^26 = 0.5 * 2^27 -> M 2^30, left shift 27.
  int32_t m = 0;
  int shift = 0;
  PreprocessSoftmaxScaling(1.0, 1.0, 5, &m, &shift);
  EXPECT_EQ(m, kHalf);
  EXPECT_EQ(shift, 27);
  // Radius: floor(31 * 2^26 / 2^27) = floor(15.5) = 15.
  EXPECT_EQ(CalculateInputRadius(5, 27), 15);
  // Large products are capped at 2^31 - 1 before quantisation.
  PreprocessSoftmaxScaling(1.0, 100.0, 5, &m, &shift);
  EXPECT_EQ(m, kInt32Max);
  EXPECT_EQ(shift, 31);
}

TEST(QuantMath, FixedPointExpAndReciprocalAgreeWithDoubles) {
  // exp(-1) in Q0.31 is gemmlowp's own barrel constant 790015084. Input -1 takes the
  // polynomial for exp(-1/4) (4th-order Taylor expansion around -1/8; the dropped 5th-order
  // term makes it (1/8)^5 / 120 * exp(-1/8) ~ 2.2e-7 = ~475 raw units too high) and then the
  // barrel factors exp(-1/4) * exp(-1/2) = 0.47: about 224 units above the constant.
  EXPECT_NEAR(ExpOnNegativeValues(-(int32_t{1} << 26), 5), 790015084, 1000);
  EXPECT_EQ(ExpOnNegativeValues(0, 5), kInt32Max);  // exp(0) is "one" = 2^31 - 1
  for (int i = 1; i <= 200; ++i) {
    const double a = -0.1 * i;  // down to -20
    const auto raw = static_cast<int32_t>(std::lround(a * std::ldexp(1.0, 26)));
    const double got = ExpOnNegativeValues(raw, 5) / std::ldexp(1.0, 31);
    EXPECT_NEAR(got, std::exp(a), 1e-6) << "a = " << a;
  }
  for (int i = 0; i < 100; ++i) {
    const double x = i / 100.0;
    const auto raw = static_cast<int32_t>(std::lround(x * std::ldexp(1.0, 31)));
    const double got = OneOverOnePlusXForXIn01(raw) / std::ldexp(1.0, 31);
    EXPECT_NEAR(got, 1.0 / (1.0 + x), 1e-6) << "x = " << x;
  }
  // GetReciprocal of 2.0 in Q12.19 (2^20): 11 leading zeros, so 1 bit over unit and a
  // mantissa of exactly 1.0, whose reciprocal is ~1 in Q0.31.
  int bits = 0;
  const int32_t r = GetReciprocal(int32_t{1} << 20, 12, &bits);
  EXPECT_EQ(bits, 1);
  EXPECT_NEAR(r, kInt32Max, 4);
}

// ---------------------------------------------------------------------------------------------
// Kernels.

TEST(IntKernels, FullyConnectedRequantisationTiesAndSaturation) {
  // Input scale 0.5 (zero point 3), filter scale 0.5, output scale 1 (zero point -1):
  // multiplier double(float(0.5 * 0.5)) / 1 = 0.25 -> M 2^30, s -1.
  // Input q 5 -> 5 - 3 = 2. Per output channel acc = w * 2 + bias:
  //   w  1, bias 0:     acc 2     -> 0.5   -> 1    ; + zp -1 ->    0   (positive tie up)
  //   w -1, bias 0:     acc -2    -> -0.5  -> -1   ; -1      ->   -2   (negative tie down)
  //   w  1, bias -1:    acc 1     -> 0.25  -> 1 (SRDHM 0.5 -> 1, RDBPOT 0.5 -> 1); -1 -> 0
  //   w  1, bias -5:    acc -3    -> -0.75 -> -1   ; -1      ->   -2
  //   w  100, bias 1000: acc 1200 -> 300   -> +zp 299 -> saturates at 127
  //   w -100, bias -1000: acc -1200 -> -300 -> -301  -> saturates at -128
  QNet net;
  const ValueId x = net.Input({1, 1}, {5}, 0.5f, 3);
  const ValueId w =
      net.Constant<int8_t>({6, 1}, DType::kI8, {1, -1, 1, 1, 100, -100}, Quant({0.5f}));
  const ValueId b =
      net.Constant<int32_t>({6}, DType::kI32, {0, 0, -1, -5, 1000, -1000}, Quant({0.25f}));
  const ValueId y = net.Op("fully_connected", {x, w, b}, {}, 1.0f, -1);
  EXPECT_EQ(net.Run(y), (std::vector<int8_t>{0, -2, 0, -2, 127, -128}));
}

TEST(IntKernels, FullyConnectedRelu6ClampsToQuantisedRange) {
  // Input scale 0.5, filter scale 0.1, output scale 0.05 (zero point -100): the float product
  // 0.5f * 0.1f equals 0.05f, so the multiplier is exactly 1 (M 2^30, s 1) and the output is
  // acc - 100, clamped by relu6 to [-100, 20] (see ActivationRangeRelu6).
  //   w  1: acc  10 -> -90
  //   w -1: acc -10 -> -110 -> -100 (relu floor)
  //   w 20: acc 200 -> 100  -> 20   (6.0)
  QNet net;
  const ValueId x = net.Input({1, 1}, {10}, 0.5f, 0);
  const ValueId w = net.Constant<int8_t>({3, 1}, DType::kI8, {1, -1, 20}, Quant({0.1f}));
  const ValueId y = net.Op("fully_connected", {x, w},
                           MakeAttrs({{"activation", std::string("relu6")}}), 0.05f, -100);
  EXPECT_EQ(net.Run(y), (std::vector<int8_t>{-90, -100, 20}));
}

TEST(IntKernels, PerChannelConvUsesEachChannelsScale) {
  // 1x1 convolution, one input channel, two output channels with filter scales 0.5 and 0.25;
  // input and output scale 1, output zero point 2. Multipliers: 0.5 -> (2^30, 0),
  // 0.25 -> (2^30, -1). Both filters are 3, bias 1.
  //   pixel 0, x = 7:  acc 22  -> ch0 22 * 0.5 = 11 -> 13; ch1 22 * 0.25 = 5.5 -> 6 -> 8
  //   pixel 1, x = -5: acc -14 -> ch0 -7 -> -5;            ch1 -3.5: SRDHM(-14, 2^30) = -7,
  //                    RDBPOT(-7, 1) = -3.5 -> -4 -> -2
  QNet net;
  const ValueId x = net.Input({1, 1, 2, 1}, {7, -5}, 1.0f, 0);
  const ValueId w =
      net.Constant<int8_t>({2, 1, 1, 1}, DType::kI8, {3, 3}, Quant({0.5f, 0.25f}, 0, 0));
  const ValueId b = net.Constant<int32_t>({2}, DType::kI32, {1, 1}, Quant({0.5f, 0.25f}));
  const ValueId y =
      net.Op("conv2d", {x, w, b}, MakeAttrs({{"padding", std::string("valid")}}), 1.0f, 2);
  EXPECT_EQ(net.Run(y), (std::vector<int8_t>{13, 8, -5, -2}));
}

TEST(IntKernels, DepthwiseConvPerChannelWithInputOffset) {
  // 2x2 input with two channels, 2x2 filter (valid padding -> one output pixel), multiplier 1.
  // Input zero point 1, so q - zp: channel 0 {1, 2, 3, 4} - 1 = {0, 1, 2, 3},
  // channel 1 {-1, -1, -1, -1} - 1 = {-2, -2, -2, -2}. Filters: channel 0 all 1, channel 1
  // all 3. Filter scales 1 and 0.5, input 1, output 1 (zero point 0):
  //   ch0: acc 0 + 1 + 2 + 3 = 6 -> 6 * 1 = 6
  //   ch1: acc 4 * (3 * -2) = -24 -> -24 * 0.5 = -12
  QNet net;
  const ValueId x = net.Input({1, 2, 2, 2}, {1, -1, 2, -1, 3, -1, 4, -1}, 1.0f, 1);
  const ValueId w = net.Constant<int8_t>({1, 2, 2, 2}, DType::kI8, {1, 3, 1, 3, 1, 3, 1, 3},
                                         Quant({1.0f, 0.5f}, 0, 3));
  const ValueId b = net.Constant<int32_t>({2}, DType::kI32, {0, 0}, Quant({1.0f, 0.5f}));
  const ValueId y = net.Op("depthwise_conv2d", {x, w, b},
                           MakeAttrs({{"padding", std::string("valid")}}), 1.0f, 0);
  EXPECT_EQ(net.Run(y), (std::vector<int8_t>{6, -12}));
}

TEST(IntKernels, AvgPoolRoundsHalfAwayFromZero) {
  // One 2x2 window per channel (input 2x2x3, filter 2x2, valid). Sums over 4 values:
  //   ch0 {1, 1, 0, 0}:     sum 2   -> (2 + 2) / 4 = 1     (0.5 -> 1)
  //   ch1 {-1, -1, 0, 0}:   sum -2  -> (-2 - 2) / 4 = -1   (-0.5 -> -1)
  //   ch2 {-1, -2, -2, -2}: sum -7  -> (-7 - 2) / 4 = -2   (-1.75 -> -2, truncating division)
  QNet net;
  const ValueId x = net.Input({1, 2, 2, 3}, {1, -1, -1, 1, -1, -2, 0, 0, -2, 0, 0, -2}, 0.1f, 0);
  const ValueId y = net.Op("avg_pool2d", {x},
                           MakeAttrs({{"filter", std::vector<int64_t>{2, 2}},
                                      {"stride", std::vector<int64_t>{2, 2}},
                                      {"padding", std::string("valid")}}),
                           0.1f, 0);
  EXPECT_EQ(net.Run(y), (std::vector<int8_t>{1, -1, -2}));
}

TEST(IntKernels, MaxPoolWithSamePaddingAndRelu) {
  // 1x4 input, filter 1x2, stride 1, SAME: output width 4, total padding 1, all of it on the
  // right, so the last window holds one value. relu with output zero point -4 (scale 0.5)
  // clamps from below at -4 + round(0 / 0.5) = -4.
  QNet net;
  const ValueId x = net.Input({1, 1, 4, 1}, {-5, -3, 9, -6}, 0.5f, -4);
  const ValueId y = net.Op("max_pool2d", {x},
                           MakeAttrs({{"filter", std::vector<int64_t>{1, 2}},
                                      {"padding", std::string("same")},
                                      {"activation", std::string("relu")}}),
                           0.5f, -4);
  // Windows: {-5, -3} -> -3, {-3, 9} -> 9, {9, -6} -> 9, {-6} -> -6 -> relu floor -4.
  EXPECT_EQ(net.Run(y), (std::vector<int8_t>{-3, 9, 9, -4}));
}

TEST(IntKernels, AddRescalesBothInputsWithBroadcast) {
  // Scales 0.5 and 0.25, output 1 (zero point 5). twice_max = 1.0: input multipliers 0.5
  // (2^30, 0) and 0.25 (2^30, -1); output multiplier 1 / (2^20 * 1) = 2^-20 -> (2^30, -19).
  // Each input is shifted left 20 bits first. [[3, 1], [-3, -1]] + broadcast [2, 0]:
  //   3, 2:   3*2^20*0.5 = 3*2^19; 2*2^20*0.25 = 2^19; sum 2^21 -> *2^-20 = 2   -> 7
  //   1, 0:   2^19 -> 0.5 -> SRDHM exact 2^18, RDBPOT(2^18, 19) = 0.5 -> 1        -> 6
  //   -3, 2:  -3*2^19 + 2^19 = -2^20 -> -1                                        -> 4
  //   -1, 0:  -2^19 -> -0.5 -> -1                                                  -> 4
  QNet net;
  const ValueId a = net.Input({2, 2}, {3, 1, -3, -1}, 0.5f, 0);
  const ValueId b = net.Input({2}, {2, 0}, 0.25f, 0);
  const ValueId y = net.Op("add", {a, b}, {}, 1.0f, 5);
  EXPECT_EQ(net.Run(y), (std::vector<int8_t>{7, 6, 4, 4}));
}

TEST(IntKernels, SubWithInputZeroPointsAndSaturation) {
  // Both inputs scale 0.5, output 0.5. twice_max = 1.0f: input multipliers 0.5 (2^30, 0);
  // output 1 / (2^20 * 0.5) = 2^-19 -> (2^30, -18). So the result is (a - za) - (b - zb).
  // Zero points: a 1, b -1, output 0.
  //   a 10, b 2:     9 - 3 = 6
  //   a 100, b -100: 99 + 99 = 198 -> 127
  //   a -100, b 100: -101 - 101 = -202 -> -128
  QNet net;
  const ValueId a = net.Input({3}, {10, 100, -100}, 0.5f, 1);
  const ValueId b = net.Input({3}, {2, -100, 100}, 0.5f, -1);
  const ValueId y = net.Op("sub", {a, b}, {}, 0.5f, 0);
  EXPECT_EQ(net.Run(y), (std::vector<int8_t>{6, 127, -128}));
}

TEST(IntKernels, MulRoundsProductOnce) {
  // Scales 0.5 and 0.5, output 0.5: multiplier 0.5 -> (2^30, 0), no right shift, so only
  // SRDHM rounds (ties toward +infinity):
  //   3 * 1 = 3     -> 1.5  -> 2
  //   -3 * 1 = -3   -> -1.5 -> -1
  //   20 * 20 = 400 -> 200  -> 127
  //   -20 * 20      -> -200 -> -128
  QNet net;
  const ValueId a = net.Input({4}, {3, -3, 20, -20}, 0.5f, 0);
  const ValueId b = net.Input({4}, {1, 1, 20, 20}, 0.5f, 0);
  const ValueId y = net.Op("mul", {a, b}, {}, 0.5f, 0);
  EXPECT_EQ(net.Run(y), (std::vector<int8_t>{2, -1, 127, -128}));
}

TEST(IntKernels, SoftmaxInt8) {
  // Output scale 1/256, zero point -128, so q = 256 * p - 128.
  //   row 0: two equal values: exp 1 each (Q0.31 "one" -> 2^19 in Q12.19 after rounding),
  //          sum 2^20 = 2.0, reciprocal 0.5 -> p 0.5 -> 0.
  //   row 1: four equal values -> p 0.25 -> -64.
  //   row 2: scale 1, so {127, -128} differ by 255, far below -radius (-15): that entry
  //          is -128 outright; the max gets p ~1 -> 128 -> saturates at 127.
  QNet net;
  const ValueId a = net.Input({2, 2}, {7, 7, 0, 0}, 1.0f, 0);
  const ValueId b = net.Input({1, 4}, {-3, -3, -3, -3}, 0.1f, 0);
  const ValueId c = net.Input({1, 2}, {127, -128}, 1.0f, 0);
  const ValueId ya = net.Op("softmax", {a}, {}, 1.0f / 256, -128);
  EXPECT_EQ(net.Run(ya), (std::vector<int8_t>{0, 0, 0, 0}));
  const ValueId yb = net.Op("softmax", {b}, {}, 1.0f / 256, -128);
  EXPECT_EQ(net.Run(yb), (std::vector<int8_t>{-64, -64, -64, -64}));
  const ValueId yc = net.Op("softmax", {c}, {}, 1.0f / 256, -128);
  EXPECT_EQ(net.Run(yc), (std::vector<int8_t>{127, -128}));
}

TEST(IntKernels, SoftmaxInt8ToInt16) {
  // Output scale 1/65536, zero point -32768: q = 65536 * p - 32768.
  //   {5, 5}: p 0.5 -> 0;   {127, -128} at scale 1: 32767 (saturated) and -32768.
  QNet net;
  const ValueId a = net.Input({1, 2}, {5, 5}, 0.5f, 0);
  const ValueId c = net.Input({1, 2}, {127, -128}, 1.0f, 0);
  const Attrs i16 = MakeAttrs({{"output_dtype", std::string("i16")}});
  const ValueId ya = net.Op("softmax", {a}, i16, 1.0f / 65536, -32768);
  EXPECT_EQ(net.Run<int16_t>(ya), (std::vector<int16_t>{0, 0}));
  const ValueId yc = net.Op("softmax", {c}, i16, 1.0f / 65536, -32768);
  EXPECT_EQ(net.Run<int16_t>(yc), (std::vector<int16_t>{32767, -32768}));
}

TEST(IntKernels, SoftmaxInt8MatchesFloatWithinOneStep) {
  // A generic row: the fixed-point result is within one output step of the real softmax.
  const std::vector<int8_t> q = {-20, 3, 17, 40, -128, 0, 39, 12};
  const float scale = 0.0625f;
  QNet net;
  const ValueId x = net.Input({1, 8}, q, scale, 0);
  const ValueId y = net.Op("softmax", {x}, {}, 1.0f / 256, -128);
  const std::vector<int8_t> got = net.Run(y);
  ASSERT_EQ(got.size(), q.size());
  double sum = 0;
  for (int8_t v : q) sum += std::exp(scale * v);
  for (size_t i = 0; i < q.size(); ++i) {
    const double expected = std::min(127.0, std::exp(scale * q[i]) / sum * 256 - 128);
    EXPECT_NEAR(got[i], expected, 1.0) << "element " << i;
  }
}

}  // namespace
}  // namespace memfold
