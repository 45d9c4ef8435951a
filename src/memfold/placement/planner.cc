#include "memfold/placement/planner.h"

#include "memfold/placement/greedy_planner.h"

namespace memfold {
namespace {

struct Registration {
  std::string_view name;
  std::unique_ptr<Planner> (*make)();
};

std::unique_ptr<Planner> MakeGreedyPlanner() { return std::make_unique<GreedyPlanner>(); }
std::unique_ptr<Planner> MakeStableGreedyPlanner() {
  return std::make_unique<GreedyPlanner>(GreedyPlanner::TieOrder::kRequest);
}

constexpr Registration kPlanners[] = {
    {"naive", &MakeNaivePlanner},
    {"greedy", &MakeGreedyPlanner},
    {"greedy_stable", &MakeStableGreedyPlanner},
};

}  // namespace

std::unique_ptr<Planner> MakePlanner(std::string_view name) {
  for (const Registration& entry : kPlanners) {
    if (entry.name == name) return entry.make();
  }
  return nullptr;
}

std::vector<std::string_view> PlannerNames() {
  std::vector<std::string_view> names;
  for (const Registration& entry : kPlanners) names.push_back(entry.name);
  return names;
}

}  // namespace memfold
