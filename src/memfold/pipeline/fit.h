// `memfold fit`'s search: the largest batch size (or depth) of a zoo training model whose
// planned training step fits a memory budget, found by planning only (no execution): doubling
// then bisection for batch and layer counts, ResNet's published depths in order for its depth.
// Cost: O(log(limit)) training plans.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "memfold/base/status.h"

namespace memfold {

struct FitResult {
  std::string strategy;
  int64_t max_value = 0;  // 0: not even the smallest value fits
  int64_t total_bytes = 0;
  bool at_key_limit = false;  // max_value is the largest the zoo key accepts
};

// Total bytes of one training step of `model` with key=value, planned under `strategy`; an
// error for a value the model refuses.
Result<int64_t> TrainingFootprint(const std::string& model, const std::string& key, int64_t value,
                                  const std::string& strategy);

// What each try costs: TrainingFootprint, or a caller's wrapper of it (progress, timing).
using FootprintFn = std::function<Result<int64_t>(const std::string& key, int64_t value)>;

// `vary`: "batch" or "layers" (for ResNet: its depth). Precondition: `model` is "zoo:NAME...".
Result<FitResult> FitLargest(const std::string& model, const std::string& vary, int64_t budget,
                             const std::string& strategy, const FootprintFn& footprint);

}  // namespace memfold
