// RELU, RELU6, LOGISTIC, TANH and HARD_SWISH on int8 and int16 against TensorFlow Lite Micro's
// kernel tests (activations_test.cc, exact; logistic_test.cc, tanh_test.cc, hard_swish_test.cc):
// their inputs are evenly spaced
// (-8..8 in steps of 2/11 for tanh int8, -20..20 in 177 steps for int16, the integers ±1..±5 and
// ±93 for logistic int8), their goldens the exact function values (printed to ten digits there,
// computed in double here), their quantisation and tolerances (in output quantisation steps) as
// TFLM's tests set them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "tests/kernels/kernel_test_util.h"

namespace memfold {
namespace {

struct QuantCase {
  const char* op;
  DType dtype;
  std::vector<double> inputs;
  float in_scale, out_scale;
  int64_t out_zero_point;
  double tolerance;  // output steps
  int64_t in_zero_point = 0;
};

template <typename T>
std::vector<T> QuantizeAll(const std::vector<double>& values, float scale, int64_t zero_point) {
  std::vector<T> out;
  for (double v : values) {
    const double q = std::round(v / static_cast<double>(scale)) + static_cast<double>(zero_point);
    out.push_back(static_cast<T>(
        std::clamp<double>(q, std::numeric_limits<T>::min(), std::numeric_limits<T>::max())));
  }
  return out;
}

std::vector<double> Evenly(double lo, double hi, int count) {
  std::vector<double> v;
  for (int k = 0; k < count; ++k) v.push_back(lo + (hi - lo) * k / (count - 1));
  return v;
}

template <typename T>
void Check(const QuantCase& c) {
  SCOPED_TRACE(std::string(c.op) + " " + std::string(DTypeName(c.dtype)));
  TestNet net;
  const auto n = static_cast<int64_t>(c.inputs.size());
  const ValueId x =
      net.AddInput({1, n}, c.dtype, ToBytes(QuantizeAll<T>(c.inputs, c.in_scale, c.in_zero_point)),
                   Quant({c.in_scale}, c.in_zero_point));
  const ValueId y = net.AddNode(c.op, {x}, {});
  net.SetQuant(y, Quant({c.out_scale}, c.out_zero_point));
  const std::vector<T> got = FromBytes<T>(net.RunBytes(y));
  std::vector<double> exact;
  const std::string op = c.op;
  for (double v : c.inputs) {
    exact.push_back(op == "tanh"    ? std::tanh(v)
                    : op == "relu"  ? std::max(v, 0.0)
                    : op == "relu6" ? std::clamp(v, 0.0, 6.0)
                                    : 1.0 / (1.0 + std::exp(-v)));
  }
  const std::vector<T> golden = QuantizeAll<T>(exact, c.out_scale, c.out_zero_point);
  ASSERT_EQ(got.size(), golden.size());
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_NEAR(got[k], golden[k], c.tolerance) << "input " << c.inputs[k];
  }
}

// SimpleReluTestInt8, SimpleRelu6TestInt8 (zero point 127: 6 and above saturate at 127),
// SimpleRelu6TestInt16: exact.
TEST(TflmGoldenActivation, ReluAndRelu6) {
  Check<int8_t>({"relu", DType::kI8, {1, 2, 3, 4, 5, -1, -2, -3, -4, -5}, 0.5f, 0.5f, 0, 0});
  Check<int8_t>(
      {"relu6", DType::kI8, {4, 5, 6, 7, 8, -1, -2, -3, -4, -5}, 0.5f, 0.5f, 127, 0, 127});
  Check<int16_t>({"relu6", DType::kI16, {4, 5, 6, 7, 8, -1, -2, -3, -4, -5}, 0.5f, 0.5f, 0, 0});
  // RELU requantises: input scale 0.5 to output scale 0.25, zero point 10, exactly.
  Check<int8_t>({"relu", DType::kI8, {1, 2, 3, 4, 5, -1, -2, -3, -4, -5}, 0.5f, 0.25f, 10, 0, -3});
}

TEST(TflmGoldenActivation, LogisticInt8) {
  // LogisticQuantizedInt8BasicShouldMatchGolden and ...WideRangeShouldMatchGolden.
  Check<int8_t>(
      {"sigmoid", DType::kI8, {1, 2, 3, 4, 5, -1, -2, -3, -4, -5}, 0.1f, 1.0f / 255.0f, -128, 1});
  Check<int8_t>(
      {"sigmoid", DType::kI8, {1, 2, 3, 4, 93, -1, -2, -3, -4, -93}, 1.0f, 1.0f / 255.0f, -128, 1});
}

TEST(TflmGoldenActivation, LogisticInt16) {
  // LogisticQuantizedInt16ShouldMatchGolden: input scale 2^-11 (not the table's 2^-12, so the
  // general multiplier path), output 2^-15.
  Check<int16_t>(
      {"sigmoid", DType::kI16, Evenly(-20, 20, 177), 32.0f / 65536.0f, 2.0f / 65536.0f, 0, 16});
}

TEST(TflmGoldenActivation, TanhInt8) {
  // SimpleTestTanhInt8: 89 points from -8 to 8, and the vector's 90th element left at 0.
  std::vector<double> inputs = Evenly(-8, 8, 89);
  inputs.push_back(0);
  Check<int8_t>({"tanh", DType::kI8, inputs, 16.0f / 256.0f, 1.99999955f / 256.0f, 0, 2});
}

TEST(TflmGoldenActivation, TanhInt16) {
  // TestTanhInt16WideRange: input scale 2^-11, a power of two the table takes with shift 1.
  Check<int16_t>(
      {"tanh", DType::kI16, Evenly(-20, 20, 177), 32.0f / 65536.0f, 2.0f / 65536.0f, 0, 16});
}

// Inputs of a power-of-two int16 scale that is not 2^-12 or 2^-11 take the general multiplier;
// the result must still be within TFLM's tolerance of the function.
TEST(TflmGoldenActivation, Int16GeneralScale) {
  Check<int16_t>({"tanh", DType::kI16, Evenly(-3, 3, 61), 1.0f / 8192.0f, 1.0f / 32768.0f, 0, 16});
  Check<int16_t>(
      {"sigmoid", DType::kI16, Evenly(-3, 3, 61), 1.0f / 10000.0f, 1.0f / 32768.0f, 0, 16});
}

// hard_swish_test.cc's quantisation of a [min, max] range (ScaleFromMinMax, ZeroPointFromMinMax).
struct Range {
  float min, max;
  float Scale() const { return (max - min) / 255.0f; }
  int64_t ZeroPoint() const { return -128 + static_cast<int>(-min / Scale() + 0.5f); }
};

// Runs int8 hard_swish on `inputs`; returns the dequantised outputs.
std::vector<float> HardSwishI8(const std::vector<float>& inputs, Range in, Range out) {
  TestNet net;
  std::vector<int8_t> q;
  for (float v : inputs) {
    const float r = std::round(v / in.Scale()) + static_cast<float>(in.ZeroPoint());
    q.push_back(static_cast<int8_t>(std::clamp(r, -128.0f, 127.0f)));
  }
  const auto n = static_cast<int64_t>(inputs.size());
  const ValueId x =
      net.AddInput({1, n}, DType::kI8, ToBytes(q), Quant({in.Scale()}, in.ZeroPoint()));
  const ValueId y = net.AddNode("hard_swish", {x}, {});
  net.SetQuant(y, Quant({out.Scale()}, out.ZeroPoint()));
  std::vector<float> result;
  for (int8_t v : FromBytes<int8_t>(net.RunBytes(y)))
    result.push_back(static_cast<float>(v - out.ZeroPoint()) * out.Scale());
  return result;
}

float HardSwishOf(float v, Range out) {
  return std::clamp(v * std::min(6.0f, std::max(0.0f, v + 3)) * (1.0f / 6.0f), out.min, out.max);
}

// SimpleHardSwishTestInt8: 101 inputs drawn by std::minstd_rand over every pair of the ranges
// [0, 1], [-2, 1], [-5, 10], [-40, 60] for input and output, within 1.5 output-or-input steps.
TEST(TflmGoldenActivation, HardSwishInt8) {
  const Range ranges[] = {{0, 1}, {-2, 1}, {-5, 10}, {-40, 60}};
  std::minstd_rand random;
  for (const Range in : ranges) {
    for (const Range out : ranges) {
      std::vector<float> inputs;
      for (int i = 0; i < 101; ++i) {
        const float unit =
            static_cast<float>(random()) * (1.0f / static_cast<float>(std::minstd_rand::modulus));
        inputs.push_back(in.min + (in.max - in.min) * unit);
      }
      const float tolerance = std::max(in.max - in.min, out.max - out.min) * (1.5f / 256.0f);
      const std::vector<float> got = HardSwishI8(inputs, in, out);
      ASSERT_EQ(got.size(), inputs.size());
      for (size_t k = 0; k < got.size(); ++k)
        EXPECT_NEAR(got[k], HardSwishOf(inputs[k], out), tolerance) << inputs[k];
    }
  }
}

// SimpleHardSwishTestQuantizedBias (a MobileNet v3 layer's ranges; uint8 there, int8 here):
// every quantised input from -3 to 3; the mean error, in steps of the larger scale, stays within
// 0.035 (TFLM uses a truncating product at the end to cancel the rounding bias of the steps
// before).
TEST(TflmGoldenActivation, HardSwishInt8Bias) {
  const Range in{-11.654928f, 25.036512f}, out{-0.3905796f, 24.50887f};
  std::vector<float> inputs;
  const int lo = static_cast<int>(std::round(-128 + (-3.0f - in.min) / in.Scale()));
  const int hi = static_cast<int>(std::round(-128 + (3.0f - in.min) / in.Scale()));
  for (int q = lo; q <= hi; ++q)
    inputs.push_back(in.min + static_cast<float>(q + 128) * in.Scale());
  const std::vector<float> got = HardSwishI8(inputs, in, out);
  float sum = 0;
  for (size_t k = 0; k < got.size(); ++k) sum += got[k] - HardSwishOf(inputs[k], out);
  EXPECT_LE(std::fabs(sum / (static_cast<float>(got.size()) * std::max(in.Scale(), out.Scale()))),
            0.035f);
}

}  // namespace
}  // namespace memfold
