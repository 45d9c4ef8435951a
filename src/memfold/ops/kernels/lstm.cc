#include "memfold/ops/kernels/lstm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/kernel_util.h"
#include "memfold/ops/kernels/quant_math.h"

namespace memfold {
namespace {

constexpr int kInputGate = 0, kForgetGate = 1, kCellGate = 2, kOutputGate = 3;

LstmDims Dims(const KernelContext& ctx) {
  return LstmDims::Of(ctx.attrs.Int("time_major") != 0, ctx.inputs[kLstmInput].shape,
                      ctx.inputs[kLstmInputWeights].shape);
}

// One invocation of TFLM's LstmStep: `rows` batch rows at these element offsets.
struct Step {
  int64_t rows;
  int64_t input_offset, output_offset, state_offset;
};

// The steps in TFLM's order (EvalLstm / LstmStepManager): time-major models step every batch
// row of one time at once; batch-major ones walk each batch row through all times.
template <typename F>
void ForEachStep(const LstmDims& d, F step) {
  if (d.time_major) {
    for (int64_t t = 0; t < d.time; ++t) {
      step(Step{d.batch, t * d.batch * d.input, t * d.batch * d.state, 0});
    }
    return;
  }
  for (int64_t b = 0; b < d.batch; ++b) {
    for (int64_t t = 0; t < d.time; ++t) {
      const int64_t k = b * d.time + t;
      step(Step{1, k * d.input, k * d.state, b * d.state});
    }
  }
}

enum class GateActivation { kSigmoid, kTanh };

// The float arithmetic of lstm_eval.cc: reference FullyConnected, Logistic, Tanh and Mul with
// no activation clamp.
template <typename A>
struct FloatArith {
  using Act = float;
  using Cell = float;
  const KernelContext& ctx;

  // out[r, u] = sum_k x[offset + r * depth + k] * weights[u, k] (+ bias[u]), TFLM's order.
  template <typename Src>
  void Fc(size_t weights, int64_t bias, Src x, int64_t offset, int64_t rows, int64_t depth,
          int64_t units, Out<A, float> out) const {
    In<A, float> w{ctx.inputs[weights].ptr<float>()};
    const bool has_bias = bias >= 0 && ctx.inputs[static_cast<size_t>(bias)];
    In<A, float> b{has_bias ? ctx.inputs[static_cast<size_t>(bias)].ptr<float>() : nullptr};
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t u = 0; u < units; ++u) {
        float total = 0.0f;
        for (int64_t k = 0; k < depth; ++k) total += x[offset + r * depth + k] * w[u * depth + k];
        out.Set(r * units + u, total + (has_bias ? b[u] : 0.0f));
      }
    }
  }
  float Add(float a, float b) const { return a + b; }
  float Activate(float v, GateActivation f) const {
    return f == GateActivation::kSigmoid ? TfliteLogistic(v) : std::tanh(v);
  }
  float TanhCell(float v) const { return std::tanh(v); }
  float MulForget(float gate, float cell) const { return gate * cell; }
  float MulInput(float gate, float cell_gate) const { return gate * cell_gate; }
  float MulOutput(float tanh_cell, float gate) const { return tanh_cell * gate; }
  float Clip(float v) const {
    const auto clip = static_cast<float>(ctx.attrs.Float("cell_clip"));
    return std::max(std::min(clip, v), -clip);
  }
};

// int32 or int64 accumulation; int32 wraps like TFLM's arithmetic on its targets instead of
// being undefined on overflow.
inline int32_t Accumulate(int32_t acc, int32_t term) {
  return static_cast<int32_t>(static_cast<uint32_t>(acc) + static_cast<uint32_t>(term));
}
inline int64_t Accumulate(int64_t acc, int32_t term) { return acc + term; }

// reference_integer_ops::MulElementwise on one element.
inline int32_t MulElement(int32_t a, int32_t b, const int32_t (&multiplier)[2], int32_t offset,
                          int32_t lo, int32_t hi) {
  const int32_t scaled =
      offset + MultiplyByQuantizedMultiplier(a * b, multiplier[0], multiplier[1]);
  return std::min(hi, std::max(lo, scaled));
}

