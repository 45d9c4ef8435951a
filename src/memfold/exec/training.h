// Runs training steps: forward, backward and optimizer update of a training graph (see
// passes/gradient.h), inside one arena laid out by a plan, with persistent weights and
// optimizer state kept in a Session across steps. Every step also runs on a second, unplanned
// session and the two must agree bit for bit (loss and parameter gradients), as inference runs
// do. O(steps * kernel work).
#pragma once

#include <string>
#include <vector>

#include "memfold/exec/executor.h"
#include "memfold/passes/gradient.h"
#include "memfold/plan/plan_graph.h"
#include "memfold/plan/profile.h"

namespace memfold {

// One training step planned under a recomputation strategy ("none", "mirror", "echo"): the
// pipeline gradient -> (recomputation) -> plan, and the footprint profile. Echo plans its own
// choice and, as a check, Mirror's blanket one, keeps the smaller, and keeps the baseline plan
// when neither is smaller (the paper's never-worse guarantee); `chosen_strategy` says whose
// graph was kept and `echo_own_bytes` what Echo's own graph needed.
struct PlannedTraining {
  Graph graph;
  TrainingGraph training;
  GraphPlan plan;
  MemoryProfile profile;
  std::string strategy;
  int recomputed_nodes = 0;
  double recompute_flops = 0;
  double forward_flops = 0;
  std::string chosen_strategy;  // whose graph this is: echo, mirror or none
  bool fell_back = false;       // echo only: the baseline was at least as small
  int64_t echo_own_bytes = 0;   // echo only: the footprint of Echo's own graph
  double plan_ms = 0;
};

// `planner`: "mxnet" (default: MXNet's storage strategy, fast), "greedy" (TFLM's planner over
// the buffers, tighter on large graphs but slower) or "best" (both, the smaller kept).
Result<PlannedTraining> PlanTraining(Graph forward, const std::string& strategy,
                                     const TrainingConfig& config = {},
                                     const std::string& planner = "mxnet");

// The contract's default inputs, with integer inputs folded into the range their readers
// accept: token ids below the embedding table's rows, labels below the number of classes.
std::vector<Bytes> TrainingInputs(const Graph& graph);

struct StepResult {
  float loss = 0;
  std::vector<Bytes> gradients;  // per parameter, in TrainingGraph::params order
  std::map<std::string, double> layer_ms;  // planned run's time per layer type
};

class Trainer {
 public:
  Trainer(const Graph& graph, const TrainingGraph& training, const GraphPlan& plan);
  // One step on `inputs`; errors if the planned and the unplanned step differ.
  Result<StepResult> Step(const std::vector<Bytes>& inputs);

 private:
  const Graph& graph_;
  const TrainingGraph& training_;
  const GraphPlan& plan_;
  Session planned_;
  Session unplanned_;
};

// SHA-256 over all gradients of a step, in parameter order.
std::string GradientSha256(const StepResult& step);

}  // namespace memfold
