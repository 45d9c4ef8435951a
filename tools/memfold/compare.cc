// `memfold compare MODEL...`: one row per model with every planner's arena, the lower bounds,
// the diagonal saving, the analytic-vs-exact safe-overlap gap, planning time, and whether the
// greedy and diagonal plans run like the unplanned model at every read. The README's tables
// are this command's output.
#include <chrono>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "memfold/exec/checked_run.h"
#include "memfold/exec/executor.h"
#include "memfold/exec/overlap_trace.h"
#include "memfold/io/text.h"
#include "memfold/plan/plan_graph.h"

namespace memfold::cli {
namespace {

using Json = nlohmann::ordered_json;

struct Row {
  std::string model;
  size_t ops = 0;
  int64_t naive = 0, greedy = 0, greedy_stable = 0, diagonal = 0, lower_bound = 0,
          diagonal_bound = 0;
  double overlap_gap = 0;  // (exact - analytic) / exact over all operators, in %
  double plan_ms = 0;      // diagonal planning, including the safe-overlap analysis
  std::string runs;        // "yes", "NO", or why it cannot run
};

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

Result<Row> Measure(const std::string& model) {
  MF_ASSIGN_OR_RETURN(Graph g, LoadModel(model));
  Row row;
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

std::string Fixed(double value, int digits) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

std::string Percent(double value, int digits = 1) { return Fixed(value, digits) + " %"; }

}  // namespace

int CompareCommand(const std::vector<std::string>& models, bool json) {
  std::vector<Row> rows;
  for (const std::string& model : models) {
    Result<Row> row = Measure(model);
    if (!row.ok()) return Fail(row.status().message());
    rows.push_back(*row);
  }
  if (json) {
    Json out = Json::array();
    for (const Row& r : rows) {
      out.push_back({{"model", r.model},
                     {"ops", r.ops},
                     {"naive", r.naive},
                     {"greedy", r.greedy},
                     {"greedy_stable", r.greedy_stable},
                     {"diagonal", r.diagonal},
                     {"lower_bound", r.lower_bound},
                     {"diagonal_lower_bound", r.diagonal_bound},
                     {"overlap_gap_percent", r.overlap_gap},
                     {"plan_ms", r.plan_ms},
                     {"identical_to_unplanned", r.runs}});
    }
    std::cout << JsonText(Json{{"models", out}}) << "\n";
    return kExitOk;
  }
  TextTable table({"model", ">ops", ">naive", ">greedy (TFLM)", ">greedy_stable", ">diagonal",
                   ">saving", ">lower bound", ">with overlaps", ">O_s gap", ">plan ms",
                   "runs identically"});
  for (const Row& r : rows) {
    const double saving = r.greedy == 0 ? 0
                                        : 100.0 * static_cast<double>(r.greedy - r.diagonal) /
                                              static_cast<double>(r.greedy);
    table.Add({r.model, std::to_string(r.ops), GroupDigits(r.naive), GroupDigits(r.greedy),
               GroupDigits(r.greedy_stable), GroupDigits(r.diagonal), Percent(saving),
               GroupDigits(r.lower_bound), GroupDigits(r.diagonal_bound), Percent(r.overlap_gap, 2),
               Fixed(r.plan_ms, 1), r.runs});
  }
  std::cout << table.Render();
  return kExitOk;
}

}  // namespace memfold::cli
