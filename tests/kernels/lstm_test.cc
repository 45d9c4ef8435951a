// UNIDIRECTIONAL_SEQUENCE_LSTM against TensorFlow Lite Micro: the kernel-test vectors of
// unidirectional_sequence_lstm_test.cc and testdata/lstm_test_data.cc (2 batches, 3 steps, 2
// inputs, 2 units; float32, int8 and int16 activations, compared after dequantisation with
// TFLM's tolerances), the int16 sigmoid/tanh tables at known points, and the operand checks
// TFLM's Prepare makes.
#include "memfold/ops/kernels/lstm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "memfold/ops/kernels/quant_math.h"
#include "tests/kernels/kernel_test_util.h"

namespace memfold {
namespace {

using Floats = std::vector<float>;

// lstm_test_data.cc, Create2x3x2X2FloatNodeContents: per gate (input, forget, cell, output) the
// input weights, recurrent weights and bias.
struct GateData {
  Floats weights, recurrent, bias;
};
const GateData kGates[4] = {
    {{10, 10, 20, 20}, {10, 10, 20, 20}, {-1, -2}},        // input: remembers
    {{-10, -10, -20, -20}, {-10, -10, -20, -20}, {1, 2}},  // forget: forgets
    {{1, 1, 1, 1}, {1, 1, 1, 1}, {0, 0}},                  // cell
    {{1, 1, 1, 1}, {1, 1, 1, 1}, {0, 0}},                  // output
};
// Get2X2LstmEvalCheckData.
const Floats kInput = {0.2f,   0.3f,  0.2f,  0.3f,  0.2f,  0.3f,
                       -0.98f, 0.62f, 0.01f, 0.99f, 0.49f, -0.32f};
const Floats kExpectedOutput = {0.26455893f, 0.26870455f, 0.47935803f,     0.47937014f,
                                0.58013272f, 0.58013278f, -1.41184672e-3f, -1.43329117e-5f,
                                0.46887168f, 0.46891281f, 0.50054074f,     0.50054148f};
const Floats kExpectedHidden = {0.58013272f, 0.58013278f, 0.50054074f, 0.50054148f};
const Floats kExpectedCell = {0.89740515f, 0.8974053f, 0.80327607f, 0.80327785f};

// Quantisation of one tensor (Get2X2Int8/Int16LstmQuantizationSettings).
struct Q {
  double scale;
  int zero_point;
};
struct Settings {
  DType activation, bias;
  Q input, hidden, cell;
  Q gate_weights[4], gate_recurrent[4], gate_bias[4];
};
// The gates' weight scales are the same in both settings: input and forget gates 0.1575 (their
// weights reach ±20), cell and output gates 0.007874 (±1); the biases differ.
constexpr Q kBigWeights = {0.15748031496062992, 0}, kUnitWeights = {0.007874015748031496, 0};
const Settings kInt8 = {DType::kI8,
                        DType::kI32,
                        {0.00784313725490196, 0},
                        {0.004705882165580988, -21},
                        {0.00024414062, 0},
                        {kBigWeights, kBigWeights, kUnitWeights, kUnitWeights},
                        {kBigWeights, kBigWeights, kUnitWeights, kUnitWeights},
                        {{0.0012351397251814111, 0},
                         {0.0012351397251814111, 0},
                         {6.175698625907056e-5, 0},
                         {6.175698625907056e-5, 0}}};
const Settings kInt16 = {DType::kI16,
                         DType::kI64,
                         {3.0518044e-5, 0},
                         {2.1362956633198035e-05, 0},
                         {0.00024414062, 0},
                         {kBigWeights, kBigWeights, kUnitWeights, kUnitWeights},
                         {kBigWeights, kBigWeights, kUnitWeights, kUnitWeights},
                         {{4.8059911474468205e-06, 0},
                          {4.8059911474468205e-06, 0},
                          {2.40299557372341e-07, 0},
                          {2.40299557372341e-07, 0}}};

// TFLM's test Quantize: round(x / scale) + zero point, clamped to the type.
template <typename T>
Bytes Quantized(const Floats& values, Q q) {
  std::vector<T> out;
  for (float v : values) {
    const double r = std::round(v / static_cast<float>(q.scale)) + q.zero_point;
    out.push_back(
        static_cast<T>(std::clamp<double>(r, static_cast<double>(std::numeric_limits<T>::min()),
                                          static_cast<double>(std::numeric_limits<T>::max()))));
  }
  return ToBytes(out);
}
Bytes QuantizedAs(DType dtype, const Floats& values, Q q) {
  switch (dtype) {
    case DType::kI8:
      return Quantized<int8_t>(values, q);
    case DType::kI16:
      return Quantized<int16_t>(values, q);
    case DType::kI32:
      return Quantized<int32_t>(values, q);
    default:
      return Quantized<int64_t>(values, q);
  }
}
Floats Dequantized(DType dtype, const Bytes& bytes, Q q) {
  Floats out;
  auto push = [&](auto values) {
    for (auto v : values) out.push_back(static_cast<float>((v - q.zero_point) * q.scale));
  };
  if (dtype == DType::kI8) push(FromBytes<int8_t>(bytes));
  if (dtype == DType::kI16) push(FromBytes<int16_t>(bytes));
  return out;
}

// Copies the final hidden and cell states out of a run.
class StateCapture : public RunMonitor {
 public:
  StateCapture(const Graph& graph, ValueId hidden_state, ValueId cell_state)
      : graph_(graph), hidden_(hidden_state), cell_(cell_state) {}
  Status Finished(const std::vector<std::byte*>& where) override {
    hidden = Copy(hidden_, where);
    cell = Copy(cell_, where);
    return Status::Ok();
  }
  Bytes hidden, cell;

