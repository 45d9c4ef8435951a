// Every memory plan a user can name, in one table (Strategies()): the placement core's planners
// over a graph's liveness, graph-aware strategies (MXNet's storage plan, the model file's own
// offline plan) and composites (the smallest verified plan of several strategies, by name).
// PlanGraph, the best pipeline, training and the command line all choose plans by these names;
// adding a strategy is one row. The `best` of the command line is not a row: it is the pipeline
// of rewrites (passes/best_plan.h) whose first step is the row `smallest`.
//
// Every placement a strategy returns has passed VerifyPlan against the requests it returns
// (with any overlap allowances it relies on); composites compare verified plans only.
// Cost: the placement core's (about O(n log n) for greedy, O(n k log k) for the diagonal orders),
// plus the safe-overlap analysis of the graph once per PlanningInput.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"
#include "memfold/placement/buffer.h"
#include "memfold/plan/liveness.h"
#include "memfold/plan/overlap_allowances.h"

namespace memfold {

// What strategies plan from: the graph, its liveness, and (computed on first use, once) the same
// liveness with every proven overlap allowance.
class PlanningInput {
 public:
  PlanningInput(const Graph& graph, OverlapSource source);
  const Graph& graph() const { return graph_; }
  const Liveness& plain() const { return plain_; }
  const Liveness& overlapping() const;

 private:
  const Graph& graph_;
  OverlapSource source_;
  Liveness plain_;
  mutable std::optional<Liveness> overlapping_;
};

// A verified plan and the requests it was verified against. `overlapping`: those requests
// carry safe-overlap allowances, so the plan's lower bound is the one with overlaps.
struct Placement {
  Plan plan;
  Liveness liveness;
  bool overlapping = false;
};

struct Strategy {
  std::string_view name;
  std::string_view summary;  // one line for people (--help, docs)
  Result<Placement> (*place)(const PlanningInput& input);
  bool refinable = false;  // RefinePlan's placement-order search may improve its plans
  // Its plan is a placement order (first fit in some order), so the search may start from it
  // when a refinable composite chose it.
  bool ordered = false;
};

// The registry, in the order the command line lists it.
std::span<const Strategy> Strategies();
// The row named `name`, or an error listing every name.
Result<const Strategy*> FindStrategy(std::string_view name);
std::vector<std::string> StrategyNames();

}  // namespace memfold
