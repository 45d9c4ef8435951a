// Memory-minimising operator re-ordering: a topological order of a graph's nodes whose peak of
// live arena bytes is as small as can be found (DMO paper, "operation re-ordering"; the search
// follows Serenity, Ahn et al. 2020).
//
// The cost of an order is what the diagonal planner's lower bound measures for it
// (EstimatedPeak: LowerBoundWithOverlaps over ComputeLiveness + AddOverlapAllowances): at the
// step of each node the live buffers (TFLM lifetimes: graph inputs from step 0, outputs to the
// end, aliases share their root's buffer), its scratch, sizes rounded up to the arena
// alignment, minus what that bound subtracts for the best allowance between output 0 and an
// input that dies at that node (the safe overlap O_s from the op table's own models, as
// AddOverlapAllowances calls them; the subtraction asked of LowerBoundWithOverlaps). The
// live set at a node's step depends only on which nodes ran before it, so the search works on
// executed-node sets and evaluates a step incrementally; the tests hold this incremental model
// to EstimatedPeak on every order they try.
//   * upper bounds first: the graph's own order, a greedy order (the ready node of least
//     running peak, then least live bytes after it) and a beam search (the layered search
//     below keeping the states of least peak, then least live bytes, per layer; when no layer
//     had to be cut it was exhaustive, and its answer is exact).
//   * exact: dynamic programming over executed sets layer by layer (k nodes run), memoising
//     the smallest peak per set and pruning every state whose peak reaches the best order
//     known. A search that completes within ScheduleOptions::max_states created states proves
//     its answer optimal.
//   * heuristic (the exact search ran out of states): the best of the above, improved locally:
//     a node moves within its dependence window across the first step at the peak while that
//     lowers the peak, the number of steps at the peak, or the sum of all steps. A move is
//     scored by walking only the steps between its two positions.
// The answer is never worse than the graph's own order, which is its starting bound. A lower
// bound (per node: the buffers that every order keeps live at its step) ends the search early
// when an order reaches it.
//
// Besides data dependences, nodes that touch the same persistent state (TFLite variable
// tensors, in-place optimizer updates) keep their relative order.
//
// Complexity: the cost model O(V + E) plus one O_s evaluation per (node, input) pair that can
// die there (O(output elements) each for the algorithmic models), ancestor bit sets
// O(N^2 / 64 + E N / 64) and the lower bound O(N * B * readers) (both skipped above
// max_bound_nodes); the exact search O(states * ready nodes * (degree + N / 64)), the beam
// the same with states <= beam_states, plus the local improvement's budget.
// Preconditions: the graph passes VerifyGraph (checked: an error names the problem).
//
// Depends on plan/ (liveness, overlap allowances, lower bound, PlanGraph) because the cost is
// the planner's own.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"
#include "memfold/plan/overlap_allowances.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {

struct ScheduleOptions {
  // Which memory-access model supplies O_s (as PlanGraph's `source`).
  OverlapSource overlap = OverlapSource::kAlgorithmic;
  // Exact search: the most executed-set states it may create before giving up.
  int64_t max_states = 100'000;
  // Beam search: about how many states it creates in all. Each layer keeps beam_states / nodes
  // states (at least 8) and stops expanding them once it has created that many (having
  // expanded at least 4), so wide graphs cost no more than narrow ones.
  int64_t beam_states = 100'000;
  // Local improvement: node steps it may evaluate in total (a candidate move costs one step per
  // position between its two ends).
  int64_t max_improve_steps = 2'000'000;
  // Graphs with more nodes skip the ancestor sets, the exact search and the beam (greedy and
  // local improvement only).
  int32_t max_bound_nodes = 4096;
};

enum class ScheduleSearchKind {
  kExact,      // optimal: the DP (or the beam, uncut) was exhaustive, or the lower bound met
  kHeuristic,  // the DP ran out of states (or was skipped); the best order the heuristics found
};
std::string_view ScheduleSearchKindName(ScheduleSearchKind kind);  // "exact", "heuristic"

struct ScheduleSearch {
  std::vector<NodeId> schedule;  // a topological order of every node, for Graph::schedule
  ScheduleSearchKind kind = ScheduleSearchKind::kExact;
  int64_t peak_before = 0;  // the graph's own order's peak (equals its EstimatedPeak)
  int64_t peak_after = 0;   // `schedule`'s peak (equals its EstimatedPeak)
  int64_t lower_bound = 0;  // no order has a smaller peak
  int64_t states = 0;       // executed-set states created by the searches
  double time_ms = 0;
};

// The peak the search minimises, for the graph's current schedule, computed by the planner's
// own functions: LowerBoundWithOverlaps of the liveness with overlap allowances.
// O(V + E + B log B) plus the O_s models.
int64_t EstimatedPeak(const Graph& graph, OverlapSource source = OverlapSource::kAlgorithmic);

// Errors: the graph fails VerifyGraph.
Result<ScheduleSearch> MinimisePeakSchedule(const Graph& graph,
                                            const ScheduleOptions& options = {});

// The graph planned in its own order and in the searched order; the smaller verified arena is
// kept (the file's order on a tie), so re-ordering never costs arena bytes.
struct ScheduledPlan {
  Graph graph;     // the input graph with the kept schedule
  GraphPlan plan;  // its plan, verified by PlanGraph
  ScheduleSearch search;
  int64_t original_arena = 0;  // arena of the graph's own order
  int64_t searched_arena = 0;  // arena of search.schedule
  bool reordered = false;      // whether graph.schedule is the searched order
};

// Errors: as MinimisePeakSchedule, and PlanGraph's (unknown planner, unverifiable plan).
Result<ScheduledPlan> PlanWithBestSchedule(const Graph& graph, const ScheduleOptions& options = {},
                                           std::string_view planner = "diagonal");

}  // namespace memfold
