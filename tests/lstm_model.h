// A recurrent keyword-spotting model as converters write it for TFLM: 49 frames of 10 features
// through a UNIDIRECTIONAL_SEQUENCE_LSTM of 32 units (hidden and cell state variable tensors),
// the last frame's hidden state taken with SLICE and RESHAPE, a 4-class FULLY_CONNECTED and
// SOFTMAX. Built directly as a quantised graph (int8 activations, int8 weights, int32 biases,
// int16 cell state with a power-of-two scale, as TFLite's converter quantises an LSTM) or in
// float32, and written with memfold's TFLite writer. Header-only, for test targets.
#pragma once

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "memfold/base/splitmix.h"
#include "memfold/io/tflite_graph_writer.h"
#include "memfold/ops/kernels/lstm.h"
#include "memfold/ops/registry.h"

namespace memfold::testing {

struct LstmModelSpec {
  DType dtype = DType::kI8;  // kI8 or kF32
  int64_t frames = 49, features = 10, units = 32, classes = 4;
  bool time_major = false;
};

namespace lstm_model_detail {

inline Quantization PerTensor(float scale, int64_t zero_point = 0) {
  Quantization q;
  q.scale = {scale};
  q.zero_point = {zero_point};
  return q;
}

// Builds values one by one; weights are uniform in [-range, range) from a fixed seed.
class Builder {
 public:
  explicit Builder(DType dtype) : dtype_(dtype) {}
  Graph graph;

  ValueId Input(const Shape& shape, float scale) {
    Value v{.name = "features", .dtype = dtype_, .shape = shape, .role = Role::kInput};
    if (dtype_ != DType::kF32) v.quant = PerTensor(scale);
    const ValueId id = graph.AddValue(std::move(v));
    graph.inputs.push_back(id);
    return id;
  }
  // Weights: int8 per-tensor symmetric (scale max |w| / 127) or float32.
  ValueId Weights(const std::string& name, const Shape& shape, float range, float* scale) {
    std::vector<float> w(static_cast<size_t>(NumElements(shape)));
    float peak = 0;
    for (size_t k = 0; k < w.size(); ++k) {
      w[k] = range * (2.0f * Uniform() - 1.0f);
      peak = std::max(peak, std::fabs(w[k]));
    }
    *scale = peak / 127.0f;
    if (dtype_ == DType::kF32) return Constant(name, shape, DType::kF32, Raw(w), {}, Role::kWeight);
    std::vector<int8_t> q(w.size());
    for (size_t k = 0; k < w.size(); ++k) q[k] = static_cast<int8_t>(std::lround(w[k] / *scale));
    return Constant(name, shape, DType::kI8, Raw(q), PerTensor(*scale), Role::kWeight);
  }
  // Bias: int32 of scale input_scale * weight_scale, or float32.
  ValueId Bias(const std::string& name, int64_t n, float value, float scale) {
    std::vector<float> b(static_cast<size_t>(n), value);
    if (dtype_ == DType::kF32) return Constant(name, {n}, DType::kF32, Raw(b), {}, Role::kWeight);
    std::vector<int32_t> q(b.size());
    for (size_t k = 0; k < b.size(); ++k) q[k] = static_cast<int32_t>(std::lround(b[k] / scale));
    return Constant(name, {n}, DType::kI32, Raw(q), PerTensor(scale), Role::kWeight);
  }
  // A state tensor (a TFLite variable tensor: no data; runs start it at its zero point).
  ValueId State(const std::string& name, const Shape& shape, DType dtype, float scale) {
    Value v{.name = name, .dtype = dtype, .shape = shape, .role = Role::kState};
    if (dtype != DType::kF32) v.quant = PerTensor(scale);
    return graph.AddValue(std::move(v));
  }
  ValueId Op(const std::string& op, std::vector<ValueId> inputs, Attrs attrs,
             const std::string& name, std::optional<Quantization> quant) {
    Result<std::vector<ValueId>> out = AddOp(&graph, op, std::move(inputs), std::move(attrs), name);
    if (!out.ok()) {
      status = out.status();
      return kNoValue;
    }
    if (dtype_ != DType::kF32) graph.value(out->front()).quant = std::move(quant);
    return out->front();
  }
  Status status;

