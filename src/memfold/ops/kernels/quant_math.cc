#include "memfold/ops/kernels/quant_math.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
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
  // In 64 bits: int8 softmax over 1,000+ classes asks for exponents above 31, where a 32-bit
  // shift is undefined (found by UBSan on the int8 zoo MobileNets). Below 32 the result is
  // the same as in 32 bits, and from 62 on it is 0 as at 62. A negative exponent only comes
  // from absurd scales in a broken model (the fuzzer's int8 add with a multiplier above one,
  // undefined in TFLite): it divides by 1 rather than shift by a negative count.
  exponent = std::clamp(exponent, 0, 62);
  const int64_t mask = (int64_t{1} << exponent) - 1;
  const int64_t remainder = x & mask;
  const int64_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return static_cast<int32_t>((int64_t{x} >> exponent) + (remainder > threshold ? 1 : 0));
}

int32_t MultiplyByQuantizedMultiplier(int64_t x, int32_t quantized_multiplier, int shift) {
  // TFLite's 64-bit variant: the multiplier is first rounded to 16 bits, then one rounding
  // right shift by 15 - shift.
  const int32_t reduced =
      quantized_multiplier < 0x7FFF0000 ? (quantized_multiplier + (1 << 15)) >> 16 : 0x7FFF;
  const int total_shift = 15 - shift;
  x = x * static_cast<int64_t>(reduced) + (int64_t{1} << (total_shift - 1));
  return static_cast<int32_t>(x >> total_shift);
}

void PrepareMultiplier(int32_t quantized_multiplier, int shift, int32_t* record) {
  const int right_shift = ShiftCount(-shift);
  const bool zero = quantized_multiplier == 0;
  record[0] = zero ? 0 : static_cast<int32_t>(uint32_t{1} << ShiftCount(shift));
  record[1] = static_cast<int32_t>(static_cast<uint32_t>(quantized_multiplier) * 2u);
  record[2] = right_shift;
  record[3] = static_cast<int32_t>((uint32_t{1} << right_shift) - 1u);
}

int32_t MultiplyByQuantizedMultiplierSmallerThanOneExp(int32_t x, int32_t quantized_multiplier,
                                                       int left_shift) {
  return RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x, quantized_multiplier),
                             -left_shift);
}

void QuantizeMultiplierSmallerThanOneExp(double real_multiplier, int32_t* quantized_multiplier,
                                         int* left_shift) {
  QuantizeMultiplier(real_multiplier, quantized_multiplier, left_shift);
}

namespace {

// exp(a) for a in [-1/4, 0), a and the result in Q0.31: Taylor expansion around -1/8.
int32_t ExpOnIntervalBetweenNegativeOneQuarterAnd0Excl(int32_t a) {
  constexpr int32_t kExpMinusOneEighth = 1895147668;  // exp(-1/8) in Q0.31
  constexpr int32_t kOneThird = 715827883;            // 1/3 in Q0.31
  const int32_t x = WrapAdd(a, int32_t{1} << 28);     // a + 1/8
  const int32_t x2 = SaturatingRoundingDoublingHighMul(x, x);
  const int32_t x3 = SaturatingRoundingDoublingHighMul(x2, x);
  const int32_t x4 = SaturatingRoundingDoublingHighMul(x2, x2);
  const int32_t x4_over_4 = RoundingDivideByPOT(x4, 2);
  const int32_t poly = RoundingDivideByPOT(
      WrapAdd(SaturatingRoundingDoublingHighMul(WrapAdd(x4_over_4, x3), kOneThird), x2), 1);
  return WrapAdd(kExpMinusOneEighth,
                 SaturatingRoundingDoublingHighMul(kExpMinusOneEighth, WrapAdd(x, poly)));
}

}  // namespace

// TFLite shifts left by `left_shift` unchecked; the general form is the same for shifts in
// [0, 31] and stays defined for the negative shifts tiny scales produce.
int32_t MultiplyByQuantizedMultiplierGreaterThanOne(int32_t x, int32_t quantized_multiplier,
                                                    int left_shift) {
  return MultiplyByQuantizedMultiplier(x, quantized_multiplier, left_shift);
}

int32_t RoundingHalfSum(int32_t a, int32_t b) {
  const int64_t sum = static_cast<int64_t>(a) + static_cast<int64_t>(b);
  const int64_t sign = sum >= 0 ? 1 : -1;
  return static_cast<int32_t>((sum + sign) / 2);
}

