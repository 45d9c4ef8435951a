#include "memfold/ops/kernels/host/prepare.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "memfold/ops/kernels/int8_simd.h"
#include "memfold/ops/kernels/int_kernels.h"
#include "memfold/ops/kernels/kernel_util.h"
#include "memfold/ops/kernels/lstm.h"
#include "memfold/ops/kernels/quant_math.h"
#include "memfold/ops/kernels/svdf.h"

namespace memfold {
namespace {

// [multipliers..., shifts...] of the given real multipliers.
std::vector<int32_t> Quantized(const std::vector<double>& real) {
  std::vector<int32_t> out(2 * real.size());
  for (size_t c = 0; c < real.size(); ++c) {
    int shift = 0;
    QuantizeMultiplier(real[c], &out[c], &shift);
    out[real.size() + c] = shift;
  }
  return out;
}

std::vector<int32_t> PerChannel(const KernelContext& ctx, int64_t channels) {
  const double input_scale = static_cast<double>(Scale(ctx.inputs[0]));
  const double output_scale = static_cast<double>(Scale(ctx.outputs[0]));
  const std::span<const float> filter_scales = ctx.inputs[1].quant.scale;
  std::vector<double> real(static_cast<size_t>(channels));
  for (size_t c = 0; c < real.size(); ++c) {
    // A per-tensor filter scale is broadcast to every channel; the product is taken in double.
    const float scale = filter_scales.empty()       ? 1.0f
                        : filter_scales.size() == 1 ? filter_scales[0]
                                                    : filter_scales[c];
    real[c] = input_scale * static_cast<double>(scale) / output_scale;
  }
  return Quantized(real);
}

}  // namespace

std::vector<int32_t> PrepareConvI8(const KernelContext& ctx) {
  if (ctx.inputs[0].dtype != DType::kI8 && ctx.inputs[0].dtype != DType::kI16) return {};
  return PerChannel(ctx, ctx.outputs[0].shape[3]);
}

std::vector<int32_t> SimdMultipliers(const std::vector<int32_t>& quantized) {
  const size_t channels = quantized.size() / 2;
  if (!std::all_of(quantized.begin(), quantized.begin() + static_cast<std::ptrdiff_t>(channels),
                   HasPreparedMultiplier)) {
    return quantized;
  }
  std::vector<int32_t> records(channels * kPreparedMultiplierWords);
  for (size_t c = 0; c < channels; ++c) {
    PrepareMultiplier(quantized[c], quantized[channels + c],
                      records.data() + c * kPreparedMultiplierWords);
  }
  return records;
}

namespace {

// SimdMultipliers' records, then, for a node without a bias, as many zero biases as output
// channels: the SIMD kernels then start every sum from a bias without testing for one.
std::vector<int32_t> SimdPrepared(const KernelContext& ctx, const std::vector<int32_t>& quantized,
                                  int64_t out_channels) {
  std::vector<int32_t> prepared = SimdMultipliers(quantized);
  const bool records = prepared.size() != quantized.size();
  if (records && !HasBias(ctx))
    prepared.resize(prepared.size() + static_cast<size_t>(out_channels));
  return prepared;
}

}  // namespace

std::vector<int32_t> PrepareConv2DI8(const KernelContext& ctx) {
  const bool simd = ctx.inputs[0].dtype == DType::kI8 &&
                    Int8ConvIsSimd(ctx.inputs[0].shape[3], ctx.inputs[1].shape[3]);
  return simd ? SimdPrepared(ctx, PrepareConvI8(ctx), ctx.outputs[0].shape[3]) : PrepareConvI8(ctx);
}

std::vector<int32_t> PrepareDepthwiseI8(const KernelContext& ctx) {
  const bool simd = ctx.inputs[0].dtype == DType::kI8;
  return simd ? SimdPrepared(ctx, PrepareConvI8(ctx), ctx.outputs[0].shape[3]) : PrepareConvI8(ctx);
}

std::vector<int32_t> PrepareFullyConnectedInt(const KernelContext& ctx) {
  const DType dtype = ctx.inputs[0].dtype;
  if (dtype != DType::kI8 && dtype != DType::kI16) return {};
  const TensorArg& filter = ctx.inputs[1];
  const int64_t out_depth = filter.shape[0];
  const double input_product_scale = static_cast<double>(Scale(ctx.inputs[0]) * Scale(filter));
  const std::vector<int32_t> quantized =
      filter.quant.per_channel()
          ? PerChannel(ctx, out_depth)
          : Quantized({input_product_scale / static_cast<double>(Scale(ctx.outputs[0]))});
  return dtype == DType::kI8 ? SimdPrepared(ctx, quantized, out_depth) : quantized;
}

std::vector<int32_t> PrepareBatchMatMulQuantized(const KernelContext& ctx) {
  const DType dtype = ctx.inputs[0].dtype;
  if (dtype != DType::kI8 && dtype != DType::kI16) return {};
  // GetQuantizedConvolutionMultipler without a bias: the scales multiplied in float.
  const auto product = static_cast<double>(Scale(ctx.inputs[0]) * Scale(ctx.inputs[1]));
  return Quantized({product / static_cast<double>(Scale(ctx.outputs[0]))});
}

namespace {

// common.h LUTPopulateInt16<float>: `transform` over the int16 input range of (input_scale,
// input_zero_point) in 512 steps plus the last point, each sample corrected by half the error of
// linear interpolation at its step's midpoint, in float as TFLM computes it.
template <typename Transform>
void PopulateInt16Lut(float input_scale, int32_t input_zero_point, float output_scale,
                      Transform transform, int32_t* lut) {
  constexpr int kSteps = 512;
  const float input_min = input_scale * static_cast<float>(-32768 - input_zero_point);
  const float input_max = input_scale * static_cast<float>(32767 - input_zero_point);
  const float output_min = output_scale * -32768.0f, output_max = output_scale * 32767.0f;
  const float step = (input_max - input_min) / kSteps;
  const float half_step = step / 2;
  const float inverse = 65536.0f / (output_max - output_min);
  auto saturate = [](float v) { return std::min(std::max(v, -32768.0f), 32767.0f); };
  for (int i = 0; i < kSteps; ++i) {
    const float at = transform(input_min + static_cast<float>(i) * step);
    const float mid = transform(input_min + static_cast<float>(i) * step + half_step);
    const float next = transform(input_min + static_cast<float>(i + 1) * step);
    const float sample = std::round(at * inverse);
    const float interpolated = std::round((next * inverse + std::round(at * inverse)) / 2);
    const float error = interpolated - std::round(mid * inverse);
    lut[i] = static_cast<int16_t>(saturate(sample - std::round(error / 2)));
  }
  lut[kSteps] = static_cast<int16_t>(saturate(std::round(transform(input_max) * inverse)));
}

}  // namespace

std::vector<int32_t> PrepareSoftmaxI16(const KernelContext& ctx) {
  if (ctx.inputs[0].dtype != DType::kI16) return {};
  std::vector<int32_t> out(2 + 2 * kSoftmaxI16LutSize);
  int shift = 0;
  // Differences scaled so that [-65535, 0] stands for [-10.0, 0.0].
  QuantizeMultiplier(
      static_cast<double>(Scale(ctx.inputs[0])) * ctx.attrs.Float("beta") / (10.0 / 65535.0),
      &out[0], &shift);
  out[1] = shift;
  constexpr int32_t kRange = 65535;
  PopulateInt16Lut(
      10.0f / kRange, 32767, 2.0f / kRange, [](float v) { return std::exp(v); }, out.data() + 2);
  PopulateInt16Lut(
      1.0f / kRange, -32768, 2.0f / kRange, [](float v) { return 1.0f / (1.0f + v); },
      out.data() + 2 + kSoftmaxI16LutSize);
  return out;
}

std::vector<int32_t> PrepareLeakyReluInt(const KernelContext& ctx) {
  if (ctx.inputs[0].dtype != DType::kI8 && ctx.inputs[0].dtype != DType::kI16) return {};
  const float in_scale = Scale(ctx.inputs[0]), out_scale = Scale(ctx.outputs[0]);
  const auto alpha = static_cast<float>(ctx.attrs.Float("alpha"));
  std::vector<int32_t> out(4);
  int shift = 0;
  QuantizeMultiplier(static_cast<double>(in_scale / out_scale), &out[0], &shift);
  out[1] = shift;
  QuantizeMultiplier(static_cast<double>(in_scale * alpha / out_scale), &out[2], &shift);
  out[3] = shift;
  return out;
}

std::vector<int32_t> PrepareCumsumI8(const KernelContext& ctx) {
  if (ctx.inputs[0].dtype != DType::kI8) return {};
  const double twice_input_scale = 2 * static_cast<double>(Scale(ctx.inputs[0]));
  const double real_input = static_cast<double>(Scale(ctx.inputs[0])) / twice_input_scale;
  const double real_output =
      twice_input_scale / ((1 << 20) * static_cast<double>(Scale(ctx.outputs[0])));
  std::vector<int32_t> out(4);
  int shift = 0;
  // A zero output scale (a broken file) gives no finite multiplier: output 0 then, defined.
  QuantizeMultiplierSmallerThanOneExp(std::isfinite(real_input) ? real_input : 0.0, &out[0],
                                      &shift);
  out[1] = shift;
  QuantizeMultiplierSmallerThanOneExp(std::isfinite(real_output) ? real_output : 0.0, &out[2],
                                      &shift);
  out[3] = shift;
  return out;
}

std::vector<int64_t> ReduceScratch(const Graph& graph, const Node& node) {
  const auto rank = static_cast<int64_t>(graph.value(node.inputs[0]).shape.size());
  const auto axes = static_cast<int64_t>(node.attrs.Ints("axes").size());
  return {rank * 4, axes * 4};
}

std::vector<int64_t> MeanScratch(const Graph& graph, const Node& node) {
  std::vector<int64_t> scratch = ReduceScratch(graph, node);
  const DType dtype = graph.value(node.inputs[0]).dtype;
  if (dtype == DType::kI8 || dtype == DType::kI16)
    scratch.insert(scratch.begin(), graph.value(node.outputs[0]).elements() * 4);
  return scratch;
}

std::vector<int64_t> TransposeConvScratch(const Graph& graph, const Node& node) {
  const int64_t outputs = graph.value(node.outputs[0]).elements();
  switch (graph.value(node.inputs[0]).dtype) {
    case DType::kI8:
      return {outputs * 4};
    case DType::kI16:
      return {outputs * 8};
    default:
      return {};
  }
}

std::vector<int64_t> MirrorPadScratch(const Graph& graph, const Node& node) {
  const auto rank = static_cast<int64_t>(graph.value(node.inputs[0]).shape.size());
  return {rank * 4, rank * 4};
}

std::vector<int64_t> SvdfScratch(const Graph& graph, const Node& node) {
  const Value& input = graph.value(node.inputs[kSvdfInput]);
  const SvdfDims d = SvdfDims::Of(node.attrs.Int("rank"), input.shape,
                                  graph.value(node.inputs[kSvdfWeightsFeature]).shape,
                                  graph.value(node.inputs[kSvdfWeightsTime]).shape);
  if (input.dtype == DType::kF32) return {d.batch * d.filters * 4};
  return {d.batch * d.filters * 4, d.batch * d.units * 4};
}

std::optional<int64_t> SvdfOverlap(const Graph& graph, const Node& node, int input) {
  if (input != static_cast<int>(kSvdfInput) || node.inputs.empty() ||
      node.inputs[kSvdfInput] == kNoValue) {
    return std::nullopt;
  }
  return graph.value(node.outputs[0]).bytes();
}

namespace {

// The multiplier and shift of `real`.
void QuantizeInto(double real, int32_t (&out)[2]) {
  int shift = 0;
  QuantizeMultiplier(real, &out[0], &shift);
  out[1] = shift;
}

// tflite::CheckedLog2: log2(x) rounded to *rounded (in float, as TFLM computes it); whether x is
// a power of two within 1e-3.
bool CheckedLog2(float x, int32_t* rounded) {
  const float log2 = std::log(x) * (1.0f / std::log(2.0f));
  *rounded = static_cast<int32_t>(std::round(log2));
  return std::abs(log2 - std::round(log2)) < 1e-3f;
}

// The shared Prepare of LOGISTIC and TANH; `max_pot_shift` bounds the left shifts (0, or 0 and 1) a
// power-of-two int16 input scale may give for the table to take it unscaled.
std::vector<int32_t> PrepareTableActivation(const KernelContext& ctx, int max_pot_shift) {
  const TensorArg& input = ctx.inputs[0];
  if (input.dtype == DType::kI8) {
    int shift = 0;
    const double q = std::frexp(static_cast<double>(Scale(input)) * double{1 << 27}, &shift);
    // q < 1, but its rounding can reach 2^31 (TFLM would overflow there): kept in range.
    const auto multiplier =
        static_cast<int32_t>(std::min(std::round(q * double(int64_t{1} << 31)), double{INT32_MAX}));
    return {multiplier, shift, CalculateInputRadius(4, shift, 31), ZeroPoint(input)};
  }
  if (input.dtype != DType::kI16) return {};
  const float scale = Scale(input);
  int32_t log2 = 0;
  const bool pot = CheckedLog2(scale, &log2);
  int32_t shift = 12 + log2;
  if (pot && shift >= 0 && shift <= max_pot_shift) return {0, shift, 0, 0};
  double multiplier = static_cast<double>(scale) * 4096.0 * 3.0;
  shift = 0;
  while (multiplier <= 32767.0 / 2.0 && shift <= 30) {
    ++shift;
    multiplier *= 2.0;
  }
  // TFLM asserts the multiplier stays within 15 bits; an absurd input scale is capped there so
  // the table's arithmetic stays defined.
  return {static_cast<int32_t>(std::min(multiplier, 32767.0)), shift, 0, 0};
}

}  // namespace

std::vector<int32_t> PrepareSigmoidInt(const KernelContext& ctx) {
  return PrepareTableActivation(ctx, 0);
}
std::vector<int32_t> PrepareTanhInt(const KernelContext& ctx) {
  return PrepareTableActivation(ctx, 1);
}

namespace {

// The limits of an int8 or int16 tensor type.
std::pair<int32_t, int32_t> IntLimits(DType dtype) {
  return dtype == DType::kI8 ? std::pair{-128, 127} : std::pair{-32768, 32767};
}

}  // namespace

std::vector<int32_t> PrepareReluInt(const KernelContext& ctx) {
  const TensorArg& in = ctx.inputs[0];
  const TensorArg& out = ctx.outputs[0];
  if (in.dtype != DType::kI8 && in.dtype != DType::kI16) return {};
  int32_t multiplier = 0;
  int shift = 0;
  QuantizeMultiplier(static_cast<double>(Scale(in)) / static_cast<double>(Scale(out)), &multiplier,
                     &shift);
  const auto [lo, hi] = IntLimits(in.dtype);
  return {multiplier, shift, std::max(lo, ZeroPoint(out)), hi, ZeroPoint(in), ZeroPoint(out)};
}

std::vector<int32_t> PrepareRelu6Int(const KernelContext& ctx) {
  const TensorArg& in = ctx.inputs[0];
  if (in.dtype != DType::kI8 && in.dtype != DType::kI16) return {};
  const auto [lo, hi] = IntLimits(in.dtype);
  const auto six = static_cast<int32_t>(std::round(6.0f / Scale(in))) + ZeroPoint(in);
  return {ZeroPoint(in), std::min(hi, std::max(lo, six))};
}

std::vector<int32_t> PrepareCompareI8(const KernelContext& ctx) {
  if (ctx.inputs[0].dtype != DType::kI8) return {};
  std::vector<int32_t> out(6);
  for (size_t k = 0; k < 2; ++k) {
    int shift = 0;
    QuantizeMultiplierSmallerThanOneExp(static_cast<double>(Scale(ctx.inputs[k])), &out[2 * k],
                                        &shift);
    out[2 * k + 1] = shift;
    out[4 + k] = -ZeroPoint(ctx.inputs[k]);
  }
  return out;
}

namespace {

// DownScaleInt32ToInt16Multiplier: the 31-bit multiplier rounded to its top 15 bits.
int32_t DownScaleToInt16(int32_t multiplier) {
  constexpr int32_t kRounding = 1 << 15;
  if (multiplier >= INT32_MAX - kRounding) return INT16_MAX;
  return (multiplier + kRounding) >> 16;
}

}  // namespace

std::vector<int32_t> PrepareHardSwishI8(const KernelContext& ctx) {
  if (ctx.inputs[0].dtype != DType::kI8) return {};
  const float hires_input_scale = (1.0f / 128.0f) * Scale(ctx.inputs[0]);
  const float output_multiplier = hires_input_scale / Scale(ctx.outputs[0]);
  const float reluish_multiplier = hires_input_scale / (3.0f / 32768.0f);
  std::vector<int32_t> out = {ZeroPoint(ctx.inputs[0]), ZeroPoint(ctx.outputs[0]), 0, 0, 0, 0};
  int32_t fixed = 0;
  int exponent = 0;
  QuantizeMultiplier(static_cast<double>(output_multiplier), &fixed, &exponent);
  out[2] = DownScaleToInt16(fixed);
  out[3] = std::min(exponent, 0);  // TFLM refuses a positive exponent; kept defined here
  QuantizeMultiplier(static_cast<double>(reluish_multiplier), &fixed, &exponent);
  out[4] = DownScaleToInt16(fixed);
  out[5] = std::clamp(exponent, -31, 15);
  return out;
}

std::vector<int32_t> PrepareLstm(const KernelContext& ctx) {
  const TensorArg& input = ctx.inputs[kLstmInput];
  if (input.dtype == DType::kF32) return {};
  constexpr float kGateInputScale = 0.000244140625f;      // 2^-12: Q3.12
  constexpr float kGateOutputScale = 0.000030517578125f;  // 2^-15: Q0.15
  const float hidden_scale = Scale(ctx.inputs[kLstmHiddenState]);
  const float cell_scale = Scale(ctx.inputs[kLstmCellState]);
  LstmQuant q{};
  for (int g = 0; g < kLstmGates; ++g) {
    const auto gate = static_cast<size_t>(g);
    // GetQuantizedConvolutionMultipler: the product of the scales in float, then double.
    const float in_product = Scale(input) * Scale(ctx.inputs[kLstmInputWeights + gate]);
    const float rec_product = hidden_scale * Scale(ctx.inputs[kLstmRecurrentWeights + gate]);
    QuantizeInto(static_cast<double>(in_product) / static_cast<double>(kGateInputScale),
                 q.input_fc[g]);
    QuantizeInto(static_cast<double>(rec_product) / static_cast<double>(kGateInputScale),
                 q.recurrent_fc[g]);
  }
  auto mul = [](float a, float b, float out, int32_t(&into)[2]) {
    QuantizeInto(static_cast<double>(a) * static_cast<double>(b) / static_cast<double>(out), into);
  };
  mul(kGateOutputScale, cell_scale, cell_scale, q.forget_cell_mul);
  mul(kGateOutputScale, kGateOutputScale, cell_scale, q.input_mul);
  mul(kGateOutputScale, kGateOutputScale, hidden_scale, q.output_mul);
  CheckedLog2(cell_scale, &q.cell_scale_power);  // TFLM ignores whether it is a power of two
  const double clip = ctx.attrs.Float("cell_clip");
  q.cell_clip = static_cast<int16_t>(std::min(
      std::max(static_cast<double>(static_cast<float>(clip)) / static_cast<double>(cell_scale),
               -32768.0),
      32767.0));
  std::vector<int32_t> out(kLstmQuantInts);
  std::memcpy(out.data(), &q, sizeof(q));
  return out;
}

std::vector<int64_t> LstmScratch(const Graph& graph, const Node& node) {
  const LstmDims d =
      LstmDims::Of(node.attrs.Int("time_major") != 0, graph.value(node.inputs[kLstmInput]).shape,
                   graph.value(node.inputs[kLstmInputWeights]).shape);
  const int64_t bytes =
      d.batch * d.state * ElementBytes(graph.value(node.inputs[kLstmCellState]).dtype);
  return {bytes, bytes, bytes, bytes};
}

std::optional<int64_t> LstmOverlap(const Graph& graph, const Node& node, int input) {
  if (input != static_cast<int>(kLstmInput) || node.inputs.size() <= kLstmCellState) {
    return std::nullopt;
  }
  const Value& in = graph.value(node.inputs[kLstmInput]);
  const Value& out = graph.value(node.outputs[0]);
  const LstmDims d = LstmDims::Of(node.attrs.Int("time_major") != 0, in.shape,
                                  graph.value(node.inputs[kLstmInputWeights]).shape);
  const int64_t rows = d.time_major ? d.batch : 1;
  const int64_t steps = d.batch * d.time / rows;
  const int64_t growth =
      std::max<int64_t>(0, d.state * ElementBytes(out.dtype) - d.input * ElementBytes(in.dtype));
  return out.bytes() - std::max<int64_t>(steps - 1, 0) * rows * growth;
}

}  // namespace memfold
