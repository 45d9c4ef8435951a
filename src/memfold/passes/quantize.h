// Post-training full-integer quantisation: float32 inference graph -> int8 graph, the way
// TensorFlow Lite's converter does it for the hosted int8 models, so that TFLM's int8 kernels
// (and memfold's, which reproduce them bit for bit) can run the result.
//
// 1. Calibrate: run the float graph on calibration inputs with the registry's float kernels
//    (one buffer per live value, freed after its last reader) and record every computed
//    value's min and max.
// 2. Quantise:
//    - activations and graph inputs/outputs: int8, per-tensor asymmetric; the range is widened
//      to contain 0, scale = (max - min) / 255, zero point = round(-128 - min / scale) clamped
//      (TFLite GetAsymmetricQuantizationParams), so real 0 is exactly representable;
//    - values that TFLite requires to share quantisation (the inputs and output of concat,
//      max/avg pool and reshape; memfold's int8 kernels for these copy or average the stored
//      bytes without requantising) form one group quantised with the union of the members'
//      ranges. For concat that is the output's own range, which TFLite's converter propagates
//      back to the operands;
//    - softmax outputs: scale 1/256, zero point -128 (TFLM's requirement);
//    - conv2d / depthwise_conv2d filters: int8, per-channel symmetric in [-127, 127] along the
//      output channel (dimension 0, resp. 3), zero point 0; fully-connected weights: int8,
//      per-tensor symmetric; biases: int32, per channel, scale = input scale x filter scale;
//    - other constant operands (add, sub, mul, concat): int8 per-tensor asymmetric from their
//      own values (or their group's quantisation), as TFLite quantises constant activations.
//    The graph keeps its nodes, schedule, names and layer tags; only types and constants change.
//
// Preconditions: a float32 inference graph (every input f32) whose ops all have an int8 form:
// conv2d, depthwise_conv2d, fully_connected, max_pool2d, avg_pool2d, concat, reshape, mean,
// softmax, add, sub, mul. Anything else is an error naming the node.
// Complexity: calibration costs one float inference per input set; quantisation is
// O(V + E + weight elements).
#pragma once

#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"

namespace memfold {

// Observed real range of one value; empty (min > max) until something is observed.
struct ValueRange {
  float min = 1.0f;
  float max = -1.0f;
  bool empty() const { return min > max; }
  void Include(float x);
  void Include(const ValueRange& other);
};

// One entry per value id of the graph.
using Calibration = std::vector<ValueRange>;

// The calibration input sets for a float graph: the contract's default input
// (element k = sin(0.01 k)), a slower phase-shifted wave and a deterministic uniform noise in
// [-1, 1), one Bytes per graph input in each set.
std::vector<std::vector<Bytes>> CalibrationInputs(const Graph& float_graph);

// Runs `float_graph` once per input set and records the range of every input and computed value.
// Errors: a non-f32 graph input, wrong input sizes, an op without a float kernel, or a value that
// becomes NaN or infinite.
Result<Calibration> Calibrate(const Graph& float_graph,
                              const std::vector<std::vector<Bytes>>& input_sets);

// Builds the int8 graph from a float graph and its calibration.
Result<Graph> QuantizeInt8(const Graph& float_graph, const Calibration& calibration);

// Calibrate on CalibrationInputs, then QuantizeInt8.
Result<Graph> QuantizePostTraining(const Graph& float_graph);

// TFLite's int8 activation quantisation of the real range [min, max] (see above).
Quantization ActivationQuantization(ValueRange range);

}  // namespace memfold
