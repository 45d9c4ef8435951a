// Runs training steps: forward, backward and optimizer update of a training graph (made by
// the gradient pass, planned by passes/training_plan.h), inside one arena laid out by a plan,
// with persistent weights and optimizer state kept in a Session across steps. Every step also
// runs on a second, unplanned session and the two must agree bit for bit (loss and parameter
// gradients), as inference runs do. The unplanned twin frees each value after its last use, so
// it needs the step's live values, not all of them. O(steps * kernel work).
#pragma once

#include <map>
#include <optional>
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
  double step_ms = 0;                      // the planned run's operators' time (sum of layer_ms)
  // The planned session's resident memory as the OS measured it: what creating it added
  // (persistent weights and optimizer state) plus the highest the planned run raised it
  // (arena, inputs, captured gradients); -1 where /proc cannot say.
  int64_t measured_peak_bytes = -1;
};

// What one checked step needs at most, in bytes: the planned session (arena and persistent
// tensors), and its unplanned twin, which holds the persistent tensors again and, at once, only
// the values live at one step of the schedule; plus the captured gradients of both.
int64_t CheckedStepBytes(const Graph& graph, const GraphPlan& plan,
                         const std::vector<ValueId>& gradients);

class Trainer {
 public:
  // `gradients`: the values to capture each step (the gradient pass's TrainingGraph::grads).
  Trainer(const Graph& graph, std::vector<ValueId> gradients, const GraphPlan& plan);
  // One step on `inputs`; errors if the planned and the unplanned step differ.
  Result<StepResult> Step(const std::vector<Bytes>& inputs);
  // One planned step alone, for timing after Step has checked the plan: the operators' time
  // in ms. The arena is not poisoned (a checked step has shown no value is read unwritten).
  Result<double> TimedStep(const std::vector<Bytes>& inputs);
  // Frees the unplanned twin (the next Step makes it again).
  void DropTwin() { unplanned_.reset(); }

 private:
  const Graph& graph_;
  std::vector<ValueId> gradients_;
  const GraphPlan& plan_;
  int64_t planned_resident_ = -1;  // what creating the planned session added to VmRSS
  Session planned_;
  std::optional<Session> unplanned_;  // made after the first planned step was measured
};

}  // namespace memfold
