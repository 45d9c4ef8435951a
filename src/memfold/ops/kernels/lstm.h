// UNIDIRECTIONAL_SEQUENCE_LSTM (TFLite builtin 44), as TensorFlow Lite Micro's
// unidirectional_sequence_lstm.cc and lstm_eval.h compute it: the standard (Keras) LSTM — no
// CIFG, peephole, projection or layer normalisation, exactly what TFLM accepts.
//
// Inputs keep TFLite's 24 positions (absent ones are not present): 0 input [batch, time, in]
// ([time, batch, in] when time_major), 1-4 input weights [state, in] of the input, forget, cell
// and output gates, 5-8 recurrent weights [state, state], 12-15 gate biases [state], 18 the
// hidden state and 19 the cell state (persistent, batch * state elements each, updated in
// place). Output 0: [batch, time, state] (or time-major), the hidden state after each step.
//
// Each step, per gate: scratch gate = FC(input rows) + FC(hidden) through scratch 3, then the
// gate's activation (sigmoid; the cell gate's is the node's `cell_activation`). forget (scratch
// 0), input (1) and cell (2) update the cell state: cell = forget * cell; scratch 1 = input *
// cell gate; cell += scratch 1, clipped to ±cell_clip. The output gate (scratch 1) then gives
// hidden = tanh(cell) (scratch 0) * output gate, copied to the output rows of the step.
// Time-major models step all batches at once; batch-major ones one batch row at a time.
//
// Types: float32 throughout; or int8 activations, int8 weights, int32 biases, int16 cell state
// (8x8->16); or int16 activations, int8 weights, int64 biases, int16 cell (16x8->16). Integer
// gates are Q3.12 before and Q0.15 after their activation; the cell state has a power-of-two
// scale. O(steps * state * (in + state)) per run, four scratch buffers of batch * state cell
// elements (TFLM's RequestScratchBufferInArena in Prepare).
#pragma once

#include <cstddef>
#include <cstdint>

#include "memfold/ops/kernels/kernel_context.h"

namespace memfold {

inline constexpr size_t kLstmInput = 0, kLstmInputWeights = 1, kLstmRecurrentWeights = 5,
                        kLstmBias = 12, kLstmHiddenState = 18, kLstmCellState = 19,
                        kLstmInputCount = 24;
// Gate g (0 input, 1 forget, 2 cell, 3 output) reads weights kLstmInputWeights + g,
// kLstmRecurrentWeights + g and bias kLstmBias + g.
inline constexpr int kLstmGates = 4;
// Positions TFLM's standard LSTM requires absent: peepholes (9-11), projection (16-17), layer
// norm coefficients (20-23).
inline constexpr size_t kLstmVariantInputs[] = {9, 10, 11, 16, 17, 20, 21, 22, 23};

struct LstmDims {
  int64_t batch, time, input, state;
  bool time_major;
  static LstmDims Of(bool time_major, ShapeView input, ShapeView input_weights) {
    return {time_major ? input[1] : input[0], time_major ? input[0] : input[1], input[2],
            input_weights[0], time_major};
  }
};

// The integer requantisation TFLM's Prepare computes (PrepareGateParametersInteger,
// CreateLstmCellStateInfo), as the op's prepared data: per gate the multiplier and shift of its
// input and recurrent fully connected layers, then of the three element-wise products, then the
// cell state's scale power and the quantised cell clip.
struct LstmQuant {
  int32_t input_fc[kLstmGates][2];
  int32_t recurrent_fc[kLstmGates][2];
  int32_t forget_cell_mul[2], input_mul[2], output_mul[2];
  int32_t cell_scale_power;
  int32_t cell_clip;
};
inline constexpr size_t kLstmQuantInts = sizeof(LstmQuant) / sizeof(int32_t);

template <typename A>
void LstmF32(const KernelContext& ctx);
// int8 or int16 activations (the input's type decides).
template <typename A>
void LstmInt(const KernelContext& ctx);

}  // namespace memfold
