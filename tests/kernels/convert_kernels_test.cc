// quantize, dequantize, integer mean and SVDF against results computed by hand.
//
// Notation: M = quantised multiplier, s = shift (real multiplier M * 2^(s - 31)).
// MultiplyByQuantizedMultiplier(x, M, s) = RDBPOT(SRDHM(x * 2^max(s, 0), M), max(-s, 0)), where
// SRDHM(a, b) = (a * b + (a * b >= 0 ? 2^30 : 1 - 2^30)) / 2^31 truncated (ties of positive
// products go up, of negative products toward zero) and RDBPOT(x, e) = x / 2^e with ties away
// from zero. Two roundings: 5 * 0.25 comes out as 2, not 1.
//
// Most kernel tests call the kernel directly on tensors laid out here (the state and scratch
// buffers of SVDF need controlling); a few run small graphs through the executor so that the
// registry rows (dtype dispatch, inference, scratch and state binding) are exercised too.

#include "memfold/ops/kernels/convert_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "memfold/exec/executor.h"
#include "memfold/ir/graph.h"
#include "memfold/ops/kernel_args.h"
#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/host/prepare.h"
#include "memfold/ops/kernels/quant_math.h"
#include "memfold/ops/kernels/svdf.h"
#include "memfold/ops/registry.h"
#include "memfold/plan/liveness.h"
#include "tests/kernels/kernel_test_util.h"

