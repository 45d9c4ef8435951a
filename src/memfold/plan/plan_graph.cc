#include "memfold/plan/plan_graph.h"

#include <algorithm>

#include "memfold/plan/lower_bound.h"
#include "memfold/plan/planner.h"
#include "memfold/plan/verify_plan.h"

namespace memfold {
namespace {

constexpr std::string_view kBest = "best";
constexpr std::string_view kOffline = "offline";

// Among the time steps at which the arena is full to its top, the one with the most live
// bytes: the operator whose working set sets the arena size.
int32_t PeakTime(const Liveness& live, const Plan& plan) {
  const auto steps = static_cast<size_t>(live.end_time) + 1;
  std::vector<int64_t> top(steps, 0), live_bytes(steps, 0);
  for (const BufferRequest& r : live.requests) {
    const int64_t end = plan.offsets[static_cast<size_t>(r.id)] + r.bytes;
    for (auto t = static_cast<size_t>(r.first); t <= static_cast<size_t>(r.last); ++t) {
      top[t] = std::max(top[t], end);
      live_bytes[t] += r.bytes;
    }
  }
  const int64_t highest = *std::max_element(top.begin(), top.end());
  size_t peak = 0;
  for (size_t t = 0; t < steps; ++t) {
    if (top[t] == highest && (top[peak] != highest || live_bytes[t] > live_bytes[peak])) peak = t;
  }
  return static_cast<int32_t>(peak);
}

Result<Plan> PlaceVerified(std::string_view name, const std::vector<BufferRequest>& requests) {
  std::unique_ptr<Planner> planner = MakePlanner(name);
  Plan plan = planner->Place(requests);
  Status verified = VerifyPlan(requests, plan);
  if (!verified.ok()) {
    return Status::Error("planner '" + std::string(name) + "' produced an invalid plan (a memfold bug, please report): " + verified.message());
  }
  return plan;
}

// The model file's own offsets, the rest planned around them as TFLM does; verified like any
// other plan (TFLM takes offline offsets on trust, memfold does not).
Result<Plan> PlaceOffline(const Graph& graph, const Liveness& live) {
  if (graph.offline_offsets.empty()) {
    return Status::Error("the model carries no offline plan (OfflineMemoryAllocation); choose another planner");
  }
  std::vector<BufferRequest> requests = live.requests;
  for (BufferRequest& r : requests) {
    const ValueId v = live.value_of[static_cast<size_t>(r.id)];
    if (v != kNoValue && graph.offline_offsets[static_cast<size_t>(v)] >= 0) r.fixed_offset = graph.offline_offsets[static_cast<size_t>(v)];
  }
  Plan plan = MakePlanner("greedy")->Place(requests);
  plan.planner = kOffline;
  Status verified = VerifyPlan(requests, plan);
  if (!verified.ok()) return Status::Error("the model's offline plan is unsafe: " + verified.message());
  return plan;
}

}  // namespace

std::vector<std::string> GraphPlannerNames() {
  std::vector<std::string> names;
  for (std::string_view name : PlannerNames()) names.emplace_back(name);
  names.emplace_back(kOffline);
  names.emplace_back(kBest);
  return names;
}

Result<GraphPlan> PlanGraph(const Graph& graph, std::string_view planner) {
  const bool best = planner == kBest;
  if (!best && planner != kOffline && MakePlanner(planner) == nullptr) {
    std::string names;
    for (const std::string& n : GraphPlannerNames()) names += (names.empty() ? "" : ", ") + n;
    return Status::Error("unknown planner '" + std::string(planner) + "'; choose one of " + names);
  }
  GraphPlan result;
  result.liveness = ComputeLiveness(graph);
  const std::vector<BufferRequest>& requests = result.liveness.requests;
  if (best) {
    bool have = false;
    for (std::string_view name : PlannerNames()) {
      MF_ASSIGN_OR_RETURN(Plan plan, PlaceVerified(name, requests));
      if (!have || plan.arena_bytes < result.plan.arena_bytes) result.plan = std::move(plan);
      have = true;
    }
    Result<Plan> offline = graph.offline_offsets.empty() ? Result<Plan>(Status::Error("none")) : PlaceOffline(graph, result.liveness);
    if (offline.ok() && offline->arena_bytes < result.plan.arena_bytes) result.plan = std::move(offline).value();
  } else if (planner == kOffline) {
    MF_ASSIGN_OR_RETURN(result.plan, PlaceOffline(graph, result.liveness));
  } else {
    MF_ASSIGN_OR_RETURN(result.plan, PlaceVerified(planner, requests));
  }
  result.lower_bound = LowerBound(requests);
  result.peak_time = PeakTime(result.liveness, result.plan);
  return result;
}

}  // namespace memfold
