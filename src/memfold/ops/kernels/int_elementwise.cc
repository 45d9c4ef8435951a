// int8 add, sub, mul and softmax (see int_kernels.h). Multipliers are computed per call from
// the values' quantisation exactly as TFLM's Prepare functions do.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/int_kernels.h"
#include "memfold/ops/kernels/quant_math.h"

namespace memfold {
namespace {

QuantRange OutputRange(const KernelContext& ctx) {
  const Value& out = *ctx.outputs[0].value;
  const std::string activation =
      ctx.node.attrs.Has("activation") ? ctx.node.attrs.Str("activation") : "none";
  return QuantizedActivationRange(activation, out.dtype, Scale(out), ZeroPoint(out));
}

// Row-major walk over the output with each input's matching index (stride 0 on broadcast
// dimensions): the visiting order of TFLite's element-wise and BroadcastXxxSlow kernels.
// `f` maps the two int8 inputs to the unclamped int32 result.
template <typename A, typename F>
void BinaryI8(const KernelContext& ctx, F f) {
  const Shape& out_shape = ctx.outputs[0].shape();
  const size_t rank = out_shape.size();
  std::vector<int64_t> stride_a(rank, 0), stride_b(rank, 0);
  for (int k = 0; k < 2; ++k) {
    const Shape& in = ctx.inputs[static_cast<size_t>(k)].shape();
    std::vector<int64_t>& stride = k == 0 ? stride_a : stride_b;
    int64_t step = 1;
    for (size_t d = 0; d < in.size(); ++d) {
      const size_t od = rank - 1 - d;
      const int64_t dim = in[in.size() - 1 - d];
      stride[od] = dim == 1 ? 0 : step;
      step *= dim;
    }
  }
  const QuantRange range = OutputRange(ctx);
  In<A, int8_t> a{ctx.inputs[0].ptr<int8_t>()};
  In<A, int8_t> b{ctx.inputs[1].ptr<int8_t>()};
  Out<A, int8_t> y{ctx.outputs[0].ptr<int8_t>()};
  const int64_t n = ctx.outputs[0].elements();
  std::vector<int64_t> index(rank, 0);
  int64_t ia = 0, ib = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t raw = f(static_cast<int32_t>(a[ia]), static_cast<int32_t>(b[ib]));
    y.Set(i, static_cast<int8_t>(std::min(range.max, std::max(range.min, raw))));
    for (size_t d = rank; d-- > 0;) {  // advance the row-major counter
      ia += stride_a[d];
      ib += stride_b[d];
      if (++index[d] < out_shape[d]) break;
      ia -= stride_a[d] * out_shape[d];
      ib -= stride_b[d] * out_shape[d];
      index[d] = 0;
    }
  }
}

// The rescaling of TFLite's quantised add and sub: both inputs are shifted left by 20 bits
// and brought to a common scale (twice the larger input scale), summed or subtracted, then
// rescaled to the output.
struct AddSubParams {
  int32_t input1_offset, input2_offset, output_offset;
  int left_shift;
  int32_t input1_multiplier, input2_multiplier, output_multiplier;
  int input1_shift, input2_shift, output_shift;
};

AddSubParams OffsetsOf(const KernelContext& ctx) {
  AddSubParams p{};
  p.input1_offset = -ZeroPoint(*ctx.inputs[0].value);
  p.input2_offset = -ZeroPoint(*ctx.inputs[1].value);
  p.output_offset = ZeroPoint(*ctx.outputs[0].value);
  p.left_shift = ctx.outputs[0].value->dtype == DType::kI16 ? 15 : 20;
  return p;
}

// add_common.cc CalculateOpDataAdd: every quotient in double.
AddSubParams AddParams(const KernelContext& ctx) {
  AddSubParams p = OffsetsOf(ctx);
  const float s1 = Scale(*ctx.inputs[0].value), s2 = Scale(*ctx.inputs[1].value);
  const float so = Scale(*ctx.outputs[0].value);
  const double twice_max_input_scale = 2 * static_cast<double>(std::max(s1, s2));
  const double real_input1 = static_cast<double>(s1) / twice_max_input_scale;
  const double real_input2 = static_cast<double>(s2) / twice_max_input_scale;
  const double real_output =
      twice_max_input_scale / ((1 << p.left_shift) * static_cast<double>(so));
  QuantizeMultiplierSmallerThanOneExp(real_input1, &p.input1_multiplier, &p.input1_shift);
  QuantizeMultiplierSmallerThanOneExp(real_input2, &p.input2_multiplier, &p.input2_shift);
  QuantizeMultiplierSmallerThanOneExp(real_output, &p.output_multiplier, &p.output_shift);
  return p;
}

// sub_common.cc CalculateOpDataSub: unlike add, the quotients are taken in float and only the
// results widened to double.
AddSubParams SubParams(const KernelContext& ctx) {
  AddSubParams p = OffsetsOf(ctx);
  const float s1 = Scale(*ctx.inputs[0].value), s2 = Scale(*ctx.inputs[1].value);
  const float so = Scale(*ctx.outputs[0].value);
  const float twice_max_input_scale = 2 * std::max(s1, s2);
  const auto real_input1 = static_cast<double>(s1 / twice_max_input_scale);
  const auto real_input2 = static_cast<double>(s2 / twice_max_input_scale);
  const auto real_output =
      static_cast<double>(twice_max_input_scale / (static_cast<float>(1 << p.left_shift) * so));
  QuantizeMultiplierSmallerThanOneExp(real_input1, &p.input1_multiplier, &p.input1_shift);
  QuantizeMultiplierSmallerThanOneExp(real_input2, &p.input2_multiplier, &p.input2_shift);
  QuantizeMultiplierSmallerThanOneExp(real_output, &p.output_multiplier, &p.output_shift);
  return p;
}

// One input brought to the common scale: (q - zp) * 2^left_shift * input multiplier.
int32_t ScaledInput(int32_t q, int32_t offset, int32_t multiplier, int shift, int left_shift) {
  const int32_t shifted = (offset + q) * (1 << left_shift);
  return MultiplyByQuantizedMultiplierSmallerThanOneExp(shifted, multiplier, shift);
}

}  // namespace

