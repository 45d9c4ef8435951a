// Fixed-point arithmetic of TensorFlow Lite's integer kernels, reproduced bit for bit:
// multiplier quantisation (QuantizeMultiplier, via frexp and round-half-away-from-zero),
// gemmlowp's SaturatingRoundingDoublingHighMul and RoundingDivideByPOT, the default
// (double-rounding) MultiplyByQuantizedMultiplier, and the quantised activation range.
// Every int8/int16 kernel requantises through these functions and nothing else. All O(1).
#pragma once

#include <cstdint>
#include <string>

#include "memfold/ir/graph.h"

namespace memfold {

// real_multiplier ~= quantized_multiplier * 2^(shift - 31), quantized_multiplier in
// [2^30, 2^31) (or 0). Multipliers below 2^-31 become 0.
void QuantizeMultiplier(double real_multiplier, int32_t* quantized_multiplier, int* shift);

// (a * b * 2) >> 32 rounded to nearest, saturating the single overflow case INT32_MIN^2.
int32_t SaturatingRoundingDoublingHighMul(int32_t a, int32_t b);

// x / 2^exponent rounded to nearest, ties away from zero. exponent in [0, 31].
int32_t RoundingDivideByPOT(int32_t x, int exponent);

// x * multiplier * 2^shift (shift may be negative), TFLite's default double rounding.
int32_t MultiplyByQuantizedMultiplier(int32_t x, int32_t quantized_multiplier, int shift);
// The 64-bit accumulator variant used by 16-bit activation kernels.
int32_t MultiplyByQuantizedMultiplier(int64_t x, int32_t quantized_multiplier, int shift);
// x * multiplier * 2^left_shift for multipliers below one (left_shift <= 0).
int32_t MultiplyByQuantizedMultiplierSmallerThanOneExp(int32_t x, int32_t quantized_multiplier,
                                                       int left_shift);

struct QuantRange {
  int32_t min;
  int32_t max;
};

// The clamp range of a fused activation ("none", "relu", "relu6", "relu_n1_to_1") on an
// output of type `dtype` with the given scale and zero point.
QuantRange QuantizedActivationRange(const std::string& activation, DType dtype, float scale,
                                    int32_t zero_point);

// Scale and zero point of a per-tensor quantised value (scale 1, zero point 0 if absent).
float Scale(const Value& v);
int32_t ZeroPoint(const Value& v);

}  // namespace memfold
