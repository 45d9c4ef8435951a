// Plans a whole graph: liveness, one named planner (or "best": the smallest verified plan of
// every planner), the lower bound, independent verification, and which operator sets the
// peak. This is what the CLI and the tests call; planners themselves never see a graph.
//
// Complexity: liveness O(V + E) plus the planners' own.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "memfold/ir/graph.h"
#include "memfold/ir/status.h"
#include "memfold/plan/buffer.h"
#include "memfold/plan/liveness.h"

namespace memfold {

struct GraphPlan {
  Liveness liveness;
  Plan plan;
  int64_t lower_bound = 0;
  // The time step whose live buffers set the arena size: among steps where the highest live
  // byte reaches the arena's top, the one with the most live bytes (0 = graph inputs, t > 0 =
  // the node at schedule position t - 1).
  int32_t peak_time = 0;
};

// Planner names the CLI accepts: every registered planner plus "best".
std::vector<std::string> GraphPlannerNames();

// Errors: unknown planner name; a plan that fails verification (an internal bug, reported
// rather than used).
Result<GraphPlan> PlanGraph(const Graph& graph, std::string_view planner);

}  // namespace memfold
