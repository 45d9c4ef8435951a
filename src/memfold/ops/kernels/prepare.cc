#include "memfold/ops/kernels/prepare.h"

#include <cmath>

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
  if (ctx.inputs[0].dtype != DType::kI8) return {};
  return PerChannel(ctx, ctx.outputs[0].shape[3]);
}

std::vector<int32_t> PrepareFullyConnectedI8(const KernelContext& ctx) {
  if (ctx.inputs[0].dtype != DType::kI8) return {};
  const TensorArg& filter = ctx.inputs[1];
  if (filter.quant.per_channel()) return PerChannel(ctx, filter.shape[0]);
  const double input_product_scale = static_cast<double>(Scale(ctx.inputs[0]) * Scale(filter));
  return Quantized({input_product_scale / static_cast<double>(Scale(ctx.outputs[0]))});
}

std::vector<int32_t> PrepareLeakyReluI8(const KernelContext& ctx) {
  if (ctx.inputs[0].dtype != DType::kI8) return {};
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

std::vector<int64_t> MeanScratch(const Graph& graph, const Node& node) {
  const DType dtype = graph.value(node.inputs[0]).dtype;
  if (dtype != DType::kI8 && dtype != DType::kI16) return {};
  return {graph.value(node.outputs[0]).elements() * 4};
}

std::vector<int64_t> TransposeConvScratch(const Graph& graph, const Node& node) {
  if (graph.value(node.inputs[0]).dtype != DType::kI8) return {};
  return {graph.value(node.outputs[0]).elements() * 4};
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

}  // namespace memfold