int32_t SaturatingRoundingMultiplyByPOT(int32_t x, int exponent) {
  if (exponent < 0) return RoundingDivideByPOT(x, -exponent);
  if (exponent == 0) return x;
  const int32_t threshold = static_cast<int32_t>((int64_t{1} << (31 - exponent)) - 1);
  if (x > threshold) return std::numeric_limits<int32_t>::max();
  if (x < -threshold) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(static_cast<uint32_t>(x) << exponent);
}

void GetInvSqrtQuantizedMultiplierExp(int32_t input, int reverse_shift, int32_t* output_inv_sqrt,
                                      int* output_shift) {
  if (input <= 1) {
    *output_inv_sqrt = std::numeric_limits<int32_t>::max();
    *output_shift = 0;
    return;
  }
  *output_shift = 11;
  while (input >= (1 << 29)) {
    input /= 4;
    ++*output_shift;
  }
  const auto max_left_shift_bits =
      static_cast<unsigned>(std::countl_zero(static_cast<uint32_t>(input))) - 1;
  const unsigned left_shift_bit_pairs = max_left_shift_bits / 2 - 1;
  *output_shift -= static_cast<int>(left_shift_bit_pairs);
  input <<= 2 * left_shift_bit_pairs;
  // gemmlowp FixedPoint<int32_t, 3>: a product of Qm and Qn values is Q(m + n); Rescale<3>
  // shifts back by the difference, saturating.
  const int32_t input_q3 = input >> 1;
  const int32_t half_input_q3 = SaturatingRoundingMultiplyByPOT(input_q3, -1);
  const int32_t half_three_q3 = (1 << 28) + (1 << 27);
  int32_t x = 1 << 28;  // 1.0 in Q3.28
  for (int i = 0; i < 5; ++i) {
    const int32_t x3 = SaturatingRoundingMultiplyByPOT(
        SaturatingRoundingDoublingHighMul(SaturatingRoundingDoublingHighMul(x, x), x), 6);
    x = SaturatingRoundingMultiplyByPOT(
        WrapSub(SaturatingRoundingDoublingHighMul(half_three_q3, x),
                SaturatingRoundingDoublingHighMul(half_input_q3, x3)),
        3);
  }
  constexpr int32_t kHalfSqrt2 = 1518500250;  // sqrt(2) / 2 in Q0.31
  *output_inv_sqrt = SaturatingRoundingDoublingHighMul(x, kHalfSqrt2);
  if (*output_shift < 0) {
    *output_inv_sqrt =
        static_cast<int32_t>(static_cast<uint32_t>(*output_inv_sqrt) << -*output_shift);
    *output_shift = 0;
  }
  *output_shift *= reverse_shift;
}

int32_t ExpOnNegativeValues(int32_t a, int integer_bits) {
  const int fractional_bits = 31 - integer_bits;
  const int32_t one_quarter = int32_t{1} << (fractional_bits - 2);
  const int32_t mask = one_quarter - 1;
  // a = (a mod 1/4) - 1/4 - remainder, remainder a non-negative multiple of 1/4.
  const int32_t a_mod_quarter_minus_one_quarter = WrapSub(a & mask, one_quarter);
  int32_t result = ExpOnIntervalBetweenNegativeOneQuarterAnd0Excl(
      SaturatingRoundingMultiplyByPOT(a_mod_quarter_minus_one_quarter, integer_bits));
  const int32_t remainder = WrapSub(a_mod_quarter_minus_one_quarter, a);
  // exp(-2^k) in Q0.31 for k = -2 .. 4, applied for each set bit of the remainder.
  struct Barrel {
    int exponent;
    int32_t multiplier;
  };
  constexpr Barrel kBarrel[] = {{-2, 1672461947}, {-1, 1302514674}, {0, 790015084}, {1, 290630308},
                                {2, 39332535},    {3, 720401},      {4, 242}};
  for (const Barrel& b : kBarrel) {
    if (integer_bits <= b.exponent) continue;
    const int shift = fractional_bits + b.exponent;
    if ((remainder & (int32_t{1} << shift)) != 0) {
      result = SaturatingRoundingDoublingHighMul(result, b.multiplier);
    }
  }
  if (integer_bits > 5) {
    const int32_t clamp = -(int32_t{1} << (36 - integer_bits));  // -32
    if (a < clamp) result = 0;
  }
  if (a == 0) result = std::numeric_limits<int32_t>::max();  // exp(0) = "one" in Q0.31
  return result;
}