 private:
  Bytes Copy(ValueId v, const std::vector<std::byte*>& where) const {
    const std::byte* p = where[static_cast<size_t>(v)];
    return Bytes(p, p + graph_.value(v).bytes());
  }
  const Graph& graph_;
  ValueId hidden_, cell_;
};

struct LstmRun {
  Bytes output, hidden, cell;
};

// The 2x3x2x2 LSTM of the TFLM test (cell clip 6, batch-major), float32 when `s` is null.
LstmRun RunTflmCase(const Settings* s) {
  TestNet net;
  auto quant = [](Q v) { return Quant({static_cast<float>(v.scale)}, v.zero_point); };
  const DType act = s ? s->activation : DType::kF32;
  std::vector<ValueId> in(kLstmInputCount, kNoValue);
  in[kLstmInput] =
      s ? net.AddInput({2, 3, 2}, act, QuantizedAs(act, kInput, s->input), quant(s->input))
        : net.AddInput({2, 3, 2}, act, ToBytes(kInput));
  for (size_t g = 0; g < 4; ++g) {
    const GateData& d = kGates[g];
    if (s) {
      in[kLstmInputWeights + g] =
          net.AddConstant({2, 2}, DType::kI8, Quantized<int8_t>(d.weights, s->gate_weights[g]),
                          quant(s->gate_weights[g]));
      in[kLstmRecurrentWeights + g] =
          net.AddConstant({2, 2}, DType::kI8, Quantized<int8_t>(d.recurrent, s->gate_recurrent[g]),
                          quant(s->gate_recurrent[g]));
      in[kLstmBias + g] = net.AddConstant(
          {2}, s->bias, QuantizedAs(s->bias, d.bias, s->gate_bias[g]), quant(s->gate_bias[g]));
    } else {
      in[kLstmInputWeights + g] = net.AddConstant({2, 2}, DType::kF32, ToBytes(d.weights));
      in[kLstmRecurrentWeights + g] = net.AddConstant({2, 2}, DType::kF32, ToBytes(d.recurrent));
      in[kLstmBias + g] = net.AddConstant({2}, DType::kF32, ToBytes(d.bias));
    }
  }
  const Floats zeros(4, 0.0f);
  in[kLstmHiddenState] =
      s ? net.AddConstant({2, 2}, act, QuantizedAs(act, zeros, s->hidden), quant(s->hidden))
        : net.AddConstant({2, 2}, DType::kF32, ToBytes(zeros));
  in[kLstmCellState] =
      s ? net.AddConstant({2, 2}, DType::kI16, Quantized<int16_t>(zeros, s->cell), quant(s->cell))
        : net.AddConstant({2, 2}, DType::kF32, ToBytes(zeros));
  for (size_t k : {kLstmHiddenState, kLstmCellState}) net.graph().value(in[k]).role = Role::kState;
  const ValueId out = net.AddNode("unidirectional_sequence_lstm", in,
                                  MakeAttrs({{"cell_clip", 6.0}, {"time_major", int64_t{0}}}));
  if (s) net.SetQuant(out, Quant({static_cast<float>(s->hidden.scale)}, s->hidden.zero_point));
  net.graph().outputs = {out};
  StateCapture capture(net.graph(), in[kLstmHiddenState], in[kLstmCellState]);
  ExecOptions options;
  options.monitor = &capture;
  const std::vector<Bytes> feeds = {s ? QuantizedAs(act, kInput, s->input) : ToBytes(kInput)};
  Result<RunOutputs> run = RunUnplanned(net.graph(), feeds, options);
  EXPECT_TRUE(run.ok()) << run.status().message();
  if (!run.ok()) return {};
  return {run->outputs.front(), capture.hidden, capture.cell};
}

void ExpectNear(const Floats& got, const Floats& expected, float tolerance) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], expected[k], tolerance) << k;
}

