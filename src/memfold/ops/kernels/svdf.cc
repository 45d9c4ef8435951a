#include "memfold/ops/kernels/svdf.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/quant_math.h"
#include "memfold/ops/window.h"

namespace memfold {
namespace {

constexpr size_t kInput = 0, kWeightsFeature = 1, kWeightsTime = 2, kBias = 3, kState = 4;

struct SvdfDims {
  int64_t batch, input_size, filters, units, memory, rank;
};

SvdfDims Dims(const Node& node, const Value& input, const Value& weights_feature,
              const Value& weights_time) {
  SvdfDims d{};
  d.rank = node.attrs.Int("rank");
  d.batch = input.shape[0];
  d.input_size = input.shape[1];
  d.filters = weights_feature.shape[0];
  d.units = d.filters / d.rank;
  d.memory = weights_time.shape[1];
  return d;
}

int32_t WrappingAdd(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

int32_t WrappingMul(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
}

// Shifts the whole state left by one element (the oldest entry of each filter drops out; the
// first entry of every following filter row moves into the last slot of the row before, which
// the feature matmul then overwrites).
template <typename A, typename T>
void ShiftStateLeft(Out<A, T> state, int64_t total) {
  for (int64_t i = 0; i + 1 < total; ++i) state.Set(i, state[i + 1]);
}

// EvalIntegerSvdfReference<T>, T = the state / time-weight type (int8 or int16).
template <typename A, typename T>
void SvdfInteger(const KernelContext& ctx) {
  const Value& input_v = *ctx.inputs[kInput].value;
  const Value& feature_v = *ctx.inputs[kWeightsFeature].value;
  const Value& time_v = *ctx.inputs[kWeightsTime].value;
  const Value& state_v = *ctx.inputs[kState].value;
  const Value& output_v = *ctx.outputs[0].value;
  const SvdfDims d = Dims(ctx.node, input_v, feature_v, time_v);

  // Prepare: the effective scales are products and quotients of float scales, in float.
  const float scale_1 = Scale(input_v) * Scale(feature_v) / Scale(state_v);
  const float scale_2 = Scale(state_v) * Scale(time_v) / Scale(output_v);
  int32_t multiplier_1 = 0, multiplier_2 = 0;
  int shift_1 = 0, shift_2 = 0;
  QuantizeMultiplier(static_cast<double>(scale_1), &multiplier_1, &shift_1);
  QuantizeMultiplier(static_cast<double>(scale_2), &multiplier_2, &shift_2);
  const int32_t input_zp = ZeroPoint(input_v);
  const int32_t state_zp = ZeroPoint(state_v);
  const int32_t output_zp = ZeroPoint(output_v);

  In<A, int8_t> input{ctx.inputs[kInput].ptr<int8_t>()};
  In<A, int8_t> feature{ctx.inputs[kWeightsFeature].ptr<int8_t>()};
  In<A, T> time{ctx.inputs[kWeightsTime].ptr<T>()};
  Out<A, T> state{ctx.inputs[kState].ptr<T>()};
  Out<A, int8_t> output{ctx.outputs[0].ptr<int8_t>()};
  Out<A, int32_t> products{reinterpret_cast<int32_t*>(ctx.scratch[0])};
  Out<A, int32_t> sums{reinterpret_cast<int32_t*>(ctx.scratch[1])};

  ShiftStateLeft(state, d.batch * d.filters * d.memory);

  // Feature matmul into the newest state column. TFLM clamps to the state type, then adds the
  // state zero point and narrows (wrapping) into the state.
  constexpr int32_t kStateMin = std::numeric_limits<T>::min();
  constexpr int32_t kStateMax = std::numeric_limits<T>::max();
  int64_t column = d.memory - 1;
  for (int64_t b = 0; b < d.batch; ++b) {
    int64_t w = 0;
    for (int64_t r = 0; r < d.filters; ++r) {
      int32_t dot = 0;
      for (int64_t c = 0; c < d.input_size; ++c) {
        const int32_t weight = feature[w++];
        dot = WrappingAdd(dot, WrappingMul(weight, int32_t{input[b * d.input_size + c]} - input_zp));
      }
      dot = MultiplyByQuantizedMultiplier(dot, multiplier_1, shift_1);
      dot = std::min(std::max(kStateMin, dot), kStateMax);
      state.Set(column, static_cast<T>(WrappingAdd(state_zp, dot)));
      column += d.memory;
    }
  }

  // Time: every filter's memory row dotted with its time weights, accumulated in scratch.
  for (int64_t b = 0; b < d.batch; ++b) {
    int64_t p = b * d.filters;
    int64_t t = 0;
    int64_t s = b * d.memory * d.filters;
    for (int64_t i = 0; i < d.filters; ++i, ++p) {
      products.Set(p, 0);
      for (int64_t j = 0; j < d.memory; ++j) {
        const int32_t weight = time[t++];
        const int32_t value = int32_t{state[s++]} - state_zp;
        products.Set(p, WrappingAdd(products[p], WrappingMul(weight, value)));
      }
    }
  }

  // Bias (or zero), then the rank sums.
  if (ctx.inputs[kBias]) {
    In<A, int32_t> bias{ctx.inputs[kBias].ptr<int32_t>()};
    for (int64_t b = 0; b < d.batch; ++b) {
      for (int64_t j = 0; j < d.units; ++j) sums.Set(b * d.units + j, bias[j]);
    }
  } else {
    for (int64_t i = 0; i < d.batch * d.units; ++i) sums.Set(i, 0);
  }
  for (int64_t b = 0; b < d.batch; ++b) {
    int64_t p = b * d.filters;
    for (int64_t i = 0; i < d.units; ++i) {
      const int64_t o = b * d.units + i;
      for (int64_t j = 0; j < d.rank; ++j) sums.Set(o, WrappingAdd(sums[o], products[p++]));
    }
  }

  // Rescale to the int8 output.
  for (int64_t i = 0; i < d.batch * d.units; ++i) {
    const int32_t scaled = MultiplyByQuantizedMultiplier(sums[i], multiplier_2, shift_2);
    const int32_t value = WrappingAdd(scaled, output_zp);
    output.Set(i, static_cast<int8_t>(std::min(std::max(int32_t{-128}, value), int32_t{127})));
  }
}

}  // namespace

template <typename A>
void SvdfI8(const KernelContext& ctx) {
  if (ctx.inputs[kWeightsTime].value->dtype == DType::kI16) {
    SvdfInteger<A, int16_t>(ctx);
  } else {
    SvdfInteger<A, int8_t>(ctx);
  }
}

template <typename A>
void SvdfF32(const KernelContext& ctx) {
  const SvdfDims d = Dims(ctx.node, *ctx.inputs[kInput].value, *ctx.inputs[kWeightsFeature].value,
                          *ctx.inputs[kWeightsTime].value);
  const Result<ActivationRange> act = ParseActivation(ctx.node.attrs);  // checked by inference
  const bool activate = ctx.node.attrs.Str("activation") != "none" && act.ok();
  In<A, float> input{ctx.inputs[kInput].ptr<float>()};
  In<A, float> feature{ctx.inputs[kWeightsFeature].ptr<float>()};
  In<A, float> time{ctx.inputs[kWeightsTime].ptr<float>()};
  Out<A, float> state{ctx.inputs[kState].ptr<float>()};
  Out<A, float> output{ctx.outputs[0].ptr<float>()};
  Out<A, float> products{reinterpret_cast<float*>(ctx.scratch[0])};

  ShiftStateLeft(state, d.batch * d.filters * d.memory);

  int64_t column = d.memory - 1;
  for (int64_t b = 0; b < d.batch; ++b) {
    int64_t w = 0;
    for (int64_t r = 0; r < d.filters; ++r) {
      float dot = 0.0f;
      for (int64_t c = 0; c < d.input_size; ++c) dot += feature[w++] * input[b * d.input_size + c];
      state.Set(column, dot);
      column += d.memory;
    }
  }

  for (int64_t b = 0; b < d.batch; ++b) {
    int64_t p = b * d.filters;
    int64_t t = 0;
    int64_t s = b * d.memory * d.filters;
    for (int64_t i = 0; i < d.filters; ++i, ++p) {
      products.Set(p, 0.0f);
      for (int64_t j = 0; j < d.memory; ++j) {
        const float weight = time[t++];
        products.Set(p, products[p] + weight * state[s++]);
      }
    }
  }

  if (ctx.inputs[kBias]) {
    In<A, float> bias{ctx.inputs[kBias].ptr<float>()};
    for (int64_t b = 0; b < d.batch; ++b) {
      for (int64_t j = 0; j < d.units; ++j) output.Set(b * d.units + j, bias[j]);
    }
  } else {
    for (int64_t i = 0; i < d.batch * d.units; ++i) output.Set(i, 0.0f);
  }
  for (int64_t b = 0; b < d.batch; ++b) {
    int64_t p = b * d.filters;
    for (int64_t i = 0; i < d.units; ++i) {
      const int64_t o = b * d.units + i;
      for (int64_t j = 0; j < d.rank; ++j) output.Set(o, output[o] + products[p++]);
    }
  }
  // ActivationValFloat: max(lo, min(x, hi)) in that operand order (NaN becomes lo).
  for (int64_t i = 0; activate && i < d.batch * d.units; ++i) {
    output.Set(i, std::max(act->min, std::min(output[i], act->max)));
  }
}

std::vector<int64_t> SvdfScratch(const Graph& graph, const Node& node) {
  const Value& input = graph.value(node.inputs[kInput]);
  const Value& weights_feature = graph.value(node.inputs[kWeightsFeature]);
  const Value& weights_time = graph.value(node.inputs[kWeightsTime]);
  const SvdfDims d = Dims(node, input, weights_feature, weights_time);
  if (input.dtype == DType::kF32) return {d.batch * d.filters * 4};
  return {d.batch * d.filters * 4, d.batch * d.units * 4};
}

std::optional<int64_t> SvdfOverlap(const Graph& graph, const Node& node, int input) {
  if (input != static_cast<int>(kInput) || node.inputs.empty() || node.inputs[kInput] == kNoValue) {
    return std::nullopt;
  }
  return graph.value(node.outputs[0]).bytes();
}

template void SvdfI8<Direct>(const KernelContext&);
template void SvdfF32<Direct>(const KernelContext&);
template void SvdfI8<Traced>(const KernelContext&);
template void SvdfF32<Traced>(const KernelContext&);

}  // namespace memfold
