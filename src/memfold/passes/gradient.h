// The gradient pass: reverse-mode automatic differentiation over the IR, plus the optimizer
// update, turning a forward graph whose output is a scalar loss into one training step.
//
// Trainable parameters are the float32 weights (role kWeight) the loss depends on. The pass
// walks the forward schedule backwards, asks each node's registry row for its gradient
// builder, sums gradients of values read more than once, and adds one in-place optimizer
// update per parameter (its state, e.g. momentum, becomes an optimizer-state value), scheduled
// as soon as its gradient is ready (passes/update_schedule.h). Nodes
// whose results no gradient needs are removed afterwards. O(V + E) plus the builders.
#pragma once

#include <string>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"

namespace memfold {

struct TrainingConfig {
  std::string optimizer = "sgd_momentum";  // or "adam"
  double learning_rate = 0.01;
};

struct TrainingGraph {
  ValueId loss = kNoValue;
  std::vector<ValueId> params;  // trainable weights, in value order
  std::vector<ValueId> grads;   // dL/dparam, same order
  size_t forward_nodes = 0;     // schedule[0, forward_nodes) is the forward pass
  // The forward results the backward pass starts from when there are several (a joint graph
  // traced by PyTorch returns the model's outputs); empty = just the loss.
  std::vector<ValueId> forward_outputs;
  // The graph's inputs are held by the caller for the whole step (a framework's tensors, as
  // in a joint graph), so keeping them for the backward pass costs nothing.
  bool caller_holds_inputs = false;

  std::vector<ValueId> BackwardRoots() const {
    return forward_outputs.empty() ? std::vector<ValueId>{loss} : forward_outputs;
  }
};

// Preconditions: graph->outputs[0] is a float32 scalar (the loss). Errors name the op that
// has no gradient.
Result<TrainingGraph> BuildTrainingGraph(Graph* graph, const TrainingConfig& config = {});

}  // namespace memfold