namespace {

// 1 / (2 * half_denominator) in Q2.29 by three Newton-Raphson steps from 48/17 - 32/17 d
// (gemmlowp's division for one_over_one_plus_x_for_x_in_0_1 and
// one_minus_x_over_one_plus_x_for_x_in_0_1); half_denominator in Q0.31, in [1/2, 1).
int32_t NewtonReciprocalQ2(int32_t half_denominator) {
  constexpr int32_t k48Over17 = 1515870810;      // Q2.29
  constexpr int32_t kNeg32Over17 = -1010580540;  // Q2.29
  constexpr int32_t kOneQ2 = int32_t{1} << 29;
  int32_t x = WrapAdd(k48Over17, SaturatingRoundingDoublingHighMul(half_denominator, kNeg32Over17));
  for (int i = 0; i < 3; ++i) {
    const int32_t half_denominator_times_x = SaturatingRoundingDoublingHighMul(half_denominator, x);
    const int32_t one_minus = WrapSub(kOneQ2, half_denominator_times_x);
    // Q2 * Q2 = Q4, rescaled back to Q2.
    const int32_t correction_q4 = SaturatingRoundingDoublingHighMul(x, one_minus);
    x = WrapAdd(x, SaturatingRoundingMultiplyByPOT(correction_q4, 2));
  }
  return x;
}

}  // namespace

int32_t OneOverOnePlusXForXIn01(int32_t a) {
  const int32_t x = NewtonReciprocalQ2(RoundingHalfSum(a, std::numeric_limits<int32_t>::max()));
  // x / 2 as Q1 (same raw bits), rescaled to Q0.
  return SaturatingRoundingMultiplyByPOT(x, 1);
}

int32_t OneMinusXOverOnePlusXForXIn01(int32_t a) {
  const int32_t x = NewtonReciprocalQ2(RoundingHalfSum(a, std::numeric_limits<int32_t>::max()));
  // (1 - a) / (1 + a) = 2 / (1 + a) - 1 = x - 1 in Q2, rescaled to Q0.
  return SaturatingRoundingMultiplyByPOT(WrapSub(x, int32_t{1} << 29), 2);
}

int32_t FixedLogistic(int32_t a, int integer_bits) {
  if (a == 0) return int32_t{1} << 30;  // one half
  const int32_t magnitude = a > 0 ? a : -a;
  const int32_t positive = OneOverOnePlusXForXIn01(ExpOnNegativeValues(-magnitude, integer_bits));
  return a > 0 ? positive : std::numeric_limits<int32_t>::max() - positive;
}

int32_t FixedTanh(int32_t a, int integer_bits) {
  if (a == 0) return 0;
  const int32_t negative_magnitude = a < 0 ? a : -a;
  // exp(2 n): the same raw bits read with one more integer bit.
  const int32_t t =
      OneMinusXOverOnePlusXForXIn01(ExpOnNegativeValues(negative_magnitude, integer_bits + 1));
  return a < 0 ? -t : t;
}

int32_t GetReciprocal(int32_t x, int x_integer_digits, int* num_bits_over_unit) {
  const auto ux = static_cast<uint32_t>(x);
  const int headroom_plus_one = ux == 0 ? 32 : std::countl_zero(ux);
  *num_bits_over_unit = x_integer_digits - headroom_plus_one;
  const uint32_t shifted = headroom_plus_one >= 32 ? 0u : ux << headroom_plus_one;
  const auto shifted_sum_minus_one = static_cast<int32_t>(shifted - (uint32_t{1} << 31));
  return OneOverOnePlusXForXIn01(shifted_sum_minus_one);
}

void PreprocessSoftmaxScaling(double beta, double input_scale, int input_integer_bits,
                              int32_t* quantized_multiplier, int* left_shift) {
  const double max_real_multiplier = static_cast<double>((int64_t{1} << 31) - 1);
  const double real_multiplier =
      std::min(beta * input_scale * static_cast<double>(1 << (31 - input_integer_bits)),
               max_real_multiplier);
  QuantizeMultiplier(real_multiplier, quantized_multiplier, left_shift);
}

// TFLite divides by (1LL << input_left_shift); a tiny input scale makes that shift negative,
// undefined behaviour there. Scaling by 2^-shift is the same wherever TFLite is defined, and
// the radius is clamped to int's range.
int CalculateInputRadius(int input_integer_bits, int input_left_shift, int total_signed_bits) {
  const double max_input_rescaled =
      std::ldexp(static_cast<double>((1 << input_integer_bits) - 1),
                 total_signed_bits - input_integer_bits - input_left_shift);
  return static_cast<int>(std::min(std::floor(max_input_rescaled),
                                   static_cast<double>(std::numeric_limits<int>::max())));
}

