#include "memfold/plan/plan_graph.h"

#include <algorithm>

#include "memfold/plan/lower_bound.h"
#include "memfold/plan/planner.h"
#include "memfold/plan/verify_plan.h"

namespace memfold {
namespace {

constexpr std::string_view kBest = "best";

int32_t PeakTime(const Liveness& live, const Plan& plan) {
  std::vector<int64_t> top(static_cast<size_t>(live.end_time) + 1, 0);
  for (const BufferRequest& r : live.requests) {
    const int64_t end = plan.offsets[static_cast<size_t>(r.id)] + r.bytes;
    for (int32_t t = r.first; t <= r.last; ++t) top[static_cast<size_t>(t)] = std::max(top[static_cast<size_t>(t)], end);
  }
  return static_cast<int32_t>(std::max_element(top.begin(), top.end()) - top.begin());
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

}  // namespace

std::vector<std::string> GraphPlannerNames() {
  std::vector<std::string> names;
  for (std::string_view name : PlannerNames()) names.emplace_back(name);
  names.emplace_back(kBest);
  return names;
}

Result<GraphPlan> PlanGraph(const Graph& graph, std::string_view planner) {
  const bool best = planner == kBest;
  if (!best && MakePlanner(planner) == nullptr) {
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
  } else {
    MF_ASSIGN_OR_RETURN(result.plan, PlaceVerified(planner, requests));
  }
  result.lower_bound = LowerBound(requests);
  result.peak_time = PeakTime(result.liveness, result.plan);
  return result;
}

}  // namespace memfold