namespace memfold {
namespace {

Value MakeValue(DType dtype, Shape shape, float scale = 1.0f, int64_t zero_point = 0) {
  Value v;
  v.name = "v";
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.quant = Quant({scale}, zero_point);
  return v;
}

// One tensor of a direct kernel call: its description and its bytes.
struct Buffer {
  Value value;
  Bytes bytes;
};

template <typename T>
Buffer MakeBuffer(DType dtype, Shape shape, std::vector<T> data, float scale = 1.0f,
                  int64_t zero_point = 0) {
  Buffer b{MakeValue(dtype, std::move(shape), scale, zero_point), ToBytes(data)};
  b.bytes.resize(static_cast<size_t>(b.value.bytes()));
  return b;
}

// Runs `kernel` on the given buffers (nullptr for an absent input) with scratch buffers of the
// given sizes, filled with a poison pattern the kernel must overwrite before reading.
void Call(KernelFn kernel, const Node& node, std::vector<Buffer*> inputs, Buffer* output,
          std::vector<int64_t> scratch_sizes = {}) {
  std::vector<TensorArg> in;
  for (Buffer* b : inputs) in.push_back(b ? TensorArgOf(b->value, b->bytes.data()) : TensorArg{});
  std::vector<TensorArg> out{TensorArgOf(output->value, output->bytes.data())};
  std::vector<Bytes> scratch_storage;
  std::vector<std::byte*> scratch;
  scratch_storage.reserve(scratch_sizes.size());
  for (int64_t size : scratch_sizes) {
    scratch_storage.emplace_back(static_cast<size_t>(size), std::byte{0xA5});
    scratch.push_back(scratch_storage.back().data());
  }
  kernel(KernelArgsFor(node, std::move(in), std::move(out)).Context(scratch));
}

Node MakeNode(std::string op, Attrs attrs = {}) {
  Node node;
  node.op = std::move(op);
  node.name = node.op;
  node.attrs = std::move(attrs);
  return node;
}

// ---------------------------------------------------------------------------------------------
// quantize from float32.

TEST(QuantizeF32Test, RoundsHalfAwayFromZero) {
  // scale 0.5: x / 0.5 lands exactly on .5 for every input below.
  Buffer x = MakeBuffer<float>(DType::kF32, {8},
                               {0.25f, -0.25f, 0.75f, -0.75f, 1.25f, -1.25f, 0.0f, -0.0f});
  Buffer y = MakeBuffer<int8_t>(DType::kI8, {8}, {}, 0.5f, 0);
  Call(&QuantizeF32<Direct>, MakeNode("quantize"), {&x}, &y);
  EXPECT_EQ(FromBytes<int8_t>(y.bytes), (std::vector<int8_t>{1, -1, 2, -2, 3, -3, 0, 0}));
}

TEST(QuantizeF32Test, AddsZeroPointThenSaturates) {
  // scale 1, zero point 10: 117.4 -> 117 + 10 = 127; 117.5 -> 118 + 10 = 128 -> 127;
  // -138.4 -> -138 + 10 = -128; -139 -> -129 -> -128.
  Buffer x = MakeBuffer<float>(DType::kF32, {5}, {117.4f, 117.5f, -138.4f, -139.0f, 1e9f});
  Buffer y = MakeBuffer<int8_t>(DType::kI8, {5}, {}, 1.0f, 10);
  Call(&QuantizeF32<Direct>, MakeNode("quantize"), {&x}, &y);
  EXPECT_EQ(FromBytes<int8_t>(y.bytes), (std::vector<int8_t>{127, 127, -128, -128, 127}));
}

TEST(QuantizeF32Test, DividesInFloatNotDouble) {
  // 0.35f / 0.1f is 3.49999988824... exactly, which float division rounds to 3.5 (then 4 after
  // rounding half away from zero); the same division in double would round to 3.
  Buffer x = MakeBuffer<float>(DType::kF32, {1}, {0.35f});
  Buffer y = MakeBuffer<int8_t>(DType::kI8, {1}, {}, 0.1f, 0);
  Call(&QuantizeF32<Direct>, MakeNode("quantize"), {&x}, &y);
  volatile float numerator = 0.35f, denominator = 0.1f;
  ASSERT_EQ(numerator / denominator, 3.5f);
  ASSERT_LT(static_cast<double>(numerator) / static_cast<double>(denominator), 3.5);
  EXPECT_EQ(FromBytes<int8_t>(y.bytes), (std::vector<int8_t>{4}));
}

TEST(QuantizeF32Test, NonFiniteInputsFollowX86Truncation) {
  // TFLM casts the rounded float to int32; on x86-64 every out-of-range value and NaN becomes
  // INT32_MIN, so +inf quantises to -128 like -inf does.
  const float inf = std::numeric_limits<float>::infinity();
  Buffer x = MakeBuffer<float>(DType::kF32, {3}, {inf, -inf, std::nanf("")});
  Buffer y = MakeBuffer<int8_t>(DType::kI8, {3}, {}, 1.0f, 0);
  Call(&QuantizeF32<Direct>, MakeNode("quantize"), {&x}, &y);
  EXPECT_EQ(FromBytes<int8_t>(y.bytes), (std::vector<int8_t>{-128, -128, -128}));
}

TEST(QuantizeF32Test, ToInt16) {
  // scale 2^-10, zero point 0: 0.5 -> 512; -31.9999 -> -32767.9 -> -32768; 40 -> 40960 -> 32767.
  Buffer x = MakeBuffer<float>(DType::kF32, {3}, {0.5f, -31.9999f, 40.0f});
  Buffer y = MakeBuffer<int16_t>(DType::kI16, {3}, {}, 1.0f / 1024.0f, 0);
  Call(&QuantizeF32<Direct>, MakeNode("quantize"), {&x}, &y);
  EXPECT_EQ(FromBytes<int16_t>(y.bytes), (std::vector<int16_t>{512, -32768, 32767}));
}

// ---------------------------------------------------------------------------------------------
// quantize between integer types.

TEST(RequantizeTest, NegativeShiftRoundsTwice) {
  // in scale 1, out scale 4: QuantizeMultiplier(0.25) = (2^30, -1).
  //  5: SRDHM(5, 2^30) = (5*2^30 + 2^30) / 2^31 = 3, RDBPOT(3, 1) = 2 (1.5 away from zero).
  // -5: SRDHM = (-5*2^30 + 1 - 2^30) / 2^31 = -2 (-2.99.. truncated), RDBPOT(-2, 1) = -1.
  //  6: SRDHM = 3.5 -> 3, RDBPOT(3, 1) = 2.   -6: SRDHM = -3.49.. -> -3, RDBPOT = -2.
  //  7: SRDHM = 4, RDBPOT(4, 1) = 2.          2: SRDHM = 1.5 -> 1, RDBPOT(1, 1) = 1.
  int32_t m = 0;
  int s = 0;
  QuantizeMultiplier(0.25, &m, &s);
  ASSERT_EQ(m, 1 << 30);
  ASSERT_EQ(s, -1);
  Buffer x = MakeBuffer<int8_t>(DType::kI8, {6}, {5, -5, 6, -6, 7, 2}, 1.0f, 0);
  Buffer y = MakeBuffer<int8_t>(DType::kI8, {6}, {}, 4.0f, 0);
  Call(&Requantize<Direct, int8_t>, MakeNode("quantize"), {&x}, &y);
  EXPECT_EQ(FromBytes<int8_t>(y.bytes), (std::vector<int8_t>{2, -1, 2, -2, 2, 1}));
}

TEST(RequantizeTest, ZeroPointsAndSaturationInt16ToInt8) {
  // in scale 1 zero point 100, out scale 2 zero point -20: (x - 100) * 0.5 - 20.
  // QuantizeMultiplier(0.5) = (2^30, 0): one rounding, SRDHM only.
  //  100 -> 0 - 20 = -20;  103 -> SRDHM(3, 2^30) = 2 (1.5 up) -> -18;
  //  97 -> SRDHM(-3, 2^30) = -1 (-1.5 toward zero) -> -21;
  //  1000 -> 450 - 20 = 430 -> 127;  -1000 -> -550 - 20 -> -128.
  Buffer x = MakeBuffer<int16_t>(DType::kI16, {5}, {100, 103, 97, 1000, -1000}, 1.0f, 100);
  Buffer y = MakeBuffer<int8_t>(DType::kI8, {5}, {}, 2.0f, -20);
  Call(&Requantize<Direct, int16_t>, MakeNode("quantize"), {&x}, &y);
  EXPECT_EQ(FromBytes<int8_t>(y.bytes), (std::vector<int8_t>{-20, -18, -21, 127, -128}));
}

TEST(RequantizeTest, Int16ToInt32HalvesLikeKeywordOutput) {
  // keyword_scrambled's last op: softmax int16 (zero point -32768) to int32 at twice the scale.
  // 32767 - (-32768) = 65535 -> SRDHM(65535, 2^30) = 32768 (32767.5 up); -32768 -> 0;
  // 0 -> 32768 / 2 = 16384.
  Buffer x = MakeBuffer<int16_t>(DType::kI16, {3}, {32767, -32768, 0}, 1.0f / 65536.0f, -32768);
  Buffer y = MakeBuffer<int32_t>(DType::kI32, {3}, {}, 1.0f / 32768.0f, 0);
  Call(&Requantize<Direct, int16_t>, MakeNode("quantize"), {&x}, &y);
  EXPECT_EQ(FromBytes<int32_t>(y.bytes), (std::vector<int32_t>{32768, 0, 16384}));
}

TEST(RequantizeTest, Int8ToUint8AtEqualScaleFlipsTheSignBit) {
  Buffer x = MakeBuffer<int8_t>(DType::kI8, {4}, {-128, -1, 0, 127}, 0.5f, 0);
  Buffer y = MakeBuffer<uint8_t>(DType::kU8, {4}, {}, 0.5f, 128);
  Call(&Requantize<Direct, int8_t>, MakeNode("quantize"), {&x}, &y);
  EXPECT_EQ(FromBytes<uint8_t>(y.bytes), (std::vector<uint8_t>{0, 127, 128, 255}));
}

// ---------------------------------------------------------------------------------------------
// dequantize.

TEST(DequantizeTest, Int8AndInt16) {
  // 0.5 * (x + 3).
  Buffer x = MakeBuffer<int8_t>(DType::kI8, {3}, {-128, -3, 127}, 0.5f, -3);
  Buffer y = MakeBuffer<float>(DType::kF32, {3}, {});
  Call(&Dequantize<Direct, int8_t>, MakeNode("dequantize"), {&x}, &y);
  EXPECT_EQ(FromBytes<float>(y.bytes), (std::vector<float>{-62.5f, 0.0f, 65.0f}));

  Buffer x16 = MakeBuffer<int16_t>(DType::kI16, {2}, {-32768, 1024}, 1.0f / 1024.0f, 0);
  Buffer y16 = MakeBuffer<float>(DType::kF32, {2}, {});
  Call(&Dequantize<Direct, int16_t>, MakeNode("dequantize"), {&x16}, &y16);
  EXPECT_EQ(FromBytes<float>(y16.bytes), (std::vector<float>{-32.0f, 1.0f}));
}

TEST(DequantizeTest, ProductRoundsOnceToFloat) {
  // 0.1f * 3 in float arithmetic (one rounding of the exact product).
  Buffer x = MakeBuffer<int8_t>(DType::kI8, {1}, {3}, 0.1f, 0);
  Buffer y = MakeBuffer<float>(DType::kF32, {1}, {});
  Call(&Dequantize<Direct, int8_t>, MakeNode("dequantize"), {&x}, &y);
  const float expected = static_cast<float>(static_cast<double>(0.1f) * 3.0);
  EXPECT_EQ(FromBytes<float>(y.bytes), (std::vector<float>{expected}));
}

// ---------------------------------------------------------------------------------------------
// Integer mean.

TEST(MeanQuantizedTest, EqualQuantizationStillRoundsThroughTheMultiplier) {
  // [1, 2, 3] over axis 2, scale 1, zero point 0. QuantizeMultiplier(1) = (2^30, 1); count 3:
  // shift' = floor(log2 3) = 1, M' = (2^30 << 1) / 3 = 715827882, s' = 0.
  // row {1, 2, 2}: sum 5, SRDHM(5, M') = (3579139410 + 2^30) / 2^31 = 2.17 -> 2 (truncation of
  // 5 / 3 would give 1). row {-1, -2, -2}: -5 -> -2.
  Buffer x = MakeBuffer<int8_t>(DType::kI8, {1, 2, 3}, {1, 2, 2, -1, -2, -2});
  Buffer y = MakeBuffer<int8_t>(DType::kI8, {1, 2}, {});
  const Node node = MakeNode("mean", [] {
    Attrs a;
    a.Set("axes", std::vector<int64_t>{2});
    a.Set("keepdims", int64_t{0});
    return a;
  }());
  Call(&MeanQuantized<Direct, int8_t>, node, {&x}, &y, {2 * 4});
  EXPECT_EQ(FromBytes<int8_t>(y.bytes), (std::vector<int8_t>{2, -2}));
}

TEST(MeanQuantizedTest, ZeroPointsAndScaleRatio) {
  // in scale 0.5 zero point 4, out scale 1 zero point -1. QuantizeMultiplier(0.5) = (2^30, 0);
  // count 3: shift' = min(1, 31 + 0) = 1, M' = 2^31 / 3 = 715827882, s' = -1.
  // {10, 11, 13}: 34 - 3 * 4 = 22; SRDHM(22, M') = (15748213404 + 2^30) / 2^31 = 7.83 -> 7;
  // RDBPOT(7, 1) = 4 (3.5 away from zero); 4 - 1 = 3.
  // {-128, -128, -128}: -384 - 12 = -396; SRDHM(-396, M') = (-283467841272 + 1 - 2^30) / 2^31
  // = -132.5 -> -132 (truncated); RDBPOT(-132, 1) = -66; -66 - 1 = -67.
  Buffer x = MakeBuffer<int8_t>(DType::kI8, {2, 3}, {10, 11, 13, -128, -128, -128}, 0.5f, 4);
  Buffer y = MakeBuffer<int8_t>(DType::kI8, {2, 1}, {}, 1.0f, -1);
  Attrs a;
  a.Set("axes", std::vector<int64_t>{-1});
  a.Set("keepdims", int64_t{1});
  Call(&MeanQuantized<Direct, int8_t>, MakeNode("mean", a), {&x}, &y, {2 * 4});
  EXPECT_EQ(FromBytes<int8_t>(y.bytes), (std::vector<int8_t>{3, -67}));
}

TEST(MeanQuantizedTest, TwoAxesKeepTheMiddleOne) {
  // [2, 2, 2] over axes {0, 2}: output j sums x[i][j][k] over i, k (count 4).
  // j = 0: 1 + 2 + 5 + 6 = 14; j = 1: 3 + 4 + 7 + 8 = 22. Scale 1: M' = (2^30 << 2) / 4 = 2^30,
  // s' = 1 - 2 = -1: SRDHM(14, 2^30) = 7, RDBPOT(7, 1) = 4; SRDHM(22, 2^30) = 11, RDBPOT = 6.
  Buffer x = MakeBuffer<int8_t>(DType::kI8, {2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Buffer y = MakeBuffer<int8_t>(DType::kI8, {2}, {});
  Attrs a;
  a.Set("axes", std::vector<int64_t>{0, 2, -1});  // duplicates count once
  a.Set("keepdims", int64_t{0});
  Call(&MeanQuantized<Direct, int8_t>, MakeNode("mean", a), {&x}, &y, {2 * 4});
  EXPECT_EQ(FromBytes<int8_t>(y.bytes), (std::vector<int8_t>{4, 6}));
}

// ---------------------------------------------------------------------------------------------
// SVDF.

Attrs SvdfAttrs(int64_t rank, const std::string& activation = "none") {
  return MakeAttrs({{"rank", rank}, {"activation", activation}});
}

// batch 1, input 2, filters 2, memory 2. All scales 1, so both effective multipliers are 1
// (QuantizeMultiplier(1) = (2^30, 1), exact for integers).
TEST(SvdfTest, Int16StateHandComputed) {
  // input zero point 1: centred input [2, -2].
  // feature [[1, 2], [-1, 3]]: dot0 = 2 - 4 = -2, dot1 = -2 - 6 = -8.
  // state [7, 9 | 4, -6] shifted left by one: [9, 4, -6, -6]; new column: [9, -2 | -6, -8].
  // time [[2, 1], [3, -1]]: f0 = 18 - 2 = 16, f1 = -18 + 8 = -10.
  // bias [100, 200], output zero point -10: [116 - 10, 190 - 10] = [106, 180 -> 127].
  Buffer input = MakeBuffer<int8_t>(DType::kI8, {1, 2}, {3, -1}, 1.0f, 1);
  Buffer feature = MakeBuffer<int8_t>(DType::kI8, {2, 2}, {1, 2, -1, 3});
  Buffer time = MakeBuffer<int16_t>(DType::kI16, {2, 2}, {2, 1, 3, -1});
  Buffer bias = MakeBuffer<int32_t>(DType::kI32, {2}, {100, 200});
  Buffer state = MakeBuffer<int16_t>(DType::kI16, {1, 4}, {7, 9, 4, -6});
  Buffer output = MakeBuffer<int8_t>(DType::kI8, {1, 2}, {}, 1.0f, -10);
  Call(&SvdfI8<Direct>, MakeNode("svdf", SvdfAttrs(1)), {&input, &feature, &time, &bias, &state},
       &output, {2 * 4, 2 * 4});
  EXPECT_EQ(FromBytes<int16_t>(state.bytes), (std::vector<int16_t>{9, -2, -6, -8}));
  EXPECT_EQ(FromBytes<int8_t>(output.bytes), (std::vector<int8_t>{106, 127}));

  // A second step on the updated state, without bias: state [-2, -6, -8, -8] -> column writes
  // [-2, -2 | -8, -8]; f0 = -4 - 2 = -6, f1 = -24 + 8 = -16; output [-16, -26].
  Call(&SvdfI8<Direct>, MakeNode("svdf", SvdfAttrs(1)), {&input, &feature, &time, nullptr, &state},
       &output, {2 * 4, 2 * 4});
  EXPECT_EQ(FromBytes<int16_t>(state.bytes), (std::vector<int16_t>{-2, -2, -8, -8}));
  EXPECT_EQ(FromBytes<int8_t>(output.bytes), (std::vector<int8_t>{-16, -26}));
}

TEST(SvdfTest, Int8StateClampsBeforeAddingItsZeroPointAndWraps) {
  // State zero point 5 (int8 state and time weights). Input [63, 0], zero point 0.
  // feature [[2, 0], [-2, 0]]: dot0 = 126, dot1 = -126. TFLM clamps to [-128, 127] first, then
  // adds the zero point and narrows: 126 + 5 = 131 wraps to -125; -126 + 5 = -121.
  // State starts at its zero point (TFLM's reset): [5, 5 | 5, 5] -> [5, -125 | 5, -121].
  // time [[1, 1], [1, 2]]: f0 = 0 + (-130) = -130, f1 = 0 + 2 * (-126) = -252.
  // Output scale 4: QuantizeMultiplier(0.25) = (2^30, -1). -130: SRDHM = -65 (-65.5 toward
  // zero), RDBPOT(-65, 1) = -33. -252: SRDHM = -126, RDBPOT = -63.
  Buffer input = MakeBuffer<int8_t>(DType::kI8, {1, 2}, {63, 0});
  Buffer feature = MakeBuffer<int8_t>(DType::kI8, {2, 2}, {2, 0, -2, 0});
  Buffer time = MakeBuffer<int8_t>(DType::kI8, {2, 2}, {1, 1, 1, 2});
  Buffer state = MakeBuffer<int8_t>(DType::kI8, {1, 4}, {5, 5, 5, 5}, 1.0f, 5);
  Buffer output = MakeBuffer<int8_t>(DType::kI8, {1, 2}, {}, 4.0f, 0);
  Call(&SvdfI8<Direct>, MakeNode("svdf", SvdfAttrs(1)), {&input, &feature, &time, nullptr, &state},
       &output, {2 * 4, 2 * 4});
  EXPECT_EQ(FromBytes<int8_t>(state.bytes), (std::vector<int8_t>{5, -125, 5, -121}));
  EXPECT_EQ(FromBytes<int8_t>(output.bytes), (std::vector<int8_t>{-33, -63}));
}

TEST(SvdfTest, RankTwoSumsFilterPairsAndIgnoresActivationForInt8) {
  // Same tensors as Int16StateHandComputed with rank 2: one unit, f0 + f1 = 16 - 10 = 6, bias
  // [1], output zero point 0 -> 7. The relu is ignored by TFLM's integer kernel (-7 stays).
  Buffer input = MakeBuffer<int8_t>(DType::kI8, {1, 2}, {3, -1}, 1.0f, 1);
  Buffer feature = MakeBuffer<int8_t>(DType::kI8, {2, 2}, {1, 2, -1, 3});
  Buffer time = MakeBuffer<int16_t>(DType::kI16, {2, 2}, {2, 1, 3, -1});
  Buffer bias = MakeBuffer<int32_t>(DType::kI32, {1}, {1});
  Buffer state = MakeBuffer<int16_t>(DType::kI16, {1, 4}, {7, 9, 4, -6});
  Buffer output = MakeBuffer<int8_t>(DType::kI8, {1, 1}, {});
  Call(&SvdfI8<Direct>, MakeNode("svdf", SvdfAttrs(2, "relu")),
       {&input, &feature, &time, &bias, &state}, &output, {2 * 4, 1 * 4});
  EXPECT_EQ(FromBytes<int8_t>(output.bytes), (std::vector<int8_t>{7}));

  Buffer negative_bias = MakeBuffer<int32_t>(DType::kI32, {1}, {-13});
  Buffer state2 = MakeBuffer<int16_t>(DType::kI16, {1, 4}, {7, 9, 4, -6});
  Call(&SvdfI8<Direct>, MakeNode("svdf", SvdfAttrs(2, "relu")),
       {&input, &feature, &time, &negative_bias, &state2}, &output, {2 * 4, 1 * 4});
  EXPECT_EQ(FromBytes<int8_t>(output.bytes), (std::vector<int8_t>{-7}));
}

TEST(SvdfTest, FloatAppliesActivation) {
  // Float version of Int16StateHandComputed without zero points: input [2, -2] gives the same
  // state and products (f0 = 16, f1 = -10); bias [1, 2]; relu: [17, 0].
  Buffer input = MakeBuffer<float>(DType::kF32, {1, 2}, {2.0f, -2.0f});
  Buffer feature = MakeBuffer<float>(DType::kF32, {2, 2}, {1.0f, 2.0f, -1.0f, 3.0f});
  Buffer time = MakeBuffer<float>(DType::kF32, {2, 2}, {2.0f, 1.0f, 3.0f, -1.0f});
  Buffer bias = MakeBuffer<float>(DType::kF32, {2}, {1.0f, 2.0f});
  Buffer state = MakeBuffer<float>(DType::kF32, {1, 4}, {7.0f, 9.0f, 4.0f, -6.0f});
  Buffer output = MakeBuffer<float>(DType::kF32, {1, 2}, {});
  Call(&SvdfF32<Direct>, MakeNode("svdf", SvdfAttrs(1, "relu")),
       {&input, &feature, &time, &bias, &state}, &output, {2 * 4});
  EXPECT_EQ(FromBytes<float>(state.bytes), (std::vector<float>{9.0f, -2.0f, -6.0f, -8.0f}));
  EXPECT_EQ(FromBytes<float>(output.bytes), (std::vector<float>{17.0f, 0.0f}));
}

// ---------------------------------------------------------------------------------------------
// Registry rows, through the executor.

struct SvdfGraph {
  Graph graph;
  ValueId output = kNoValue;
};

// Adds `v` to `g` with the given role.
ValueId AddWithRole(Graph* g, Value v, Role role) {
  v.role = role;
  return g->AddValue(std::move(v));
}

ValueId AddConstant(Graph* g, DType dtype, Shape shape, Bytes bytes, float scale = 1.0f,
                    int64_t zero_point = 0) {
  Value v = MakeValue(dtype, std::move(shape), scale, zero_point);
  v.name = "c" + std::to_string(g->num_values());
  v.role = Role::kWeight;
  v.data = std::make_shared<Bytes>(std::move(bytes));
  return g->AddValue(std::move(v));
}

// The Int8StateClampsBeforeAddingItsZeroPointAndWraps case as a one-node graph.
SvdfGraph BuildInt8Svdf() {
  SvdfGraph s;
  Graph& g = s.graph;
  Value in = MakeValue(DType::kI8, {1, 2});
  in.name = "input";
  const ValueId input = AddWithRole(&g, std::move(in), Role::kInput);
  g.inputs.push_back(input);
  const ValueId feature = AddConstant(&g, DType::kI8, {2, 2}, ToBytes<int8_t>({2, 0, -2, 0}));
  const ValueId time = AddConstant(&g, DType::kI8, {2, 2}, ToBytes<int8_t>({1, 1, 1, 2}));
  Value st = MakeValue(DType::kI8, {1, 4}, 1.0f, 5);
  st.name = "state";
  const ValueId state = AddWithRole(&g, std::move(st), Role::kState);
  Result<std::vector<ValueId>> out =
      AddOp(&g, "svdf", {input, feature, time, kNoValue, state}, SvdfAttrs(1));
  EXPECT_TRUE(out.ok()) << out.status().message();
  if (!out.ok()) return s;
  s.output = out->front();
  g.value(s.output).quant = Quant({4.0f}, 0);
  g.outputs = {s.output};
  return s;
}

TEST(SvdfRowTest, RunsWithStateResetToZeroPointAndPlannedScratch) {
  SvdfGraph s = BuildInt8Svdf();
  ASSERT_NE(s.output, kNoValue);
  EXPECT_EQ(s.graph.value(s.output).shape, (Shape{1, 2}));
  EXPECT_EQ(s.graph.value(s.output).dtype, DType::kI8);
  const Node& node = s.graph.node(s.graph.schedule[0]);
  EXPECT_EQ(SvdfScratch(s.graph, node), (std::vector<int64_t>{8, 8}));
  const Liveness live = ComputeLiveness(s.graph);
  EXPECT_EQ(live.scratch_of[0].size(), 2u);

  Result<RunOutputs> run = RunUnplanned(s.graph, {ToBytes<int8_t>({63, 0})});
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(FromBytes<int8_t>(run->outputs[0]), (std::vector<int8_t>{-33, -63}));
}

TEST(SvdfRowTest, InferenceRejectsMismatchedShapes) {
  Graph g;
  const ValueId input = AddWithRole(&g, MakeValue(DType::kI8, {1, 3}), Role::kInput);
  const ValueId feature = AddConstant(&g, DType::kI8, {4, 3}, Bytes(12));
  const ValueId time = AddConstant(&g, DType::kI16, {4, 2}, Bytes(16));
  const ValueId bias = AddConstant(&g, DType::kI32, {2}, Bytes(8));
  const ValueId state = AddWithRole(&g, MakeValue(DType::kI16, {1, 8}), Role::kState);
  const ValueId wrong_state = AddWithRole(&g, MakeValue(DType::kI16, {1, 6}), Role::kState);

  Result<std::vector<ValueId>> ok =
      AddOp(&g, "svdf", {input, feature, time, bias, state}, SvdfAttrs(2));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(g.value(ok->front()).shape, (Shape{1, 2}));
  EXPECT_FALSE(AddOp(&g, "svdf", {input, feature, time, bias, wrong_state}, SvdfAttrs(2)).ok());
  EXPECT_FALSE(AddOp(&g, "svdf", {input, feature, time, bias, state}, SvdfAttrs(3)).ok());
  // bias [2] vs 4 units:
  EXPECT_FALSE(AddOp(&g, "svdf", {input, feature, time, bias, state}, SvdfAttrs(1)).ok());
}

TEST(ConvertRowsTest, QuantizeThenDequantizeThroughTheExecutor) {
  // f32 -> int8 (scale 0.5, zero point 2) -> int16 (scale 0.25, zero point 0) -> f32.
  // 1.3 -> round(2.6) + 2 = 5 -> (5 - 2) * 2 = 6 -> 1.5.  -0.8 -> -2 + 2 = 0 -> -4 -> -1.
  Graph g;
  Value in = MakeValue(DType::kF32, {2});
  in.quant.reset();
  const ValueId x = AddWithRole(&g, std::move(in), Role::kInput);
  g.inputs.push_back(x);
  Result<std::vector<ValueId>> q =
      AddOp(&g, "quantize", {x}, MakeAttrs({{"dtype", std::string("i8")}}));
  ASSERT_TRUE(q.ok()) << q.status().message();
  g.value(q->front()).quant = Quant({0.5f}, 2);
  Result<std::vector<ValueId>> r =
      AddOp(&g, "quantize", {q->front()}, MakeAttrs({{"dtype", std::string("i16")}}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  g.value(r->front()).quant = Quant({0.25f}, 0);
  Result<std::vector<ValueId>> d = AddOp(&g, "dequantize", {r->front()});
  ASSERT_TRUE(d.ok()) << d.status().message();
  g.outputs = {d->front()};
  Result<RunOutputs> run = RunUnplanned(g, {ToBytes<float>({1.3f, -0.8f})});
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(FromBytes<float>(run->outputs[0]), (std::vector<float>{1.5f, -1.0f}));
}

// TFLM's requests (reduce_common.cc): the iterator (an int per input dimension) and the
// resolved axes for every type, after the int32 accumulator for integer inputs.
TEST(ConvertRowsTest, MeanScratchIsTflmsAccumulatorOnlyForIntegerInputs) {
  Graph g;
  const ValueId xf = AddWithRole(&g, MakeValue(DType::kF32, {2, 3}), Role::kInput);
  const ValueId xi = AddWithRole(&g, MakeValue(DType::kI8, {2, 3}), Role::kInput);
  const Attrs a = MakeAttrs({{"axes", std::vector<int64_t>{1}}});
  Result<std::vector<ValueId>> mf = AddOp(&g, "mean", {xf}, a);
  Result<std::vector<ValueId>> mi = AddOp(&g, "mean", {xi}, a);
  ASSERT_TRUE(mf.ok() && mi.ok());
  EXPECT_EQ(MeanScratch(g, g.node(0)), (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(MeanScratch(g, g.node(1)), (std::vector<int64_t>{8, 8, 4}));
  EXPECT_EQ(ReduceScratch(g, g.node(1)), (std::vector<int64_t>{8, 4}));
}

}  // namespace
}  // namespace memfold