QuantRange QuantizedActivationRange(std::string_view activation, DType dtype, float scale,
                                    int32_t zero_point) {
  int32_t qmin = 0, qmax = 0;
  switch (dtype) {
    case DType::kI8:
      qmin = -128;
      qmax = 127;
      break;
    case DType::kU8:
      qmin = 0;
      qmax = 255;
      break;
    case DType::kI16:
      qmin = -32768;
      qmax = 32767;
      break;
    default:
      qmin = std::numeric_limits<int32_t>::min();
      qmax = std::numeric_limits<int32_t>::max();
  }
  auto quantize = [&](float f) { return zero_point + static_cast<int32_t>(std::round(f / scale)); };
  if (activation == "relu") return {std::max(qmin, quantize(0.0f)), qmax};
  if (activation == "relu6")
    return {std::max(qmin, quantize(0.0f)), std::min(qmax, quantize(6.0f))};
  if (activation == "relu_n1_to_1")
    return {std::max(qmin, quantize(-1.0f)), std::min(qmax, quantize(1.0f))};
  return {qmin, qmax};
}

namespace {

// sigmoid(k / 24) in unsigned Q0.16, k = 0..255 (TFLite's sigmoid_table_uint16, shared by the
// int16 sigmoid and tanh; published values, not all equal to the rounded formula).
constexpr uint16_t kSigmoidTable[256] = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794,
    41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443,
    48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374,
    54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433, 57724, 58007, 58280, 58544,
    58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110, 61279,
    61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990,
    63090, 63186, 63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030,
    64090, 64148, 64204, 64257, 64308, 64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652,
    64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019,
    65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234,
    65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360,
    65367, 65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476,
    65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498, 65500, 65501,
    65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516,
    65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529,
    65529, 65530, 65530, 65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532,
    65532, 65532, 65532, 65533, 65533, 65533, 65533, 65533, 65533, 65533, 65533, 65534, 65534,
    65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535};

// The rescaled input: (x * multiplier + round) >> shift, multiplier 0 meaning 3 << shift.
int32_t RescaleForTable(int16_t x, int32_t multiplier, int32_t left_shift) {
  if (multiplier == 0) {
    multiplier = 3 << left_shift;
    left_shift = 0;
  }
  const int32_t round = left_shift > 0 ? 1 << (left_shift - 1) : 0;
  return (int32_t{x} * multiplier + round) >> left_shift;
}

// The table interpolated at |v| with `fraction_bits` bits below the table step; `saturated`
// beyond its end.
uint32_t Interpolate(uint32_t magnitude, int fraction_bits, uint32_t saturated) {
  const uint32_t step = magnitude >> fraction_bits;
  if (step >= 255) return saturated;
  const uint32_t a = kSigmoidTable[step], b = kSigmoidTable[step + 1];
  const uint32_t t = magnitude & ((1u << fraction_bits) - 1);
  return (a << fraction_bits) + t * (b - a);
}

}  // namespace

int16_t SigmoidInt16(int16_t x, int32_t input_multiplier, int32_t input_left_shift) {
  const int32_t v = RescaleForTable(x, input_multiplier, input_left_shift);
  uint32_t result = Interpolate(static_cast<uint32_t>(std::abs(v)), 9, 0x7FFFu << 10);
  result = v >= 0 ? result + (1u << 9) : (1u << 25) - result + (1u << 9) - 1;
  return static_cast<int16_t>(result >> 10);
}

int16_t TanhInt16(int16_t x, int32_t input_multiplier, int32_t input_left_shift) {
  const int32_t v = RescaleForTable(x, input_multiplier, input_left_shift);
  auto result =
      static_cast<int32_t>(Interpolate(static_cast<uint32_t>(std::abs(v)), 8, 0xFFFFu << 8));
  result = v >= 0 ? result - (1 << 23) + (1 << 7) : -result + (1 << 23) + (1 << 7) - 1;
  return static_cast<int16_t>(result >> 8);
}

float Scale(const TensorArg& t) { return t.quant.scale.empty() ? 1.0f : t.quant.scale[0]; }

int32_t ZeroPoint(const TensorArg& t) {
  return t.quant.zero_point.empty() ? 0 : static_cast<int32_t>(t.quant.zero_point[0]);
}

}  // namespace memfold
