#include "memfold/plan/plan_graph.h"

#include <algorithm>
#include <numeric>

#include "memfold/placement/diagonal_planner.h"
#include "memfold/placement/lower_bound.h"
#include "memfold/placement/portfolio.h"
#include "memfold/placement/verify_plan.h"

namespace memfold {
namespace {

// Among the time steps at which the arena is full to its top, the one with the most live
// bytes: the operator whose working set sets the arena size. The top of every step is painted
// by the buffers in order of decreasing end, each step taking the first buffer that covers it;
// a union-find over "next unpainted step" makes that O(n log n + T) with no tree.
int32_t PeakTime(const Liveness& live, const Plan& plan) {
  const auto steps = static_cast<size_t>(live.end_time) + 1;
  const std::vector<int64_t> live_bytes = LiveBytesPerStep(live);
  auto end_of = [&](const BufferRequest& r) {
    return plan.offsets[static_cast<size_t>(r.id)] + r.bytes;
  };
  std::vector<int32_t> by_end(live.requests.size());
  std::iota(by_end.begin(), by_end.end(), 0);
  std::sort(by_end.begin(), by_end.end(), [&](int32_t a, int32_t b) {
    return end_of(live.requests[static_cast<size_t>(a)]) >
           end_of(live.requests[static_cast<size_t>(b)]);
  });
  std::vector<int64_t> top(steps, 0);
  std::vector<size_t> next(steps + 1);  // next[t]: the first unpainted step >= t (path-halved)
  std::iota(next.begin(), next.end(), 0);
  auto unpainted_from = [&](size_t t) {
    while (next[t] != t) t = next[t] = next[next[t]];
    return t;
  };
  for (int32_t id : by_end) {
    const BufferRequest& r = live.requests[static_cast<size_t>(id)];
    for (size_t t = unpainted_from(static_cast<size_t>(r.first)); t <= static_cast<size_t>(r.last);
         t = unpainted_from(t)) {
      top[t] = end_of(r);
      next[t] = t + 1;
    }
  }
  int64_t highest = -1, peak_bytes = -1;
  size_t peak = 0;
  for (size_t t = 0; t < steps; ++t) {
    if (top[t] > highest || (top[t] == highest && live_bytes[t] > peak_bytes)) {
      highest = top[t];
      peak_bytes = live_bytes[t];
      peak = t;
    }
  }
  return static_cast<int32_t>(peak);
}

}  // namespace

int64_t OverlapBytes(const GraphPlan& gp, int32_t id) {
  const BufferRequest& out = gp.liveness.requests[static_cast<size_t>(id)];
  int64_t overlap = 0;
  for (const OverlapAllowance& a : out.may_overlap) {
    const int64_t end = gp.plan.offsets[static_cast<size_t>(id)] + out.bytes;
    const int64_t start = gp.plan.offsets[static_cast<size_t>(a.input)];
    if (start >= gp.plan.offsets[static_cast<size_t>(id)] && start < end)
      overlap = std::max(overlap, end - start);
  }
  return overlap;
}

namespace {

// What the placement-order search calls its plans.
constexpr std::string_view kSearchPlanner = "diagonal_search";

// Whether the search may start from a plan the planner `name` made: a placement order's (a
// strategy row marked `ordered`) or the search's own.
bool SearchMayStartFrom(std::string_view name) {
  if (name == kSearchPlanner) return true;
  const Result<const Strategy*> row = FindStrategy(name);
  return row.ok() && (*row)->ordered;
}

// Replaces gp's plan by `plan` of the requests `live` (a smaller one a search found) once it
// verifies; `source` names the search for the error, which would be a memfold bug.
Status Adopt(std::string_view source, const Liveness& live, Plan plan, GraphPlan* gp) {
  if (Status verified = VerifyPlan(live.requests, plan); !verified.ok()) {
    return Status::Error(
        "the " + std::string(source) +
        " produced an invalid plan (a memfold bug, please report): " + verified.message());
  }
  gp->plan = std::move(plan);
  if (&gp->liveness != &live) gp->liveness = live;
  gp->peak_time = PeakTime(gp->liveness, gp->plan);
  return Status::Ok();
}

// RefinePlan on the liveness with algorithmic overlap allowances `live` of the planned graph.
Status Refine(const Liveness& overlapping, GraphPlan* gp) {
  // Enough moves to reach the bound on every zoo model's split graph; about 1 s of neighbour
  // checks on this machine at most.
  constexpr SearchBudget kBudget{.moves = 1000, .neighbour_checks = 30'000'000};
  if (!SearchMayStartFrom(gp->plan.planner)) return Status::Ok();
  const Liveness& live = overlapping;
  const int64_t floor = AlignUp(LowerBoundWithOverlaps(live.requests), kArenaAlignment);
  if (gp->plan.arena_bytes <= floor || gp->plan.offsets.size() != live.requests.size())
    return Status::Ok();
  std::vector<int32_t> order(live.requests.size());
  std::iota(order.begin(), order.end(), 0);
  const std::vector<int64_t>& at = gp->plan.offsets;
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return at[a] < at[b]; });
  std::optional<Plan> found = SearchPlacementOrder(live.requests, std::move(order), floor, kBudget,
                                                   std::string(kSearchPlanner));
  if (!found || found->arena_bytes >= gp->plan.arena_bytes) return Status::Ok();
  MF_RETURN_IF_ERROR(Adopt("placement-order search", live, std::move(found).value(), gp));
  gp->lower_bound = LowerBoundWithOverlaps(live.requests);
  return Status::Ok();
}

}  // namespace

