// GraphBuilder: a compact way to write reference models in C++. It creates inputs, constant
// weights with deterministic pseudo-random contents, and nodes through the op registry (so
// every node is validated and shape-inferred as it is added). The first error is kept and
// returned by Finish(); later calls become no-ops, so builders read as straight-line code.
//
// Weights: element k of the n-th weight is a uniform value in [-scale, scale) drawn from a
// counter-based generator (splitmix64 of the seed, n and k): identical on every machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"

namespace memfold {

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name, uint64_t seed = 1);

  ValueId Input(const std::string& name, Shape shape, DType dtype = DType::kF32);
  // A float32 constant whose values are uniform in [-scale, scale).
  ValueId Weight(const std::string& name, Shape shape, float scale);
  // A weight scaled for a layer with `fan_in` inputs (uniform He-style: sqrt(3 / fan_in)).
  ValueId LayerWeight(const std::string& name, Shape shape, int64_t fan_in);
  // A float32 constant with given contents: `values` holds one value per element, or a single
  // value for every element. Role kWeight for trainable parameters with a fixed start (norm
  // gamma = 1, beta = 0); kState for values the gradient pass leaves alone (running
  // statistics, positional encodings, masks, initial recurrent state).
  ValueId Constant(const std::string& name, Shape shape, std::vector<float> values, Role role);
  // An int32 constant (indices, for instance) with one value per element; role kWeight.
  ValueId IntConstant(const std::string& name, Shape shape, const std::vector<int32_t>& values);

  // Adds a node; returns its first output (kNoValue after an error).
  ValueId Op(const std::string& op, std::vector<ValueId> inputs, Attrs attrs = {},
             const std::string& name = "", const std::string& layer = "");

  const Value& value(ValueId id) const { return graph_.value(id); }
  const Shape& shape(ValueId id) const { return graph_.value(id).shape; }
  bool ok() const { return status_.ok(); }

  // Marks `outputs` as graph outputs, verifies the graph and returns it.
  Result<Graph> Finish(std::vector<ValueId> outputs);

 private:
  Graph graph_;
  Status status_;
  uint64_t seed_;
  uint64_t weights_made_ = 0;
};

// Attribute helpers for the common cases.
Attrs ConvAttrs(int64_t stride, const std::string& activation, const std::string& padding = "same");
Attrs PoolAttrs(int64_t filter_h, int64_t filter_w, int64_t stride, const std::string& padding);

}  // namespace memfold