template <typename A>
void AddI8(const KernelContext& ctx) {
  const AddSubParams p = AddParams(ctx);
  BinaryI8<A>(ctx, [&p](int32_t x, int32_t y) {
    const int32_t a =
        ScaledInput(x, p.input1_offset, p.input1_multiplier, p.input1_shift, p.left_shift);
    const int32_t b =
        ScaledInput(y, p.input2_offset, p.input2_multiplier, p.input2_shift, p.left_shift);
    return MultiplyByQuantizedMultiplierSmallerThanOneExp(a + b, p.output_multiplier,
                                                          p.output_shift) +
           p.output_offset;
  });
}

template <typename A>
void SubI8(const KernelContext& ctx) {
  const AddSubParams p = SubParams(ctx);
  BinaryI8<A>(ctx, [&p](int32_t x, int32_t y) {
    const int32_t a =
        ScaledInput(x, p.input1_offset, p.input1_multiplier, p.input1_shift, p.left_shift);
    const int32_t b =
        ScaledInput(y, p.input2_offset, p.input2_multiplier, p.input2_shift, p.left_shift);
    return MultiplyByQuantizedMultiplierSmallerThanOneExp(a - b, p.output_multiplier,
                                                          p.output_shift) +
           p.output_offset;
  });
}

template <typename A>
void MulI8(const KernelContext& ctx) {
  // mul_common.cc CalculateOpDataMul: the product of the input scales in double.
  const float s1 = Scale(*ctx.inputs[0].value), s2 = Scale(*ctx.inputs[1].value);
  const float so = Scale(*ctx.outputs[0].value);
  const double real_multiplier =
      static_cast<double>(s1) * static_cast<double>(s2) / static_cast<double>(so);
  int32_t multiplier = 0;
  int shift = 0;
  QuantizeMultiplier(real_multiplier, &multiplier, &shift);
  const int32_t input1_offset = -ZeroPoint(*ctx.inputs[0].value);
  const int32_t input2_offset = -ZeroPoint(*ctx.inputs[1].value);
  const int32_t output_offset = ZeroPoint(*ctx.outputs[0].value);
  BinaryI8<A>(ctx, [=](int32_t x, int32_t y) {
    return output_offset + MultiplyByQuantizedMultiplier((input1_offset + x) * (input2_offset + y),
                                                         multiplier, shift);
  });
}

