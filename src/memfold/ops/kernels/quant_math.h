// Fixed-point arithmetic of TensorFlow Lite's integer kernels, reproduced bit for bit:
// multiplier quantisation (QuantizeMultiplier, via frexp and round-half-away-from-zero),
// gemmlowp's SaturatingRoundingDoublingHighMul and RoundingDivideByPOT, the default
// (double-rounding) MultiplyByQuantizedMultiplier, and the quantised activation range.
// Every int8/int16 kernel requantises through these functions and nothing else. Freestanding
// (the device runs them too). All O(1).
#pragma once

#include <cstdint>
#include <string_view>

#if defined(__ARM_FEATURE_SAT) && __ARM_FEATURE_SAT
#include <arm_acle.h>
#endif

#include "memfold/ops/kernels/kernel_context.h"

namespace memfold {

// int32 arithmetic that wraps, as the int32 hardware TFLite targets does: out-of-range values
// (which real models never produce, hostile ones can) are not undefined behaviour here.
inline int32_t WrapAdd(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}
inline int32_t WrapSub(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) - static_cast<uint32_t>(b));
}
inline int32_t WrapMul(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
}

// v clamped to a shift count in [0, 31]: one USAT on Arm (written as the intrinsic: a plain
// clamp lets the compiler branch on v's sign in every caller).
inline int ShiftCount(int v) {
#if defined(__ARM_FEATURE_SAT) && __ARM_FEATURE_SAT
  return static_cast<int>(__usat(v, 5));
#else
  return v < 0 ? 0 : (v > 31 ? 31 : v);
#endif
}

// real_multiplier ~= quantized_multiplier * 2^(shift - 31), quantized_multiplier in
// [2^30, 2^31) (or 0). Multipliers below 2^-31 become 0.
void QuantizeMultiplier(double real_multiplier, int32_t* quantized_multiplier, int* shift);

// (a * b * 2) >> 32 rounded to nearest, saturating the single overflow case INT32_MIN^2.
int32_t SaturatingRoundingDoublingHighMul(int32_t a, int32_t b);

// x / 2^exponent rounded to nearest, ties away from zero. exponent in [0, 31].
int32_t RoundingDivideByPOT(int32_t x, int exponent);

// x * multiplier * 2^shift (shift may be negative), TFLite's default double rounding: a
// saturating rounding doubling high multiply, then a rounding right shift. Inline and without
// branches (every kernel's output stage calls it per element): 32-bit arithmetic but for one
// 32x32->64 product. gemmlowp's (ab + nudge) / 2^31, truncated toward zero with nudge = 2^30
// or 1 - 2^30 by the sign of ab, is floor((ab + 2^30) / 2^31) for either sign: one shift.
inline int32_t MultiplyByQuantizedMultiplier(int32_t x, int32_t quantized_multiplier, int shift) {
  // Shifts beyond 31 bits only arise from absurd scales in a broken model; clamping keeps the
  // arithmetic defined (the result is meaningless either way).
  const int left_shift = ShiftCount(shift), right_shift = ShiftCount(-shift);
  // x * 2^left_shift wraps like TFLite's int32 arithmetic (it never overflows in practice).
  const auto shifted = static_cast<int32_t>(static_cast<uint32_t>(x) << left_shift);
  const int64_t ab = int64_t{shifted} * quantized_multiplier;
  auto high = static_cast<int32_t>((ab + (int64_t{1} << 30)) >> 31);
  if (shifted == quantized_multiplier && shifted == INT32_MIN) high = INT32_MAX;
  const auto mask = static_cast<int32_t>((uint32_t{1} << right_shift) - 1u);
  const int32_t threshold = (mask >> 1) + static_cast<int32_t>(static_cast<uint32_t>(high) >> 31);
  return (high >> right_shift) + ((high & mask) > threshold ? 1 : 0);
}
// The same function with a channel's constants worked out ahead (by PrepareMultiplier, in a
// kernel's prepare), so that the per-element work is a few instructions: a record of
// kPreparedMultiplierWords int32 {scale, doubled, right_shift, mask}, scale = 2^left_shift
// (wrapped; 0 for a zero multiplier) and doubled = 2 * multiplier wrapped to 32 bits, which is
// 2 * multiplier - 2^32 for the multipliers of [2^30, 2^31). With s = x * scale (wrapping),
// floor((s * multiplier + 2^30) / 2^31) = s + floor((s * doubled + 2^31) / 2^32) (both 0 for
// a zero multiplier, as s is):
// one rounding high multiply-accumulate (SMMLAR on Armv7E-M). Then RoundingDivideByPOT with the
// mask precomputed. Bit-identical with MultiplyByQuantizedMultiplier for every x, for the
// multipliers HasPreparedMultiplier accepts: zero and [2^30, 2^31), all QuantizeMultiplier makes
// of a non-negative real (a negative scale makes negative ones).
inline constexpr int kPreparedMultiplierWords = 4;
inline bool HasPreparedMultiplier(int32_t quantized_multiplier) {
  return quantized_multiplier == 0 || quantized_multiplier >= (int32_t{1} << 30);
}
// Precondition: HasPreparedMultiplier(quantized_multiplier).
void PrepareMultiplier(int32_t quantized_multiplier, int shift, int32_t* record);

