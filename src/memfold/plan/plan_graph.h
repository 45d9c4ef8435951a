// Plans a whole graph: liveness, one strategy by name (plan/strategies.h), the lower bound, and
// which operator sets the peak; optionally the placement-order search. This is what the
// commands and the tests call; the placement core never sees a graph.
//
// Complexity: liveness O(V + E) plus the strategy's own.
#pragma once

#include <string_view>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"
#include "memfold/placement/buffer.h"
#include "memfold/plan/liveness.h"
#include "memfold/plan/strategies.h"

namespace memfold {

struct GraphPlan {
  Liveness liveness;
  Plan plan;
  int64_t lower_bound = 0;  // with the plan's overlap allowances, if it uses any
  // No plan of these requests is smaller: the arena meets the lower bound, or the exact solver
  // proved it (ProvePlan).
  bool optimal = false;
  // The time step whose live buffers set the arena size: among steps where the highest live
  // byte reaches the arena's top, the one with the most live bytes (0 = graph inputs, t > 0 =
  // the node at schedule position t - 1).
  int32_t peak_time = 0;
};

struct PlanOptions {
  OverlapSource overlaps = OverlapSource::kAlgorithmic;
  // Finish refinable strategies (diagonal, smallest) with RefinePlan's search: what the
  // commands show. Searches that plan many candidates rank them without it.
  bool refine = false;
  // > 0: finish refinable strategies with ProvePlan and this many seconds' worth of nodes.
  double prove_seconds = 0;
};

// The exact solver's share for the plans the commands show (ProvePlan): 50 million units of
// work, 0.05-0.2 s here, which prove kws_ref_model's diagonal plan optimal and shrink the split
// plans of person_detect and the MobileNets; a plan still above its bound costs that much more.
inline constexpr double kProveSeconds = 0.1;
// Its wall clock, far from the work's time here, so that plans come out the same on a slower
// machine or a sanitizer build.
inline constexpr double kProveWallSeconds = 30;

// Errors: an unknown strategy name (the message lists them); no offline plan; a plan that fails
// verification (for memfold's own planners an internal bug, reported rather than used).
Result<GraphPlan> PlanGraph(const Graph& graph, std::string_view strategy,
                            const PlanOptions& options = {});

// Improves a greedy or diagonal plan of `graph` by a local search over placement orders
// (SearchPlacementOrder, with the algorithmic safe overlaps) from the order of its offsets,
// within a fixed budget (1000 moves or 3e7 neighbour checks, about 1 s here, whichever comes
// first; the search stops at the overlap-aware lower bound). The result replaces the plan
// only when it verifies and is smaller; its planner is "diagonal_search". Deterministic.
// Errors: a searched plan that fails verification (an internal bug).
Status RefinePlan(const Graph& graph, GraphPlan* plan);

// Settles a plan above its lower bound with the placement portfolio (placement/portfolio.h),
// starting from the plan's own offsets within `seconds` of exact-solver nodes: the plan is
// replaced only by a smaller one that verifies (its planner then names the solver), and
// `optimal` says whether the result is proven optimal for these requests (the schedule and
// allowances stay as planned). Deterministic. Errors: a placement that fails verification (an
// internal bug).
Status ProvePlan(GraphPlan* plan, double seconds);

// How many bytes of buffer `id` (an output) the plan actually lets an input overlap.
int64_t OverlapBytes(const GraphPlan& plan, int32_t id);

}  // namespace memfold