Status ProvePlan(GraphPlan* gp, double seconds) {
  const std::vector<BufferRequest>& requests = gp->liveness.requests;
  gp->optimal = MeetsLowerBound(requests, gp->plan.arena_bytes, gp->lower_bound);
  if (gp->optimal || gp->plan.offsets.size() != requests.size()) return Status::Ok();
  PortfolioResult settled = PlaceWithPortfolio(
      requests, {.seconds = seconds, .wall_seconds = kProveWallSeconds, .start = gp->plan.offsets});
  gp->optimal = settled.optimal;
  if (settled.plan.arena_bytes >= gp->plan.arena_bytes) return Status::Ok();
  return Adopt("placement portfolio", gp->liveness, std::move(settled.plan), gp);
}

Status RefinePlan(const Graph& graph, GraphPlan* gp) {
  if (!SearchMayStartFrom(gp->plan.planner)) return Status::Ok();
  return Refine(PlanningInput(graph, OverlapSource::kAlgorithmic).overlapping(), gp);
}

Result<GraphPlan> PlanGraph(const Graph& graph, std::string_view name, const PlanOptions& options) {
  MF_ASSIGN_OR_RETURN(const Strategy* strategy, FindStrategy(name));
  const PlanningInput input(graph, options.overlaps);
  MF_ASSIGN_OR_RETURN(Placement placed, strategy->place(input));
  GraphPlan result;
  result.lower_bound = placed.overlapping ? LowerBoundWithOverlaps(placed.liveness.requests)
                                          : LowerBound(input.plain().requests);
  result.liveness = std::move(placed.liveness);
  result.plan = std::move(placed.plan);
  result.peak_time = PeakTime(result.liveness, result.plan);
  if (options.refine && strategy->refinable) {
    // The search plans with algorithmic allowances: the input's own when it has them.
    if (options.overlaps == OverlapSource::kAlgorithmic) {
      MF_RETURN_IF_ERROR(Refine(input.overlapping(), &result));
    } else {
      MF_RETURN_IF_ERROR(RefinePlan(graph, &result));
    }
  }
  result.optimal =
      MeetsLowerBound(result.liveness.requests, result.plan.arena_bytes, result.lower_bound);
  if (options.prove_seconds > 0 && strategy->refinable)
    MF_RETURN_IF_ERROR(ProvePlan(&result, options.prove_seconds));
  return result;
}

}  // namespace memfold