// The integer arithmetic of lstm_eval.cc (8x8->16 and 16x8->16): gates in int16, Q3.12 before
// their activation and Q0.15 after; X the activation type, Bias the gate bias type.
template <typename A, typename X, typename Bias>
struct IntArith {
  using Act = X;
  using Cell = int16_t;
  static constexpr int32_t kCellMin = std::numeric_limits<int16_t>::min();
  static constexpr int32_t kCellMax = std::numeric_limits<int16_t>::max();
  const KernelContext& ctx;
  LstmQuant q;

  template <typename Src>
  void Fc(size_t weights, int64_t bias, Src x, int64_t offset, int64_t rows, int64_t depth,
          int64_t units, Out<A, int16_t> out) const {
    const bool recurrent = weights >= kLstmRecurrentWeights;
    const int gate =
        static_cast<int>(weights - (recurrent ? kLstmRecurrentWeights : kLstmInputWeights));
    const int32_t(&scale)[2] = recurrent ? q.recurrent_fc[gate] : q.input_fc[gate];
    const int32_t x_offset = -ZeroPoint(ctx.inputs[recurrent ? kLstmHiddenState : kLstmInput]);
    const int32_t w_offset = -ZeroPoint(ctx.inputs[weights]);
    In<A, int8_t> w{ctx.inputs[weights].ptr<int8_t>()};
    const bool has_bias = bias >= 0 && ctx.inputs[static_cast<size_t>(bias)];
    In<A, Bias> b{has_bias ? ctx.inputs[static_cast<size_t>(bias)].ptr<Bias>() : nullptr};
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t u = 0; u < units; ++u) {
        Bias acc = 0;
        for (int64_t k = 0; k < depth; ++k) {
          const int32_t weight = int32_t{w[u * depth + k]} + w_offset;
          acc = Accumulate(acc, weight * (int32_t{x[offset + r * depth + k]} + x_offset));
        }
        if (has_bias) acc += b[u];
        const int32_t scaled = MultiplyByQuantizedMultiplier(acc, scale[0], scale[1]);
        out.Set(r * units + u,
                static_cast<int16_t>(std::min(kCellMax, std::max(kCellMin, scaled))));
      }
    }
  }
  int16_t Add(int16_t a, int16_t b) const {
    return static_cast<int16_t>(std::min(kCellMax, std::max(kCellMin, int32_t{a} + int32_t{b})));
  }
  // Sigmoid as lstm_eval.cc calls it (multiplier 0, shift 0: Q3.12 input), tanh with the
  // cell-state scale power -12 (the same input format).
  int16_t Activate(int16_t v, GateActivation f) const {
    return f == GateActivation::kSigmoid ? SigmoidInt16(v, 0, 0) : TanhOfPower(v, -12);
  }
  int16_t TanhCell(int16_t v) const { return TanhOfPower(v, q.cell_scale_power); }
  int16_t MulForget(int16_t gate, int16_t cell) const {
    return static_cast<int16_t>(MulElement(gate, cell, q.forget_cell_mul, 0, kCellMin, kCellMax));
  }
  int16_t MulInput(int16_t gate, int16_t cell_gate) const {
    return static_cast<int16_t>(MulElement(gate, cell_gate, q.input_mul, 0, kCellMin, kCellMax));
  }
  X MulOutput(int16_t tanh_cell, int16_t gate) const {
    return static_cast<X>(MulElement(tanh_cell, gate, q.output_mul,
                                     ZeroPoint(ctx.inputs[kLstmHiddenState]),
                                     std::numeric_limits<X>::min(), std::numeric_limits<X>::max()));
  }
  int16_t Clip(int16_t v) const {
    const auto clip = static_cast<int16_t>(q.cell_clip);
    return std::max(std::min(clip, v), static_cast<int16_t>(-clip));
  }

  // lstm_internal::Tanh: the cell state in Q(-power) rescaled to the LUT's Q3.12 input.
  static int16_t TanhOfPower(int16_t v, int32_t power) {
    const int32_t left_shift = 15 + power - 3;
    return left_shift < 0 ? TanhInt16(v, 3, -left_shift) : TanhInt16(v, 0, left_shift);
  }
};

