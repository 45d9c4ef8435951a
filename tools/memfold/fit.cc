// `memfold fit MODEL --budget SIZE --vary batch|layers [--strategy S]`: the largest batch size
// (or depth) whose planned training step fits the budget (pipeline/fit.h's search), for one
// strategy or, without --strategy, for every one.
#include "memfold/pipeline/fit.h"

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "memfold/io/text.h"
#include "progress.h"

namespace memfold::cli {
namespace {

using Json = nlohmann::ordered_json;

// Each try shows as progress and, with --verbose, as a timed line saying whether it fits.
Result<FitResult> FitWithProgress(const std::string& model, const std::string& vary, int64_t budget,
                                  const std::string& strategy) {
  return FitLargest(
      model, vary, budget, strategy, [&](const std::string& key, int64_t value) -> Result<int64_t> {
        Phase phase("fit: " + strategy + ", " + key + "=" + std::to_string(value));
        Result<int64_t> total = TrainingFootprint(model, key, value, strategy);
        if (total.ok())
          phase.Done(HumanBytes(*total) + (*total <= budget ? ", fits" : ", over the budget"));
        return total;
      });
}

Json ResultJson(const FitResult& r, const std::string& vary) {
  return {{"strategy", r.strategy},
          {"vary", vary},
          {"max_value", r.max_value},
          {"at_key_limit", r.at_key_limit},
          {"total_bytes", r.total_bytes}};
}

}  // namespace

int FitCommand(const FitOptions& o) {
  int64_t budget = 0;
  if (!ParseByteSize(o.budget, &budget))
    return Fail("--budget " + o.budget + " is not a size; use bytes or K/M/G/T, e.g. 11G");
  if (o.common.model.rfind("zoo:", 0) != 0)
    return Fail("fit varies a zoo model's keys; give zoo:NAME (see `memfold zoo`)");
  std::vector<std::string> strategies = RecomputationNames();
  if (o.strategy) strategies = {*o.strategy};
  std::vector<FitResult> results;
  for (const std::string& strategy : strategies) {
    Result<FitResult> r = FitWithProgress(o.common.model, o.vary, budget, strategy);
    if (!r.ok()) return Fail(r.status().message());
    results.push_back(*r);
  }
  const bool any_fits = std::any_of(results.begin(), results.end(),
                                    [](const FitResult& r) { return r.max_value > 0; });
  if (o.common.json) {
    Json out = ResultJson(results.back(), o.vary);
    if (results.size() > 1) {
      Json all = Json::array();
      for (const FitResult& r : results) all.push_back(ResultJson(r, o.vary));
      out["all"] = all;
    }
    out["budget_bytes"] = budget;
    std::cout << JsonText(out) << "\n";
  } else {
    TextTable table({"strategy", ">largest " + o.vary, ">footprint"});
    for (const FitResult& r : results) {
      table.Add({r.strategy,
                 r.max_value > 0
                     ? std::to_string(r.max_value) + (r.at_key_limit ? " (the key's maximum)" : "")
                     : "none fits",
                 r.max_value > 0 ? HumanBytes(r.total_bytes) : "-"});
    }
    std::cout << o.common.model << " within " << HumanBytes(budget) << ":\n" << table.Render();
  }
  if (!any_fits) {
    return Fail(o.common.model + ": not even " + o.vary + " 1 fits the " + HumanBytes(budget) +
                    " budget under " +
                    (strategies.size() > 1 ? "any strategy" : "--strategy " + strategies[0]) +
                    "; give a larger budget",
                kExitFailed);
  }
  return kExitOk;
}

}  // namespace memfold::cli
