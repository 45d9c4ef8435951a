// The training pipeline (pass-level): one training step of a forward graph planned under a
// recomputation strategy — gradient pass, then recomputation (Mirror's or Echo's choice, Echo's
// with 1-bit masks), then memory planning and the footprint profile — and Echo's never-worse
// policy. It is the training twin of the inference `best` pipeline (passes/best_plan.h).
// Cost: the passes' and the planner's (under 300 ms for the full-size reference models).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"
#include "memfold/passes/gradient.h"
#include "memfold/plan/plan_graph.h"
#include "memfold/plan/profile.h"

namespace memfold {

// The recomputation strategies a training step can be planned under: one row each, in the
// order tables and pictures show them. Names are what users type and JSON reports.
enum class Recomputation { kNone, kMirror, kEcho };
struct RecomputationStrategy {
  std::string_view name;
  Recomputation kind;
};
std::span<const RecomputationStrategy> RecomputationStrategies();
// The row named `name`, or an error listing every name.
Result<const RecomputationStrategy*> FindRecomputation(std::string_view name);
std::string_view NameOf(Recomputation kind);

// One training step planned under a recomputation strategy ("none", "mirror", "echo"): the
// pipeline gradient -> (recomputation) -> plan, and the footprint profile. Echo plans its own
// choice and, as a check, Mirror's blanket one, keeps the smaller, and keeps the baseline plan
// when neither is smaller (the paper's never-worse guarantee); a rival whose footprint floor
// (no verified plan of its graph goes below it) is not below Echo's plan is not made at all,
// which gives the same result. `chosen_strategy` says whose graph was kept and
// `echo_own_bytes` what Echo's own graph needed.
struct PlannedTraining {
  Graph graph;
  TrainingGraph training;
  GraphPlan plan;
  MemoryProfile profile;
  Recomputation recomputation = Recomputation::kNone;  // the strategy asked for
  int recomputed_nodes = 0;
  double recompute_flops = 0;
  double forward_flops = 0;
  Recomputation kept = Recomputation::kNone;  // whose graph this is
  std::string strategy() const { return std::string(NameOf(recomputation)); }
  std::string chosen_strategy() const { return std::string(NameOf(kept)); }
  bool fell_back = false;      // echo only: the baseline was at least as small
  int64_t echo_own_bytes = 0;  // echo only: the footprint of Echo's own graph
  // The forward nodes the kept graph recomputes, indexed by node id of the training graph
  // before recomputation (all zero for the baseline).
  std::vector<char> recomputed;
  double plan_ms = 0;
};

// `planner`: a strategy of plan/strategies.h: "mxnet" (default: MXNet's storage strategy, the
// baseline Echo is measured against), "greedy" (TFLM's planner over the buffers themselves,
// tighter on large graphs but slower), "mxnet_or_greedy" (the smaller), or any other.
Result<PlannedTraining> PlanTraining(Graph forward, const std::string& strategy,
                                     const TrainingConfig& config = {},
                                     const std::string& planner = "mxnet");

// The same pipeline from recomputation on, for a training step whose backward pass exists
// already (`training` describes `graph`): a joint graph traced by PyTorch (joint/).
Result<PlannedTraining> PlanTrainingStep(Graph graph, const TrainingGraph& training,
                                         const std::string& strategy,
                                         const std::string& planner = "mxnet");

}  // namespace memfold
