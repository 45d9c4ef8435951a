#include "memfold/pipeline/compare.h"

#include <chrono>
#include <filesystem>

#include "memfold/exec/checked_run.h"
#include "memfold/exec/overlap_trace.h"
#include "memfold/ops/runnable.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {
namespace {

// "yes" if the greedy and the diagonal plan both run like the unplanned model, every value
// compared where it is read (exec/checked_run.h).
std::string RunsIdentically(const Graph& g, const GraphPlan& greedy, const GraphPlan& diagonal) {
  const std::vector<Bytes> inputs = DefaultInputs(g);
  if (!CheckRunnable(g, inputs).ok()) return "no kernel";
  for (const GraphPlan* gp : {&greedy, &diagonal}) {
    Result<CheckedRun> run = RunChecked(g, g, gp->liveness, gp->plan, inputs);
    if (!run.ok() || !run->identical()) return "NO";
  }
  return "yes";
}

}  // namespace

Result<PlannerComparison> ComparePlanners(const std::string& model) {
  MF_ASSIGN_OR_RETURN(Graph g, LoadModel(model));
  PlannerComparison row;
  row.model =
      model.rfind("zoo:", 0) == 0 ? model : std::filesystem::path(model).filename().string();
  row.ops = g.schedule.size();
  MF_ASSIGN_OR_RETURN(GraphPlan naive, PlanGraph(g, "naive"));
  MF_ASSIGN_OR_RETURN(GraphPlan greedy, PlanGraph(g, "greedy"));
  MF_ASSIGN_OR_RETURN(GraphPlan stable, PlanGraph(g, "greedy_stable"));
  const auto start = std::chrono::steady_clock::now();
  MF_ASSIGN_OR_RETURN(GraphPlan diagonal, PlanGraph(g, "diagonal", {.refine = true}));
  row.plan_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  row.naive = naive.plan.arena_bytes;
  row.greedy = greedy.plan.arena_bytes;
  row.greedy_stable = stable.plan.arena_bytes;
  row.diagonal = diagonal.plan.arena_bytes;
  row.lower_bound = greedy.lower_bound;
  row.diagonal_bound = diagonal.lower_bound;
  int64_t exact = 0, analytic = 0;
  for (const NodeOverlap& n : AnalyseOverlaps(g, /*with_trace=*/false).nodes) {
    if (n.algorithmic && *n.algorithmic > 0) {
      exact += *n.algorithmic;
      analytic += n.analytic.value_or(0);
    }
  }
  row.overlap_gap =
      exact == 0 ? 0 : 100.0 * static_cast<double>(exact - analytic) / static_cast<double>(exact);
  row.runs = RunsIdentically(g, greedy, diagonal);
  return row;
}

}  // namespace memfold