namespace {

template <typename A, typename OutT>
void SoftmaxRows(const KernelContext& ctx) {
  constexpr int kScaledDiffIntegerBits = 5;     // exp input: Q5.26
  constexpr int kAccumulationIntegerBits = 12;  // sum of exps: Q12.19
  // softmax_common.cc CalculateSoftmaxParams (int8 input).
  const double beta = static_cast<double>(static_cast<float>(ctx.node.attrs.Float("beta")));
  const double input_scale = static_cast<double>(Scale(*ctx.inputs[0].value));
  int32_t input_multiplier = 0;
  int input_left_shift = 0;
  PreprocessSoftmaxScaling(beta, input_scale, kScaledDiffIntegerBits, &input_multiplier,
                           &input_left_shift);
  const auto diff_min =
      static_cast<int32_t>(-1.0 * CalculateInputRadius(kScaledDiffIntegerBits, input_left_shift));

  const Shape& shape = ctx.inputs[0].shape();
  const int64_t depth = shape.empty() ? 1 : shape.back();
  const int64_t rows = ctx.inputs[0].elements() / std::max<int64_t>(1, depth);
  constexpr auto kOutMin = static_cast<int32_t>(std::numeric_limits<OutT>::min());
  constexpr auto kOutMax = static_cast<int32_t>(std::numeric_limits<OutT>::max());
  In<A, int8_t> x{ctx.inputs[0].ptr<int8_t>()};
  Out<A, OutT> y{ctx.outputs[0].ptr<OutT>()};
  for (int64_t i = 0; i < rows; ++i) {
    int8_t max_in_row = std::numeric_limits<int8_t>::min();
    for (int64_t c = 0; c < depth; ++c) max_in_row = std::max(max_in_row, x[i * depth + c]);

    int32_t sum_of_exps = 0;  // Q12.19
    for (int64_t c = 0; c < depth; ++c) {
      const int32_t input_diff = static_cast<int32_t>(x[i * depth + c]) - max_in_row;
      if (input_diff >= diff_min) {
        const int32_t scaled_diff = MultiplyByQuantizedMultiplierGreaterThanOne(
            input_diff, input_multiplier, input_left_shift);
        const int32_t exp_q0 = ExpOnNegativeValues(scaled_diff, kScaledDiffIntegerBits);
        sum_of_exps += SaturatingRoundingMultiplyByPOT(exp_q0, -kAccumulationIntegerBits);
      }
    }

    int num_bits_over_unit = 0;
    const int32_t shifted_scale =
        GetReciprocal(sum_of_exps, kAccumulationIntegerBits, &num_bits_over_unit);
    const int exponent = num_bits_over_unit + 31 - static_cast<int>(sizeof(OutT) * 8);

    for (int64_t c = 0; c < depth; ++c) {
      const int32_t input_diff = static_cast<int32_t>(x[i * depth + c]) - max_in_row;
      if (input_diff >= diff_min) {
        const int32_t scaled_diff = MultiplyByQuantizedMultiplierGreaterThanOne(
            input_diff, input_multiplier, input_left_shift);
        const int32_t exp_q0 = ExpOnNegativeValues(scaled_diff, kScaledDiffIntegerBits);
        const int32_t unsat =
            RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(shifted_scale, exp_q0), exponent);
        const int32_t shifted = unsat + kOutMin;
        y.Set(i * depth + c, static_cast<OutT>(std::max(std::min(shifted, kOutMax), kOutMin)));
      } else {
        y.Set(i * depth + c, static_cast<OutT>(kOutMin));
      }
    }
  }
}

}  // namespace

template <typename A>
void SoftmaxI8(const KernelContext& ctx) {
  if (ctx.outputs[0].value->dtype == DType::kI16) {
    SoftmaxRows<A, int16_t>(ctx);
  } else {
    SoftmaxRows<A, int8_t>(ctx);
  }
}

MF_INSTANTIATE_KERNEL(AddI8)
MF_INSTANTIATE_KERNEL(SubI8)
MF_INSTANTIATE_KERNEL(MulI8)
MF_INSTANTIATE_KERNEL(SoftmaxI8)

}  // namespace memfold
