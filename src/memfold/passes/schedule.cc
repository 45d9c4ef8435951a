#include "memfold/passes/schedule.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "memfold/ir/verify.h"
#include "memfold/passes/schedule_layered.h"
#include "memfold/passes/schedule_local.h"
#include "memfold/passes/schedule_model.h"
#include "memfold/placement/lower_bound.h"
#include "memfold/plan/liveness.h"
#include "memfold/plan/overlap_allowances.h"

namespace memfold {
namespace {

using namespace schedule_detail;  // NOLINT: the search's pieces

// ---------------------------------------------------------------------------------------------

double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// The best order the searches find, starting from the file's: greedy, beam, then the exact
// search with the best peak so far as its bound; local improvement if that runs out of states.
// Fills kind, states and the lower bound.
std::vector<NodeId> Search(const StepModel& model, const Graph& graph,
                           const ScheduleOptions& options, ScheduleSearch* result) {
  std::vector<NodeId> best = graph.schedule;
  int64_t best_peak = model.PeakOf(best);
  std::vector<int32_t> position(best.size());
  for (size_t i = 0; i < best.size(); ++i)
    position[static_cast<size_t>(best[i])] = static_cast<int32_t>(i);
  result->lower_bound = model.LowerBound();
  result->kind = ScheduleSearchKind::kExact;
  auto try_search = [&](int64_t max_states, int32_t layer_cap) {
    SearchOutcome outcome = LayeredOrderSearch(model, position, best_peak, max_states, layer_cap);
    result->states += outcome.states;
    if (outcome.order) {
      best = std::move(*outcome.order);
      best_peak = outcome.peak;
    }
    return outcome;
  };
  auto improve_locally = [&] {
    result->kind = ScheduleSearchKind::kHeuristic;
    return ImproveLocally(model, std::move(best), options.max_improve_steps);
  };
  if (best_peak <= result->lower_bound) return best;
  try_search(kUnlimited, 1);  // greedy
  if (best_peak <= result->lower_bound) return best;
  if (model.num_nodes() > options.max_bound_nodes) return improve_locally();
  // The beam is often optimal already, exhaustive (so exact) when no layer had to be cut, and
  // its peak prunes the exact search hard.
  const int64_t width =
      std::max<int64_t>(kMinBeamWidth, options.beam_states / std::max(model.num_nodes(), 1));
  const SearchOutcome beam =
      try_search(kUnlimited, static_cast<int32_t>(std::min<int64_t>(width, 1 << 30)));
  if (!beam.truncated || best_peak <= result->lower_bound) return best;
  if (!try_search(options.max_states, std::numeric_limits<int32_t>::max()).out_of_budget)
    return best;
  return improve_locally();
}

}  // namespace

std::string_view ScheduleSearchKindName(ScheduleSearchKind kind) {
  return kind == ScheduleSearchKind::kExact ? "exact" : "heuristic";
}

int64_t EstimatedPeak(const Graph& graph, OverlapSource source) {
  Liveness live = ComputeLiveness(graph);
  AddOverlapAllowances(graph, source, &live);
  return LowerBoundWithOverlaps(live.requests);
}

Result<ScheduleSearch> MinimisePeakSchedule(const Graph& graph, const ScheduleOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  Status valid = VerifyGraph(graph);
  if (!valid.ok())
    return Status::Error("cannot re-order graph '" + graph.name + "': " + valid.message());
  const StepModel model(graph, options.overlap, options.max_bound_nodes);
  ScheduleSearch result;
  result.peak_before = model.PeakOf(graph.schedule);
  std::vector<NodeId> order = Search(model, graph, options, &result);
  const int64_t searched = model.PeakOf(order);
  if (searched < result.peak_before) {
    result.schedule = std::move(order);
    result.peak_after = searched;
  } else {
    result.schedule = graph.schedule;
    result.peak_after = result.peak_before;
  }
  result.time_ms = MillisecondsSince(start);
  return result;
}

Result<ScheduledPlan> PlanWithBestSchedule(const Graph& graph, const ScheduleOptions& options,
                                           std::string_view planner) {
  MF_ASSIGN_OR_RETURN(ScheduleSearch search, MinimisePeakSchedule(graph, options));
  MF_ASSIGN_OR_RETURN(GraphPlan original, PlanGraph(graph, planner, {.overlaps = options.overlap}));
  ScheduledPlan result{.graph = graph, .plan = std::move(original), .search = {}};
  result.original_arena = result.searched_arena = result.plan.plan.arena_bytes;
  if (search.schedule != graph.schedule) {
    Graph reordered = graph;
    reordered.schedule = search.schedule;
    MF_ASSIGN_OR_RETURN(GraphPlan searched,
                        PlanGraph(reordered, planner, {.overlaps = options.overlap}));
    result.searched_arena = searched.plan.arena_bytes;
    if (result.searched_arena < result.original_arena) {
      result.graph = std::move(reordered);
      result.plan = std::move(searched);
      result.reordered = true;
    }
  }
  result.search = std::move(search);
  return result;
}

}  // namespace memfold