// EvalLstm: every step's gates, cell and hidden state update, and output rows.
template <typename A, typename Arith>
void RunLstm(const KernelContext& ctx, const Arith& ar) {
  using X = typename Arith::Act;
  using C = typename Arith::Cell;
  const LstmDims d = Dims(ctx);
  const GateActivation cell_activation = ctx.attrs.Str("cell_activation") == "sigmoid"
                                             ? GateActivation::kSigmoid
                                             : GateActivation::kTanh;
  const bool clip = ctx.attrs.Float("cell_clip") > 0.0;
  In<A, X> input{ctx.inputs[kLstmInput].ptr<X>()};
  Out<A, X> hidden{ctx.inputs[kLstmHiddenState].ptr<X>()};
  Out<A, C> cell{ctx.inputs[kLstmCellState].ptr<C>()};
  Out<A, X> output{OutputOf<A, X>(ctx.outputs[0])};
  const Out<A, C> buffer[4] = {{reinterpret_cast<C*>(ctx.scratch[0])},
                               {reinterpret_cast<C*>(ctx.scratch[1])},
                               {reinterpret_cast<C*>(ctx.scratch[2])},
                               {reinterpret_cast<C*>(ctx.scratch[3])}};
  ForEachStep(d, [&](const Step& s) {
    const int64_t n = s.rows * d.state;
    const int64_t so = s.state_offset;
    // CalculateLstmGate: input FC with the gate's bias, recurrent FC into buffer 3, sum,
    // activation, all in `out`.
    auto gate = [&](int g, const Out<A, C>& out, GateActivation f) {
      ar.Fc(kLstmInputWeights + static_cast<size_t>(g), static_cast<int64_t>(kLstmBias) + g, input,
            s.input_offset, s.rows, d.input, d.state, out);
      ar.Fc(kLstmRecurrentWeights + static_cast<size_t>(g), -1, hidden, so, s.rows, d.state,
            d.state, buffer[3]);
      for (int64_t i = 0; i < n; ++i) out.Set(i, ar.Add(out[i], buffer[3][i]));
      for (int64_t i = 0; i < n; ++i) out.Set(i, ar.Activate(out[i], f));
    };
    gate(kForgetGate, buffer[0], GateActivation::kSigmoid);
    gate(kInputGate, buffer[1], GateActivation::kSigmoid);
    gate(kCellGate, buffer[2], cell_activation);
    // UpdateLstmCell.
    for (int64_t i = 0; i < n; ++i) cell.Set(so + i, ar.MulForget(buffer[0][i], cell[so + i]));
    for (int64_t i = 0; i < n; ++i) buffer[1].Set(i, ar.MulInput(buffer[1][i], buffer[2][i]));
    for (int64_t i = 0; i < n; ++i) cell.Set(so + i, ar.Add(cell[so + i], buffer[1][i]));
    for (int64_t i = 0; clip && i < n; ++i) cell.Set(so + i, ar.Clip(cell[so + i]));
    // UpdateLstmHidden, then the step's output rows.
    gate(kOutputGate, buffer[1], GateActivation::kSigmoid);
    for (int64_t i = 0; i < n; ++i) buffer[0].Set(i, ar.TanhCell(cell[so + i]));
    for (int64_t i = 0; i < n; ++i) hidden.Set(so + i, ar.MulOutput(buffer[0][i], buffer[1][i]));
    for (int64_t i = 0; i < n; ++i) output.Set(s.output_offset + i, hidden[so + i]);
  });
}

}  // namespace

template <typename A>
void LstmF32(const KernelContext& ctx) {
  RunLstm<A>(ctx, FloatArith<A>{ctx});
}

template <typename A>
void LstmInt(const KernelContext& ctx) {
  LstmQuant q{};
  std::memcpy(&q, ctx.prepared.data(), sizeof(q));
  if (ctx.inputs[kLstmInput].dtype == DType::kI16) {
    RunLstm<A>(ctx, IntArith<A, int16_t, int64_t>{ctx, q});
  } else {
    RunLstm<A>(ctx, IntArith<A, int8_t, int32_t>{ctx, q});
  }
}

MF_INSTANTIATE_KERNEL(LstmF32)
MF_INSTANTIATE_KERNEL(LstmInt)

}  // namespace memfold
