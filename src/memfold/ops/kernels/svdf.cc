#include "memfold/ops/kernels/svdf.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/quant_math.h"
#include "memfold/ops/kernels/window_geometry.h"

namespace memfold {
namespace {

constexpr size_t kInput = kSvdfInput, kWeightsFeature = kSvdfWeightsFeature,
                 kWeightsTime = kSvdfWeightsTime, kBias = 3, kState = 4;

SvdfDims Dims(const KernelContext& ctx) {
  return SvdfDims::Of(ctx.attrs.Int("rank"), ctx.inputs[kInput].shape,
                      ctx.inputs[kWeightsFeature].shape, ctx.inputs[kWeightsTime].shape);
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

// The loop nests both kernels share. The caller's functions do the arithmetic and the reads and
// writes of each step, so each kernel keeps the access order of svdf_common.cc.

// Feature matmul into the newest state column: state[b, r, memory - 1] = entry(b, r), where
// entry does the dot product of feature row r with input row b. Batch outer, filter inner.
template <typename A, typename T, typename Entry>
void WriteNewestColumn(const SvdfDims& d, Out<A, T> state, Entry entry) {
  int64_t column = d.memory - 1;
  for (int64_t b = 0; b < d.batch; ++b) {
    for (int64_t r = 0; r < d.filters; ++r) {
      state.Set(column, entry(b, r));
      column += d.memory;
    }
  }
}

// Time: every filter's memory row dotted with its time weights, accumulated in `products`:
// products[p] is zeroed, then accumulate(p, t, s) adds time[t] * state[s] for each memory slot.
template <typename A, typename P, typename Accumulate>
void TimeProducts(const SvdfDims& d, Out<A, P> products, Accumulate accumulate) {
  for (int64_t b = 0; b < d.batch; ++b) {
    int64_t t = 0;
    int64_t s = b * d.memory * d.filters;
    for (int64_t i = 0; i < d.filters; ++i) {
      const int64_t p = b * d.filters + i;
      products.Set(p, P{});
      for (int64_t j = 0; j < d.memory; ++j) accumulate(p, t++, s++);
    }
  }
}

// Bias (or zero) into `sums`, then add(o, p) adds product p into sum o: each unit's `rank`
// products in turn.
template <typename A, typename S, typename Add>
void RankSums(const KernelContext& ctx, const SvdfDims& d, Out<A, S> sums, Add add) {
  if (ctx.inputs[kBias]) {
    In<A, S> bias{ctx.inputs[kBias].ptr<S>()};
    for (int64_t b = 0; b < d.batch; ++b) {
      for (int64_t j = 0; j < d.units; ++j) sums.Set(b * d.units + j, bias[j]);
    }
  } else {
    for (int64_t i = 0; i < d.batch * d.units; ++i) sums.Set(i, S{});
  }
  for (int64_t b = 0; b < d.batch; ++b) {
    int64_t p = b * d.filters;
    for (int64_t i = 0; i < d.units; ++i) {
      for (int64_t j = 0; j < d.rank; ++j) add(b * d.units + i, p++);
    }
  }
}

// EvalIntegerSvdfReference<T>, T = the state / time-weight type (int8 or int16).
template <typename A, typename T>
void SvdfInteger(const KernelContext& ctx) {
  const TensorArg& input_v = ctx.inputs[kInput];
  const TensorArg& feature_v = ctx.inputs[kWeightsFeature];
  const TensorArg& time_v = ctx.inputs[kWeightsTime];
  const TensorArg& state_v = ctx.inputs[kState];
  const TensorArg& output_v = ctx.outputs[0];
  const SvdfDims d = Dims(ctx);

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
  Out<A, int8_t> output{OutputOf<A, int8_t>(ctx.outputs[0])};
  Out<A, int32_t> products{reinterpret_cast<int32_t*>(ctx.scratch[0])};
  Out<A, int32_t> sums{reinterpret_cast<int32_t*>(ctx.scratch[1])};

  ShiftStateLeft(state, d.batch * d.filters * d.memory);
  // TFLM clamps the feature dot product to the state type, then adds the state zero point and
  // narrows (wrapping) into the state.
  constexpr int32_t kStateMin = std::numeric_limits<T>::min();
  constexpr int32_t kStateMax = std::numeric_limits<T>::max();
  WriteNewestColumn(d, state, [&](int64_t b, int64_t r) {
    int32_t dot = 0;
    for (int64_t c = 0; c < d.input_size; ++c) {
      const int32_t weight = feature[r * d.input_size + c];
      dot = WrappingAdd(dot, WrappingMul(weight, int32_t{input[b * d.input_size + c]} - input_zp));
    }
    dot = MultiplyByQuantizedMultiplier(dot, multiplier_1, shift_1);
    dot = std::min(std::max(kStateMin, dot), kStateMax);
    return static_cast<T>(WrappingAdd(state_zp, dot));
  });
  TimeProducts(d, products, [&](int64_t p, int64_t t, int64_t s) {
    const int32_t weight = time[t];
    const int32_t value = int32_t{state[s]} - state_zp;
    products.Set(p, WrappingAdd(products[p], WrappingMul(weight, value)));
  });
  RankSums(ctx, d, sums,
           [&](int64_t o, int64_t p) { sums.Set(o, WrappingAdd(sums[o], products[p])); });

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
  if (ctx.inputs[kWeightsTime].dtype == DType::kI16) {
    SvdfInteger<A, int16_t>(ctx);
  } else {
    SvdfInteger<A, int8_t>(ctx);
  }
}

template <typename A>
void SvdfF32(const KernelContext& ctx) {
  const SvdfDims d = Dims(ctx);
  const ActivationRange act = KernelActivation(ctx.attrs);
  const bool activate = ctx.attrs.StrOr("activation", "none") != "none";
  In<A, float> input{ctx.inputs[kInput].ptr<float>()};
  In<A, float> feature{ctx.inputs[kWeightsFeature].ptr<float>()};
  In<A, float> time{ctx.inputs[kWeightsTime].ptr<float>()};
  Out<A, float> state{ctx.inputs[kState].ptr<float>()};
  Out<A, float> output{OutputOf<A, float>(ctx.outputs[0])};
  Out<A, float> products{reinterpret_cast<float*>(ctx.scratch[0])};

  ShiftStateLeft(state, d.batch * d.filters * d.memory);
  WriteNewestColumn(d, state, [&](int64_t b, int64_t r) {
    float dot = 0.0f;
    for (int64_t c = 0; c < d.input_size; ++c) {
      dot += feature[r * d.input_size + c] * input[b * d.input_size + c];
    }
    return dot;
  });
  TimeProducts(d, products, [&](int64_t p, int64_t t, int64_t s) {
    const float weight = time[t];
    products.Set(p, products[p] + weight * state[s]);
  });
  // The output holds the sums.
  RankSums(ctx, d, output, [&](int64_t o, int64_t p) { output.Set(o, output[o] + products[p]); });
  // ActivationValFloat: max(lo, min(x, hi)) in that operand order (NaN becomes lo).
  for (int64_t i = 0; activate && i < d.batch * d.units; ++i) {
    output.Set(i, std::max(act.min, std::min(output[i], act.max)));
  }
}

MF_INSTANTIATE_KERNEL(SvdfI8)
MF_INSTANTIATE_KERNEL(SvdfF32)

}  // namespace memfold
