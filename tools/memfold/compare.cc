// `memfold compare MODEL...`: one row per model of pipeline/compare.h's measurements (every
// planner's arena, the lower bounds, the diagonal saving, the safe-overlap gap, planning time,
// whether the plans run like the unplanned model at every read). The README's tables are this
// command's output.
#include "memfold/pipeline/compare.h"

#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "memfold/io/text.h"

namespace memfold::cli {
namespace {

using Json = nlohmann::ordered_json;

std::string Percent(double value, int digits = 1) { return Fixed(value, digits) + " %"; }

}  // namespace

int CompareCommand(const std::vector<std::string>& models, bool json) {
  std::vector<PlannerComparison> rows;
  for (const std::string& model : models) {
    Result<PlannerComparison> row = ComparePlanners(model);
    if (!row.ok()) return Fail(row.status().message());
    rows.push_back(*row);
  }
  if (json) {
    Json out = Json::array();
    for (const PlannerComparison& r : rows) {
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
  for (const PlannerComparison& r : rows) {
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
