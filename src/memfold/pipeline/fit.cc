#include "memfold/pipeline/fit.h"

#include <algorithm>

#include "memfold/passes/training_plan.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/zoo/zoo.h"

namespace memfold {
namespace {

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

}  // namespace

Result<int64_t> TrainingFootprint(const std::string& model, const std::string& key, int64_t value,
                                  const std::string& strategy) {
  MF_ASSIGN_OR_RETURN(Graph g, LoadModel(model + "," + key + "=" + std::to_string(value)));
  MF_ASSIGN_OR_RETURN(PlannedTraining p, PlanTraining(std::move(g), strategy));
  return p.profile.breakdown.total();
}

Result<FitResult> FitLargest(const std::string& model, const std::string& vary, int64_t budget,
                             const std::string& strategy, const FootprintFn& footprint) {
  FitResult r{strategy, 0, 0};
  const bool resnet = model.rfind("zoo:resnet", 0) == 0;
  if (vary == "layers" && resnet) {
    for (int64_t depth : {18, 34, 50, 101, 152, 200}) {
      MF_ASSIGN_OR_RETURN(int64_t bytes, footprint("depth", depth));
      if (bytes > budget) break;
      r = {strategy, depth, bytes};
    }
    return r;
  }
  const std::string key = vary == "batch" ? "batch" : "layers";
  const int64_t limit = KeyLimit(model, key);
  int64_t lo = 0, hi = 1;  // lo fits (or is 0), hi is the next value to try
  while (true) {
    MF_ASSIGN_OR_RETURN(int64_t bytes, footprint(key, hi));
    if (bytes > budget) break;
    r = {strategy, hi, bytes, hi == limit};
    if (hi == limit) return r;
    lo = hi;
    hi = std::min(2 * hi, limit);
  }
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    MF_ASSIGN_OR_RETURN(int64_t bytes, footprint(key, mid));
    if (bytes <= budget) {
      r = {strategy, mid, bytes};
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return r;
}

}  // namespace memfold
