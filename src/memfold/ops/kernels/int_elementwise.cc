// int8 and int16 add, sub, mul, leaky relu, abs, rsqrt and squared difference, and int8 softmax
// (see int_kernels.h). Multipliers are computed per
// call from the values' quantisation exactly as TFLM's Prepare functions do.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <span>
#include <type_traits>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/int_kernels.h"
#include "memfold/ops/kernels/kernel_util.h"
#include "memfold/ops/kernels/quant_math.h"

namespace memfold {
namespace {

// `v` saturated to T's range.
template <typename T>
T ClampTo(int32_t v) {
  return static_cast<T>(
      std::clamp<int32_t>(v, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
}

// Broadcasting binary op in TFLite's row-major order: `f` maps the two int8 (or int16) inputs to
// the unclamped int32 result.
template <typename A, typename T, typename F>
void BinaryInt(const KernelContext& ctx, F f) {
  const QuantRange range = OutputRange(ctx);
  In<A, T> a{ctx.inputs[0].ptr<T>()};
  In<A, T> b{ctx.inputs[1].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  ForEachBroadcastIndex(ctx, [&](int64_t i, int64_t ia, int64_t ib) {
    const int32_t raw = f(static_cast<int32_t>(a[ia]), static_cast<int32_t>(b[ib]));
    y.Set(i, static_cast<T>(std::min(range.max, std::max(range.min, raw))));
  });
}

// A multiplier below one (QuantizeMultiplierSmallerThanOneExp's) as a PrepareMultiplier
// record: MultiplyByQuantizedMultiplierSmallerThanOneExp rounds SRDHM(x, m) by 2^-shift and
// ignores a positive shift (a multiplier of one or more, which only a broken model asks for).
// A multiplier without a record (a negative scale's) takes the two roundings themselves.
struct SmallMultiplier {
  int32_t record[kPreparedMultiplierWords];
  int32_t multiplier;
  int shift;
  bool prepared;
  void Set(int32_t m, int s) {
    multiplier = m, shift = std::min(s, 0), prepared = HasPreparedMultiplier(m);
    if (prepared) PrepareMultiplier(multiplier, shift, record);
  }
  int32_t operator()(int32_t x) const {
    if (prepared) return MultiplyByPreparedMultiplier(x, record);
    return MultiplyByQuantizedMultiplierSmallerThanOneExp(x, multiplier, shift);
  }
};

// The rescaling of TFLite's quantised add and sub: both inputs are shifted left by 20 bits
// and brought to a common scale (twice the larger input scale), summed or subtracted, then
// rescaled to the output.
struct AddSubParams {
  int32_t input1_offset, input2_offset, output_offset;
  int left_shift;
  SmallMultiplier input1, input2, output;

  // One input brought to the common scale: (q - zp) * 2^left_shift * input multiplier.
  int32_t Input1(int32_t q) const {
    return input1(WrapMul(WrapAdd(input1_offset, q), int32_t{1} << left_shift));
  }
  int32_t Input2(int32_t q) const {
    return input2(WrapMul(WrapAdd(input2_offset, q), int32_t{1} << left_shift));
  }
  // The sum or difference at the common scale, rescaled to the output (not yet clamped).
  int32_t Output(int32_t combined) const { return WrapAdd(output(combined), output_offset); }
};

int AddSubLeftShift(const KernelContext& ctx) {
  return ctx.outputs[0].dtype == DType::kI16 ? 15 : 20;
}

// The offsets and the three rescalings, quantised from the real multipliers that add and sub
// each compute in their own precision.
AddSubParams QuantizeAddSub(const KernelContext& ctx, double real_input1, double real_input2,
                            double real_output) {
  AddSubParams p{};
  p.input1_offset = -ZeroPoint(ctx.inputs[0]);
  p.input2_offset = -ZeroPoint(ctx.inputs[1]);
  p.output_offset = ZeroPoint(ctx.outputs[0]);
  p.left_shift = AddSubLeftShift(ctx);
  int32_t multiplier = 0;
  int shift = 0;
  QuantizeMultiplierSmallerThanOneExp(real_input1, &multiplier, &shift);
  p.input1.Set(multiplier, shift);
  QuantizeMultiplierSmallerThanOneExp(real_input2, &multiplier, &shift);
  p.input2.Set(multiplier, shift);
  QuantizeMultiplierSmallerThanOneExp(real_output, &multiplier, &shift);
  p.output.Set(multiplier, shift);
  return p;
}

// add_common.cc CalculateOpDataAdd: every quotient in double.
AddSubParams AddParams(const KernelContext& ctx) {
  const float s1 = Scale(ctx.inputs[0]), s2 = Scale(ctx.inputs[1]);
  const float so = Scale(ctx.outputs[0]);
  const double twice_max_input_scale = 2 * static_cast<double>(std::max(s1, s2));
  const double real_output =
      twice_max_input_scale / ((1 << AddSubLeftShift(ctx)) * static_cast<double>(so));
  return QuantizeAddSub(ctx, static_cast<double>(s1) / twice_max_input_scale,
                        static_cast<double>(s2) / twice_max_input_scale, real_output);
}

// sub_common.cc CalculateOpDataSub: unlike add, the quotients are taken in float and only the
// results widened to double.
AddSubParams SubParams(const KernelContext& ctx) {
  const float s1 = Scale(ctx.inputs[0]), s2 = Scale(ctx.inputs[1]);
  const float so = Scale(ctx.outputs[0]);
  const float twice_max_input_scale = 2 * std::max(s1, s2);
  const float real_output =
      twice_max_input_scale / (static_cast<float>(1 << AddSubLeftShift(ctx)) * so);
  return QuantizeAddSub(ctx, static_cast<double>(s1 / twice_max_input_scale),
                        static_cast<double>(s2 / twice_max_input_scale),
                        static_cast<double>(real_output));
}

}  // namespace

template <typename A, typename T>
void AddInt(const KernelContext& ctx) {
  const AddSubParams p = AddParams(ctx);
  BinaryInt<A, T>(
      ctx, [&p](int32_t x, int32_t y) { return p.Output(WrapAdd(p.Input1(x), p.Input2(y))); });
}

template <typename A, typename T>
void SubInt(const KernelContext& ctx) {
  const AddSubParams p = SubParams(ctx);
  BinaryInt<A, T>(
      ctx, [&p](int32_t x, int32_t y) { return p.Output(WrapSub(p.Input1(x), p.Input2(y))); });
}

template <typename A, typename T>
void MulInt(const KernelContext& ctx) {
  // mul_common.cc CalculateOpDataMul: the product of the input scales in double.
  const float s1 = Scale(ctx.inputs[0]), s2 = Scale(ctx.inputs[1]);
  const float so = Scale(ctx.outputs[0]);
  const double real_multiplier =
      static_cast<double>(s1) * static_cast<double>(s2) / static_cast<double>(so);
  int32_t multiplier = 0;
  int shift = 0;
  QuantizeMultiplier(real_multiplier, &multiplier, &shift);
  const int32_t input1_offset = -ZeroPoint(ctx.inputs[0]);
  const int32_t input2_offset = -ZeroPoint(ctx.inputs[1]);
  const int32_t output_offset = ZeroPoint(ctx.outputs[0]);
  BinaryInt<A, T>(ctx, [=](int32_t x, int32_t y) {
    return output_offset + MultiplyByQuantizedMultiplier((input1_offset + x) * (input2_offset + y),
                                                         multiplier, shift);
  });
}

namespace {

constexpr int kScaledDiffIntegerBits = 5;     // exp input: Q5.26
constexpr int kAccumulationIntegerBits = 12;  // sum of exps: Q12.19

// softmax_common.cc CalculateSoftmaxParams (int8 input): the exp of a difference
// (input - row max), which counts only at or above diff_min.
class SoftmaxExp {
 public:
  explicit SoftmaxExp(const KernelContext& ctx) {
    const double beta = static_cast<double>(static_cast<float>(ctx.attrs.Float("beta")));
    const double input_scale = static_cast<double>(Scale(ctx.inputs[0]));
    PreprocessSoftmaxScaling(beta, input_scale, kScaledDiffIntegerBits, &input_multiplier_,
                             &input_left_shift_);
    diff_min_ = static_cast<int32_t>(
        -1.0 * CalculateInputRadius(kScaledDiffIntegerBits, input_left_shift_));
  }

  bool Counts(int32_t input_diff) const { return input_diff >= diff_min_; }

  // exp(beta * input_scale * input_diff) in Q0.31.
  int32_t operator()(int32_t input_diff) const {
    const int32_t scaled_diff = MultiplyByQuantizedMultiplierGreaterThanOne(
        input_diff, input_multiplier_, input_left_shift_);
    return ExpOnNegativeValues(scaled_diff, kScaledDiffIntegerBits);
  }

 private:
  int32_t input_multiplier_ = 0;
  int input_left_shift_ = 0;
  int32_t diff_min_ = 0;
};

template <typename A, typename OutT>
void SoftmaxRows(const KernelContext& ctx) {
  const SoftmaxExp exp_of(ctx);
  const ShapeView shape = ctx.inputs[0].shape;
  const int64_t depth = shape.empty() ? 1 : shape.back();
  const int64_t rows = ctx.inputs[0].elements() / std::max<int64_t>(1, depth);
  constexpr auto kOutMin = static_cast<int32_t>(std::numeric_limits<OutT>::min());
  constexpr auto kOutMax = static_cast<int32_t>(std::numeric_limits<OutT>::max());
  In<A, int8_t> x{ctx.inputs[0].ptr<int8_t>()};
  Out<A, OutT> y{OutputOf<A, OutT>(ctx.outputs[0])};
  for (int64_t i = 0; i < rows; ++i) {
    int8_t max_in_row = std::numeric_limits<int8_t>::min();
    for (int64_t c = 0; c < depth; ++c) max_in_row = std::max(max_in_row, x[i * depth + c]);

    int32_t sum_of_exps = 0;  // Q12.19
    for (int64_t c = 0; c < depth; ++c) {
      const int32_t input_diff = static_cast<int32_t>(x[i * depth + c]) - max_in_row;
      if (exp_of.Counts(input_diff)) {
        sum_of_exps +=
            SaturatingRoundingMultiplyByPOT(exp_of(input_diff), -kAccumulationIntegerBits);
      }
    }

    int num_bits_over_unit = 0;
    const int32_t shifted_scale =
        GetReciprocal(sum_of_exps, kAccumulationIntegerBits, &num_bits_over_unit);
    const int exponent = num_bits_over_unit + 31 - static_cast<int>(sizeof(OutT) * 8);

    for (int64_t c = 0; c < depth; ++c) {
      const int32_t input_diff = static_cast<int32_t>(x[i * depth + c]) - max_in_row;
      int32_t value = kOutMin;
      if (exp_of.Counts(input_diff)) {
        const int32_t unsat = RoundingDivideByPOT(
            SaturatingRoundingDoublingHighMul(shifted_scale, exp_of(input_diff)), exponent);
        value = std::max(std::min(unsat + kOutMin, kOutMax), kOutMin);
      }
      y.Set(i * depth + c, static_cast<OutT>(value));
    }
  }
}

}  // namespace

template <typename A>
void SoftmaxI8(const KernelContext& ctx) {
  if (ctx.outputs[0].dtype == DType::kI16) {
    SoftmaxRows<A, int16_t>(ctx);
  } else {
    SoftmaxRows<A, int8_t>(ctx);
  }
}

namespace {

// common.h LUTLookup: the 513-entry table `lut` (an int16 range in 512 steps) interpolated at
// `value`.
int32_t LutLookup(int16_t value, std::span<const int32_t> lut) {
  const auto index = static_cast<size_t>(256 + (value >> 7));
  const int32_t offset = value & 0x7f;
  const int32_t base = lut[index];
  const int32_t slope = lut[index + 1] - base;
  return static_cast<int16_t>(base + ((slope * offset + 64) >> 7));
}

int16_t SaturateToInt16(int32_t v) {
  return static_cast<int16_t>(std::clamp<int32_t>(v, std::numeric_limits<int16_t>::min(),
                                                  std::numeric_limits<int16_t>::max()));
}

}  // namespace

template <typename A>
void SoftmaxI16(const KernelContext& ctx) {
  const int32_t input_multiplier = ctx.prepared[0];
  const int input_left_shift = ctx.prepared[1];
  const std::span<const int32_t> exp_lut = ctx.prepared.subspan(2, kSoftmaxI16LutSize);
  const std::span<const int32_t> reciprocal_lut =
      ctx.prepared.subspan(2 + kSoftmaxI16LutSize, kSoftmaxI16LutSize);
  const ShapeView shape = ctx.inputs[0].shape;
  const int64_t depth = shape.empty() ? 1 : shape.back();
  const int64_t rows = ctx.inputs[0].elements() / std::max<int64_t>(1, depth);
  In<A, int16_t> x{ctx.inputs[0].ptr<int16_t>()};
  Out<A, int16_t> y{OutputOf<A, int16_t>(ctx.outputs[0])};
  // exp(x - max) of element c: the difference scaled so that [-65535, 0] is [-10, 0], recentred
  // to the table's symmetric input, looked up in Q0.15.
  auto exp_of = [&](int64_t row, int64_t c, int16_t max_in_row) {
    const int32_t diff = static_cast<int32_t>(x[row * depth + c]) - max_in_row;
    const int32_t scaled = MultiplyByQuantizedMultiplier(diff, input_multiplier, input_left_shift);
    return LutLookup(SaturateToInt16(WrapAdd(scaled, 32767)), exp_lut);
  };
  for (int64_t i = 0; i < rows; ++i) {
    int16_t max_in_row = std::numeric_limits<int16_t>::min();
    for (int64_t c = 0; c < depth; ++c) max_in_row = std::max(max_in_row, x[i * depth + c]);
    int32_t sum_of_exps = 0;  // Q16.15
    for (int64_t c = 0; c < depth; ++c)
      sum_of_exps = WrapAdd(sum_of_exps, exp_of(i, c, max_in_row));
    // 1 / sum by the 1 / (1 + x) table at x = sum - 1, normalised and recentred.
    const int headroom_plus_one = std::countl_zero(static_cast<uint32_t>(sum_of_exps));
    const auto shifted_sum = static_cast<int32_t>(
        ((static_cast<int64_t>(sum_of_exps) << (headroom_plus_one - 1)) + (1 << 13)) >> 14);
    const int32_t reciprocal =
        LutLookup(SaturateToInt16(shifted_sum - ((1 << 15) + (1 << 16))), reciprocal_lut);
    const int right_shift = 31 - headroom_plus_one;
    const int64_t round = int64_t{1} << (right_shift - 1);
    for (int64_t c = 0; c < depth; ++c) {
      const auto result = static_cast<int32_t>(
          (static_cast<int64_t>(exp_of(i, c, max_in_row)) * reciprocal + round) >> right_shift);
      y.Set(i * depth + c, static_cast<int16_t>(std::clamp<int32_t>(result, 0, 32767)));
    }
  }
}

MF_INSTANTIATE_KERNEL_T(AddInt, int8_t)
MF_INSTANTIATE_KERNEL_T(AddInt, int16_t)
MF_INSTANTIATE_KERNEL_T(SubInt, int8_t)
MF_INSTANTIATE_KERNEL_T(SubInt, int16_t)
MF_INSTANTIATE_KERNEL_T(MulInt, int8_t)
MF_INSTANTIATE_KERNEL_T(MulInt, int16_t)
MF_INSTANTIATE_KERNEL(SoftmaxI8)
MF_INSTANTIATE_KERNEL(SoftmaxI16)

// reference_integer_ops LeakyRelu (QuantizeLeakyRelu): the identity multiplier for inputs at or
// above the zero point, alpha's below; [identity multiplier, shift, alpha multiplier, shift] come
// from PrepareLeakyReluInt.
template <typename A, typename T>
void LeakyReluInt(const KernelContext& ctx) {
  const int32_t in_zp = ZeroPoint(ctx.inputs[0]), out_zp = ZeroPoint(ctx.outputs[0]);
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  const int64_t n = ctx.outputs[0].elements();
  for (int64_t i = 0; i < n; ++i) {
    const int32_t v = x[i] - in_zp;
    const size_t k = v >= 0 ? 0 : 2;
    const int32_t scaled = MultiplyByQuantizedMultiplier(v, ctx.prepared[k], ctx.prepared[k + 1]);
    y.Set(i, ClampTo<T>(WrapAdd(out_zp, scaled)));
  }
}

template <typename A, typename T>
void AbsInt(const KernelContext& ctx) {
  const int32_t in_zp = ZeroPoint(ctx.inputs[0]), out_zp = ZeroPoint(ctx.outputs[0]);
  const float in_scale = Scale(ctx.inputs[0]), out_scale = Scale(ctx.outputs[0]);
  const bool rescale = in_scale != out_scale;
  int32_t multiplier = 0;
  int shift = 0;
  if (rescale) QuantizeMultiplier(static_cast<double>(in_scale / out_scale), &multiplier, &shift);
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  const int64_t n = ctx.outputs[0].elements();
  for (int64_t i = 0; i < n; ++i) {
    const int32_t magnitude = std::abs(static_cast<int32_t>(x[i]) - in_zp);
    const int32_t scaled =
        rescale ? MultiplyByQuantizedMultiplier(magnitude, multiplier, shift) : magnitude;
    y.Set(i, ClampTo<T>(WrapAdd(scaled, out_zp)));
  }
}

template <typename A, typename T>
void RsqrtInt(const KernelContext& ctx) {
  constexpr int kReverseShift = -1, kShift = 20;  // elementwise.cc's; kShift keeps 1/sqrt integer
  const int32_t in_zp = ZeroPoint(ctx.inputs[0]), out_zp = ZeroPoint(ctx.outputs[0]);
  int32_t multiplier = 0;
  int shift = 0;
  QuantizeMultiplier(
      1.0 / static_cast<double>(std::sqrt(Scale(ctx.inputs[0])) * Scale(ctx.outputs[0])),
      &multiplier, &shift);
  In<A, T> x{ctx.inputs[0].ptr<T>()};
  Out<A, T> y{OutputOf<A, T>(ctx.outputs[0])};
  const int64_t n = ctx.outputs[0].elements();
  for (int64_t i = 0; i < n; ++i) {
    const int32_t value = static_cast<int32_t>(x[i]) - in_zp;
    if (value <= 0) {
      y.Set(i, std::numeric_limits<T>::max());
      continue;
    }
    int32_t inv_sqrt = 0;
    int inv_shift = 0;
    GetInvSqrtQuantizedMultiplierExp(value, kReverseShift, &inv_sqrt, &inv_shift);
    const int32_t scaled = MultiplyByQuantizedMultiplier(int32_t{1}, inv_sqrt, inv_shift + kShift);
    const int32_t out = MultiplyByQuantizedMultiplier(scaled, multiplier, shift - kShift);
    y.Set(i, ClampTo<T>(WrapAdd(out, out_zp)));
  }
}

template <typename A, typename T>
void SquaredDifferenceInt(const KernelContext& ctx) {
  const int left_shift = std::is_same_v<T, int8_t> ? 7 : 0;
  const float s1 = Scale(ctx.inputs[0]), s2 = Scale(ctx.inputs[1]);
  const double twice_max_input_scale = 2.0 * static_cast<double>(std::max(s1, s2));
  SmallMultiplier input1{}, input2{};
  int32_t multiplier = 0;
  int shift = 0;
  QuantizeMultiplierSmallerThanOneExp(static_cast<double>(s1) / twice_max_input_scale, &multiplier,
                                      &shift);
  input1.Set(multiplier, shift);
  QuantizeMultiplierSmallerThanOneExp(static_cast<double>(s2) / twice_max_input_scale, &multiplier,
                                      &shift);
  input2.Set(multiplier, shift);
  int32_t out_multiplier = 0;
  int out_shift = 0;
  QuantizeMultiplier(twice_max_input_scale * twice_max_input_scale /
                         static_cast<double>((1 << (left_shift * 2)) * Scale(ctx.outputs[0])),
                     &out_multiplier, &out_shift);
  const int32_t offset1 = -ZeroPoint(ctx.inputs[0]), offset2 = -ZeroPoint(ctx.inputs[1]);
  const int32_t out_zp = ZeroPoint(ctx.outputs[0]);
  BinaryInt<A, T>(ctx, [&](int32_t x, int32_t y) {
    const int32_t a = input1(WrapMul(WrapAdd(offset1, x), int32_t{1} << left_shift));
    const int32_t b = input2(WrapMul(WrapAdd(offset2, y), int32_t{1} << left_shift));
    const int32_t difference = WrapSub(a, b);
    return WrapAdd(
        MultiplyByQuantizedMultiplier(WrapMul(difference, difference), out_multiplier, out_shift),
        out_zp);
  });
}

MF_INSTANTIATE_KERNEL_T(LeakyReluInt, int8_t)
MF_INSTANTIATE_KERNEL_T(LeakyReluInt, int16_t)
MF_INSTANTIATE_KERNEL_T(AbsInt, int8_t)
MF_INSTANTIATE_KERNEL_T(AbsInt, int16_t)
MF_INSTANTIATE_KERNEL_T(RsqrtInt, int8_t)
MF_INSTANTIATE_KERNEL_T(RsqrtInt, int16_t)
MF_INSTANTIATE_KERNEL_T(SquaredDifferenceInt, int8_t)
MF_INSTANTIATE_KERNEL_T(SquaredDifferenceInt, int16_t)

}  // namespace memfold
