// Runs training steps: forward, backward and optimizer update of a training graph (made by
// the gradient pass, planned by passes/training_plan.h), inside one arena laid out by a plan,
// with persistent weights and optimizer state kept in a Session across steps. Every step also
// runs on a second, unplanned session and the two must agree bit for bit (loss and parameter
// gradients), as inference runs do. O(steps * kernel work).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "memfold/exec/executor.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {

// The contract's default inputs, with integer inputs folded into the range their readers
// accept: token ids below the embedding table's rows, labels below the number of classes.
std::vector<Bytes> TrainingInputs(const Graph& graph);

struct StepResult {
  float loss = 0;
  std::vector<Bytes> gradients;            // per gradient the trainer captures, in its order
  std::map<std::string, double> layer_ms;  // planned run's time per layer type
};

class Trainer {
 public:
  // `gradients`: the values to capture each step (the gradient pass's TrainingGraph::grads).
  Trainer(const Graph& graph, std::vector<ValueId> gradients, const GraphPlan& plan);
  // One step on `inputs`; errors if the planned and the unplanned step differ.
  Result<StepResult> Step(const std::vector<Bytes>& inputs);

 private:
  const Graph& graph_;
  std::vector<ValueId> gradients_;
  const GraphPlan& plan_;
  Session planned_;
  Session unplanned_;
};

}  // namespace memfold
