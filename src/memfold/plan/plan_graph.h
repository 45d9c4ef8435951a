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
#include "memfold/base/status.h"
#include "memfold/placement/buffer.h"
#include "memfold/plan/liveness.h"

namespace memfold {

struct GraphPlan {
  Liveness liveness;
  Plan plan;
  int64_t lower_bound = 0;  // with the plan's overlap allowances, if it uses any
  // The time step whose live buffers set the arena size: among steps where the highest live
  // byte reaches the arena's top, the one with the most live bytes (0 = graph inputs, t > 0 =
  // the node at schedule position t - 1).
  int32_t peak_time = 0;
};

// Planner names the CLI accepts: every registered planner, "diagonal" (overlaps by proven
// safe overlap; the smaller of two placement orders), "offline" (the file's plan) and "best"
// (the smallest verified plan of all).
std::vector<std::string> GraphPlannerNames();

// Which memory-access model supplies the safe overlaps for diagonal planning.
enum class OverlapSource { kAlgorithmic, kAnalytic };

// Errors: unknown planner name; no offline plan; a plan that fails verification (for memfold's
// own planners an internal bug, reported rather than used). With `refine`, "diagonal" and
// "best" plans then get RefinePlan's search (what the commands show; searches that plan many
// candidates rank them without it).
Result<GraphPlan> PlanGraph(const Graph& graph, std::string_view planner,
                            OverlapSource source = OverlapSource::kAlgorithmic, bool refine = false);

// Improves a greedy or diagonal plan of `graph` by a local search over placement orders
// (SearchPlacementOrder, with the algorithmic safe overlaps) from the order of its offsets,
// within a fixed amount of work (a placement costs about n^2 / 2 neighbour checks for n
// buffers; the search stops at the overlap-aware lower bound). The result replaces the plan
// only when it verifies and is smaller; its planner is "diagonal_search". Deterministic.
// Errors: a searched plan that fails verification (an internal bug).
Status RefinePlan(const Graph& graph, GraphPlan* plan);

// Lets every node's output overlap each input that dies at the node, by the input's safe
// overlap from `source` (only pairs with O_s > 0). The algorithmic models replay loops, O(output
// elements) per node; once a graph's replays would pass `replay_budget` elements, the
// remaining nodes get the analytic model (a lower bound, so still safe): a small file that
// declares enormous tensors cannot stall planning. Real models stay far below the default.
inline constexpr int64_t kOverlapReplayBudget = int64_t{1} << 27;
void AddOverlapAllowances(const Graph& graph, OverlapSource source, Liveness* live,
                          int64_t replay_budget = kOverlapReplayBudget);

// How many bytes of buffer `id` (an output) the plan actually lets an input overlap.
int64_t OverlapBytes(const GraphPlan& plan, int32_t id);

}  // namespace memfold