 private:
  template <typename T>
  static Bytes Raw(const std::vector<T>& v) {
    Bytes b(v.size() * sizeof(T));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  }
  ValueId Constant(const std::string& name, const Shape& shape, DType dtype, Bytes data,
                   std::optional<Quantization> quant, Role role) {
    Value v{.name = name, .dtype = dtype, .shape = shape, .role = role, .quant = std::move(quant)};
    v.data = std::make_shared<Bytes>(std::move(data));
    return graph.AddValue(std::move(v));
  }
  float Uniform() { return static_cast<float>(SplitMix64(++draws_) >> 40) / 16777216.0f; }
  DType dtype_;
  uint64_t draws_ = 1000;
};

}  // namespace lstm_model_detail

inline Result<Graph> LstmKeywordGraph(const LstmModelSpec& spec = {}) {
  lstm_model_detail::Builder b(spec.dtype);
  constexpr float kActivationScale = 1.0f / 128.0f;  // [-1, 1)
  constexpr float kCellScale = 1.0f / 2048.0f;       // 2^-11: [-16, 16)
  const Shape in_shape =
      spec.time_major ? Shape{spec.frames, 1, spec.features} : Shape{1, spec.frames, spec.features};
  const ValueId x = b.Input(in_shape, kActivationScale);
  std::vector<ValueId> in(kLstmInputCount, kNoValue);
  in[kLstmInput] = x;
  const char* gate_names[kLstmGates] = {"input", "forget", "cell", "output"};
  const float gate_bias[kLstmGates] = {0.0f, 1.0f, 0.0f, 0.0f};  // Keras' unit forget bias
  for (size_t g = 0; g < kLstmGates; ++g) {
    const std::string gate = gate_names[g];
    float w_scale = 0, r_scale = 0;
    in[kLstmInputWeights + g] =
        b.Weights("lstm/" + gate + "/kernel", {spec.units, spec.features}, 0.5f, &w_scale);
    in[kLstmRecurrentWeights + g] =
        b.Weights("lstm/" + gate + "/recurrent", {spec.units, spec.units}, 0.3f, &r_scale);
    in[kLstmBias + g] =
        b.Bias("lstm/" + gate + "/bias", spec.units, gate_bias[g], kActivationScale * w_scale);
  }
  in[kLstmHiddenState] =
      b.State("lstm/hidden_state", {1, spec.units}, spec.dtype, kActivationScale);
  in[kLstmCellState] = b.State("lstm/cell_state", {1, spec.units},
                               spec.dtype == DType::kF32 ? DType::kF32 : DType::kI16, kCellScale);
  Attrs lstm;
  lstm.Set("cell_clip", 10.0);
  lstm.Set("time_major", int64_t{spec.time_major ? 1 : 0});
  const auto activation_quant = lstm_model_detail::PerTensor(kActivationScale);
  const ValueId seq = b.Op("unidirectional_sequence_lstm", in, lstm, "lstm", activation_quant);
  // The last frame's hidden state, [1, units]: SLICE and RESHAPE.
  Attrs last;
  const int64_t t = spec.frames - 1;
  last.Set("begin",
           spec.time_major ? std::vector<int64_t>{t, 0, 0} : std::vector<int64_t>{0, t, 0});
  last.Set("size", std::vector<int64_t>{1, 1, spec.units});
  const ValueId frame = b.Op("slice", {seq}, last, "last_frame", activation_quant);
  Attrs flat;
  flat.Set("shape", std::vector<int64_t>{1, spec.units});
  const ValueId h = b.Op("reshape", {frame}, flat, "last_hidden", activation_quant);
  float fc_scale = 0;
  const ValueId w = b.Weights("classifier/kernel", {spec.classes, spec.units}, 0.4f, &fc_scale);
  const ValueId bias = b.Bias("classifier/bias", spec.classes, 0.1f, kActivationScale * fc_scale);
  const ValueId logits = b.Op("fully_connected", {h, w, bias}, {}, "classifier",
                              lstm_model_detail::PerTensor(1.0f / 16.0f, -8));
  const ValueId probabilities =
      b.Op("softmax", {logits}, {}, "softmax", lstm_model_detail::PerTensor(1.0f / 256.0f, -128));
  MF_RETURN_IF_ERROR(b.status);
  b.graph.outputs = {probabilities};
  b.graph.name = spec.dtype == DType::kF32 ? "lstm_kws_f32" : "lstm_kws_i8";
  return std::move(b.graph);
}

inline Result<Bytes> LstmKeywordFile(const LstmModelSpec& spec = {}) {
  MF_ASSIGN_OR_RETURN(Graph g, LstmKeywordGraph(spec));
  return GraphToTflite(g);
}

}  // namespace memfold::testing
