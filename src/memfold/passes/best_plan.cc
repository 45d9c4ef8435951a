#include "memfold/passes/best_plan.h"

#include <chrono>
#include <sstream>

#include "memfold/passes/schedule.h"
#include "memfold/passes/split.h"

namespace memfold {
namespace {

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

std::string SplitDetail(const SplitResult& split) {
  if (split.stages.empty()) return "no split helps within the budget";
  std::ostringstream out;
  for (const SplitStage& stage : split.stages) {
    out << (out.tellp() > 0 ? "; " : "") << stage.ops.front();
    if (stage.ops.size() > 1) out << ".." << stage.ops.back();
    out << " in " << stage.split.tiles << " bands";
  }
  out.precision(2);
  out << std::fixed << " (+" << 100 * split.recompute_fraction() << " % FLOPs)";
  return out.str();
}

}  // namespace

Result<BestPlan> PlanBest(const Graph& graph, const BestOptions& options) {
  BestPlan best;
  auto start = std::chrono::steady_clock::now();
  MF_ASSIGN_OR_RETURN(GraphPlan greedy, PlanGraph(graph, "greedy"));
  best.steps.push_back(
      {"greedy", greedy.plan.arena_bytes, MsSince(start), "TFLM's greedy planner"});

  start = std::chrono::steady_clock::now();
  MF_ASSIGN_OR_RETURN(GraphPlan plain, PlanGraph(graph, "best"));
  best.steps.push_back(
      {"diagonal", plain.plan.arena_bytes, MsSince(start),
       "the smallest of greedy, greedy_stable, diagonal and the file's offline plan: " +
           plain.plan.planner});

  start = std::chrono::steady_clock::now();
  MF_ASSIGN_OR_RETURN(ScheduledPlan ordered, PlanWithBestSchedule(graph, {}, "best"));
  best.reordered = ordered.reordered;
  best.steps.push_back({"reorder", ordered.plan.plan.arena_bytes, MsSince(start),
                        std::string(ScheduleSearchKindName(ordered.search.kind)) + " search, " +
                            (ordered.reordered ? "order changed" : "the file's order kept")});

  start = std::chrono::steady_clock::now();
  SplitOptions split_options;
  split_options.max_recompute = options.max_recompute;
  split_options.planner = "best";
  MF_ASSIGN_OR_RETURN(SplitResult split, SplitForMemory(ordered.graph, split_options));
  best.split = !split.stages.empty();
  best.recompute_fraction = split.recompute_fraction();
  best.graph = best.split ? std::move(split.graph) : ordered.graph;
  best.plan = std::move(ordered.plan);
  if (best.split) {
    MF_ASSIGN_OR_RETURN(GraphPlan split_plan, PlanGraph(best.graph, "best"));
    if (split_plan.plan.arena_bytes < best.plan.plan.arena_bytes) {
      best.plan = std::move(split_plan);
    } else {  // the search's ranking did not survive the final planning: keep the unsplit graph
      best.graph = std::move(ordered.graph);
      best.split = false;
      best.recompute_fraction = 0;
    }
  }
  best.steps.push_back({"split", best.plan.plan.arena_bytes, MsSince(start), SplitDetail(split)});
  return best;
}

}  // namespace memfold