// acc + (a * b + 2^31) / 2^32 rounded down: the high word of the product, rounded, added to acc
// (SMMLAR; wrapping).
inline int32_t RoundedHighMulAdd(int32_t a, int32_t b, int32_t acc) {
#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
  int32_t r;
  __asm__("smmlar %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
  return r;
#else
  return WrapAdd(acc, static_cast<int32_t>((int64_t{a} * b + (int64_t{1} << 31)) >> 32));
#endif
}

// RoundingDivideByPOT by a record's right shift and mask. remainder > threshold is the sign of
// threshold - remainder (both in [0, 2^31)): no compare and conditional add.
inline int32_t RoundingDivideByPreparedPOT(int32_t x, const int32_t* record) {
  const int32_t mask = record[3];
  const int32_t threshold = (mask >> 1) + static_cast<int32_t>(static_cast<uint32_t>(x) >> 31);
  const auto above = static_cast<uint32_t>(threshold - (x & mask)) >> 31;
  return (x >> record[2]) + static_cast<int32_t>(above);
}

inline int32_t MultiplyByPreparedMultiplier(int32_t x, const int32_t* record) {
  const int32_t shifted = WrapMul(x, record[0]);
  return RoundingDivideByPreparedPOT(RoundedHighMulAdd(shifted, record[1], shifted), record);
}

// The 64-bit accumulator variant used by 16-bit activation kernels.
int32_t MultiplyByQuantizedMultiplier(int64_t x, int32_t quantized_multiplier, int shift);
// x * multiplier * 2^left_shift for multipliers below one (left_shift <= 0).
int32_t MultiplyByQuantizedMultiplierSmallerThanOneExp(int32_t x, int32_t quantized_multiplier,
                                                       int left_shift);

// QuantizeMultiplier for multipliers in (0, 1): the shift is <= 0 (TFLite's
// QuantizeMultiplierSmallerThanOneExp, used by add/sub).
void QuantizeMultiplierSmallerThanOneExp(double real_multiplier, int32_t* quantized_multiplier,
                                         int* left_shift);

// x * 2^left_shift (wrapping like TFLite's int32 arithmetic), then one doubling high multiply:
// TFLite's MultiplyByQuantizedMultiplierGreaterThanOne (softmax input rescaling).
int32_t MultiplyByQuantizedMultiplierGreaterThanOne(int32_t x, int32_t quantized_multiplier,
                                                    int left_shift);

// --- gemmlowp fixed point (raw int32 values; Qm.n means m integer bits, 31 - m fraction bits).

// (a + b) / 2 rounded half away from zero, computed in 64 bits (gemmlowp RoundingHalfSum).
int32_t RoundingHalfSum(int32_t a, int32_t b);
// x * 2^exponent: exponent > 0 saturates to INT32_MIN/MAX, exponent < 0 is
// RoundingDivideByPOT (gemmlowp SaturatingRoundingMultiplyByPOT; also what Rescale does).
int32_t SaturatingRoundingMultiplyByPOT(int32_t x, int exponent);
// exp(a) for a <= 0 given in Q(integer_bits).(31 - integer_bits); result in Q0.31
// (gemmlowp exp_on_negative_values, barrel shifter and all). integer_bits in [0, 30].
int32_t ExpOnNegativeValues(int32_t a, int integer_bits);
// 1 / (1 + a) for a in [0, 1) in Q0.31, three Newton-Raphson steps (gemmlowp
// one_over_one_plus_x_for_x_in_0_1).
int32_t OneOverOnePlusXForXIn01(int32_t a);
// (1 - a) / (1 + a) for a in [0, 1) in Q0.31 (gemmlowp one_minus_x_over_one_plus_x_for_x_in_0_1).
int32_t OneMinusXOverOnePlusXForXIn01(int32_t a);
// gemmlowp's logistic and tanh of a Q(integer_bits) value, results in Q0.31 (logistic via
// exp(-|a|) and 1 / (1 + x), tanh via exp(-2|a|) and (1 - x) / (1 + x)).
int32_t FixedLogistic(int32_t a, int integer_bits);
int32_t FixedTanh(int32_t a, int integer_bits);
// TFLite GetReciprocal: x is a positive Q(x_integer_digits) value; returns 1/x as Q0.31 scaled
// by 2^-num_bits_over_unit.
int32_t GetReciprocal(int32_t x, int x_integer_digits, int* num_bits_over_unit);

// TFLite GetInvSqrtQuantizedMultiplierExp: 1 / sqrt(input) for input >= 0 (0 and 1 give
// INT32_MAX, shift 0) as a multiplier and shift, by five Newton-Raphson steps in gemmlowp's Q3.28
// fixed point; the shift is multiplied by reverse_shift (-1: a left shift, as L2Normalization
// passes kReverseShift).
void GetInvSqrtQuantizedMultiplierExp(int32_t input, int reverse_shift, int32_t* output_inv_sqrt,
                                      int* output_shift);

// TFLite PreprocessSoftmaxScaling (double rounding build): beta * input_scale *
// 2^(31 - input_integer_bits), capped at 2^31 - 1, quantised with a non-negative left shift.
void PreprocessSoftmaxScaling(double beta, double input_scale, int input_integer_bits,
                              int32_t* quantized_multiplier, int* left_shift);
// TFLite CalculateInputRadius: floor((2^input_integer_bits - 1) *
// 2^(total_signed_bits - input_integer_bits) / 2^input_left_shift), in double precision.
int CalculateInputRadius(int input_integer_bits, int input_left_shift, int total_signed_bits = 31);

// TFLite's int16 sigmoid and tanh (reference_integer_ops::Logistic / Tanh on int16): the input
// is rescaled by `input_multiplier` (0: 3 << input_left_shift, the power-of-two case) and a
// rounding right shift, then interpolated in the 256-entry sigmoid table (tanh through
// tanh(x) = 2 sigmoid(2x) - 1). Input Q3.12 after rescaling, output Q0.15.
int16_t SigmoidInt16(int16_t x, int32_t input_multiplier, int32_t input_left_shift);
int16_t TanhInt16(int16_t x, int32_t input_multiplier, int32_t input_left_shift);

struct QuantRange {
  int32_t min;
  int32_t max;
};

// The clamp range of a fused activation ("none", "relu", "relu6", "relu_n1_to_1") on an
// output of type `dtype` with the given scale and zero point.
QuantRange QuantizedActivationRange(std::string_view activation, DType dtype, float scale,
                                    int32_t zero_point);

// Scale and zero point of a per-tensor quantised value (scale 1, zero point 0 if absent).
float Scale(const TensorArg& t);
int32_t ZeroPoint(const TensorArg& t);

}  // namespace memfold