// TestUnidirectionalLSTMFloat: tolerance 1e-6.
TEST(TflmGoldenLstm, Float) {
  const LstmRun run = RunTflmCase(nullptr);
  ExpectNear(FromBytes<float>(run.output), kExpectedOutput, 1e-6f);
  ExpectNear(FromBytes<float>(run.hidden), kExpectedHidden, 1e-6f);
  ExpectNear(FromBytes<float>(run.cell), kExpectedCell, 1e-6f);
}

// TestUnidirectionalLSTMInt8: hidden state and output within 1e-2, cell state within 1e-2.
TEST(TflmGoldenLstm, Int8) {
  const LstmRun run = RunTflmCase(&kInt8);
  ExpectNear(Dequantized(DType::kI8, run.output, kInt8.hidden), kExpectedOutput, 1e-2f);
  ExpectNear(Dequantized(DType::kI8, run.hidden, kInt8.hidden), kExpectedHidden, 1e-2f);
  ExpectNear(Dequantized(DType::kI16, run.cell, kInt8.cell), kExpectedCell, 1e-2f);
}

// TestUnidirectionalLSTMInt16: hidden state and output within 1e-3, cell state within 1e-2.
TEST(TflmGoldenLstm, Int16) {
  const LstmRun run = RunTflmCase(&kInt16);
  ExpectNear(Dequantized(DType::kI16, run.output, kInt16.hidden), kExpectedOutput, 1e-3f);
  ExpectNear(Dequantized(DType::kI16, run.hidden, kInt16.hidden), kExpectedHidden, 1e-3f);
  ExpectNear(Dequantized(DType::kI16, run.cell, kInt16.cell), kExpectedCell, 1e-2f);
}

// The int16 sigmoid and tanh (Q3.12 in, Q0.15 out) at points where TFLM's table arithmetic is
// easy to follow by hand: 0; the ends of the input range (sigmoid(±8) = 0.99966 / 0.00034 of
// 32768 = 32757 / 11, still inside the table; tanh's table saturates to 0xFFFF << 8, whose
// negative branch rounds down to -32767); and, inside, sigmoid(-x) = 1 - sigmoid(x) to the last
// bit and tanh within 8 units of the true value.
TEST(TflmGoldenLstm, Int16SigmoidAndTanhTables) {
  EXPECT_EQ(SigmoidInt16(0, 0, 0), 16384);  // 0.5 in Q0.15
  EXPECT_EQ(TanhInt16(0, 0, 0), 0);
  EXPECT_EQ(SigmoidInt16(32767, 0, 0), 32757);
  EXPECT_EQ(SigmoidInt16(-32768, 0, 0), 11);
  EXPECT_EQ(TanhInt16(32767, 0, 0), 32767);
  EXPECT_EQ(TanhInt16(-32768, 0, 0), -32767);
  for (int x : {1, 100, 4096, 12345}) {
    EXPECT_NEAR(
        SigmoidInt16(static_cast<int16_t>(x), 0, 0) + SigmoidInt16(static_cast<int16_t>(-x), 0, 0),
        32768, 1)
        << x;
    const double expected = std::tanh(x / 4096.0) * 32768.0;
    EXPECT_NEAR(TanhInt16(static_cast<int16_t>(x), 0, 0), expected, 8) << x;
  }
}

}  // namespace
}  // namespace memfold
