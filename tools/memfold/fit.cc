// `memfold fit MODEL --budget SIZE --vary batch|layers [--strategy S]`: the largest batch size
// (or depth) whose planned training step fits the budget, found by planning only (no
// execution): doubling then bisection for batch and layer counts, ResNet's published depths in
// order for its depth. Without --strategy every strategy is reported.
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "memfold/exec/training.h"
#include "memfold/io/text.h"
#include "memfold/passes/training_plan.h"
#include "memfold/zoo/zoo.h"
#include "progress.h"

namespace memfold::cli {
namespace {

using Json = nlohmann::ordered_json;

struct FitResult {
  std::string strategy;
  int64_t max_value = 0;  // 0: not even the smallest value fits
  int64_t total_bytes = 0;
  bool at_key_limit = false;  // max_value is the largest the zoo key accepts
};

// The largest value the zoo model's key accepts (its declared range).
int64_t KeyLimit(const std::string& model, const std::string& key) {
  const std::string name = model.substr(4, model.find(',') - 4);
  for (const ZooModel& m : ZooModels()) {
    if (m.name != name) continue;
    for (const ZooKey& k : m.keys) {
      if (k.name == key) return static_cast<int64_t>(k.max_value);
    }
  }
  return int64_t{1} << 20;
}

// Total bytes of `model` with key=value, or an error for a value the model refuses. Each try
// shows as progress and, with --verbose, as a timed line saying whether it fits `budget`.
Result<int64_t> Footprint(const std::string& model, const std::string& key, int64_t value,
                          const std::string& strategy, int64_t budget) {
  Phase phase("fit: " + strategy + ", " + key + "=" + std::to_string(value));
  MF_ASSIGN_OR_RETURN(Graph g, LoadModel(model + "," + key + "=" + std::to_string(value)));
  MF_ASSIGN_OR_RETURN(PlannedTraining p, PlanTraining(std::move(g), strategy));
  const int64_t total = p.profile.breakdown.total();
  phase.Done(HumanBytes(total) + (total <= budget ? ", fits" : ", over the budget"));
  return total;
}

Result<FitResult> FitOne(const std::string& model, const std::string& vary, int64_t budget,
                         const std::string& strategy) {
  FitResult r{strategy, 0, 0};
  const bool resnet = model.rfind("zoo:resnet", 0) == 0;
  if (vary == "layers" && resnet) {
    for (int64_t depth : {18, 34, 50, 101, 152, 200}) {
      MF_ASSIGN_OR_RETURN(int64_t bytes, Footprint(model, "depth", depth, strategy, budget));
      if (bytes > budget) break;
      r = {strategy, depth, bytes};
    }
    return r;
  }
  const std::string key = vary == "batch" ? "batch" : "layers";
  const int64_t limit = KeyLimit(model, key);
  int64_t lo = 0, hi = 1;  // lo fits (or is 0), hi is the next value to try
  while (true) {
    MF_ASSIGN_OR_RETURN(int64_t bytes, Footprint(model, key, hi, strategy, budget));
    if (bytes > budget) break;
    r = {strategy, hi, bytes, hi == limit};
    if (hi == limit) return r;
    lo = hi;
    hi = std::min(2 * hi, limit);
  }
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    MF_ASSIGN_OR_RETURN(int64_t bytes, Footprint(model, key, mid, strategy, budget));
    if (bytes <= budget) {
      r = {strategy, mid, bytes};
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return r;
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
  std::vector<std::string> strategies = {"none", "mirror", "echo"};
  if (o.strategy) strategies = {*o.strategy};
  std::vector<FitResult> results;
  for (const std::string& strategy : strategies) {
    Result<FitResult> r = FitOne(o.common.model, o.vary, budget, strategy);
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
