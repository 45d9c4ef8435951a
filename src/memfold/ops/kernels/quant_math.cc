#include "memfold/ops/kernels/quant_math.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace memfold {

void QuantizeMultiplier(double real_multiplier, int32_t* quantized_multiplier, int* shift) {
  if (real_multiplier == 0.0) {
    *quantized_multiplier = 0;
    *shift = 0;
    return;
  }
  const double fraction = std::frexp(real_multiplier, shift);
  auto fixed = static_cast<int64_t>(std::round(fraction * static_cast<double>(int64_t{1} << 31)));
  if (fixed == (int64_t{1} << 31)) {
    fixed /= 2;
    ++*shift;
  }
  if (*shift < -31) {
    *shift = 0;
    fixed = 0;
  }
  *quantized_multiplier = static_cast<int32_t>(fixed);
}

int32_t SaturatingRoundingDoublingHighMul(int32_t a, int32_t b) {
  const bool overflow = a == b && a == std::numeric_limits<int32_t>::min();
  const int64_t ab = static_cast<int64_t>(a) * static_cast<int64_t>(b);
  const int32_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
  const auto high = static_cast<int32_t>((ab + nudge) / (int64_t{1} << 31));
  return overflow ? std::numeric_limits<int32_t>::max() : high;
}

int32_t RoundingDivideByPOT(int32_t x, int exponent) {
  const int32_t mask = static_cast<int32_t>((int64_t{1} << exponent) - 1);
  const int32_t remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

int32_t MultiplyByQuantizedMultiplier(int32_t x, int32_t quantized_multiplier, int shift) {
  const int left_shift = shift > 0 ? shift : 0;
  const int right_shift = shift > 0 ? 0 : -shift;
  // x * 2^left_shift wraps like TFLite's int32 arithmetic (it never overflows in practice).
  const auto shifted = static_cast<int32_t>(static_cast<uint32_t>(x) << left_shift);
  return RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(shifted, quantized_multiplier),
                             right_shift);
}

int32_t MultiplyByQuantizedMultiplier(int64_t x, int32_t quantized_multiplier, int shift) {
  // TFLite's 64-bit variant: the multiplier is first rounded to 16 bits, then one rounding
  // right shift by 15 - shift.
  const int32_t reduced = quantized_multiplier < 0x7FFF0000 ? (quantized_multiplier + (1 << 15)) >> 16 : 0x7FFF;
  const int total_shift = 15 - shift;
  x = x * static_cast<int64_t>(reduced) + (int64_t{1} << (total_shift - 1));
  return static_cast<int32_t>(x >> total_shift);
}

int32_t MultiplyByQuantizedMultiplierSmallerThanOneExp(int32_t x, int32_t quantized_multiplier,
                                                       int left_shift) {
  return RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x, quantized_multiplier), -left_shift);
}

QuantRange QuantizedActivationRange(const std::string& activation, DType dtype, float scale,
                                    int32_t zero_point) {
  int32_t qmin = 0, qmax = 0;
  switch (dtype) {
    case DType::kI8: qmin = -128; qmax = 127; break;
    case DType::kU8: qmin = 0; qmax = 255; break;
    case DType::kI16: qmin = -32768; qmax = 32767; break;
    default: qmin = std::numeric_limits<int32_t>::min(); qmax = std::numeric_limits<int32_t>::max();
  }
  auto quantize = [&](float f) { return zero_point + static_cast<int32_t>(std::round(f / scale)); };
  if (activation == "relu") return {std::max(qmin, quantize(0.0f)), qmax};
  if (activation == "relu6") return {std::max(qmin, quantize(0.0f)), std::min(qmax, quantize(6.0f))};
  if (activation == "relu_n1_to_1") return {std::max(qmin, quantize(-1.0f)), std::min(qmax, quantize(1.0f))};
  return {qmin, qmax};
}

float Scale(const Value& v) { return v.quant && !v.quant->scale.empty() ? v.quant->scale[0] : 1.0f; }

int32_t ZeroPoint(const Value& v) {
  return v.quant && !v.quant->zero_point.empty() ? static_cast<int32_t>(v.quant->zero_point[0]) : 0;
}

}  // namespace memfold
