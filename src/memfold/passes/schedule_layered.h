// The re-ordering search's layered search over executed-node sets: exact dynamic programming
// with pruning, a beam when layers are capped, greedy with a cap of one (schedule_layered.cc).
// Internal to the re-ordering search (passes/schedule.h, which documents the method).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "memfold/passes/schedule_model.h"

namespace memfold::schedule_detail {

constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();
constexpr int64_t kMinBeamWidth = 8;  // states a beam keeps per layer, at least

struct SearchOutcome {
  std::optional<std::vector<NodeId>> order;  // an order whose peak is below the bound
  int64_t peak = 0;
  int64_t states = 0;
  bool out_of_budget = false;
  bool truncated = false;  // a layer was cut to layer_cap: the search was not exhaustive
};

// Looks for an order with peak < `bound`. `position`: each node's position in the file's order
// (ties break by it). `max_states`: give up after storing that many states; `layer_cap`: keep
// at most that many states per layer (1 = greedy).
SearchOutcome LayeredOrderSearch(const StepModel& model, const std::vector<int32_t>& position,
                                 int64_t bound, int64_t max_states, int32_t layer_cap);

}  // namespace memfold::schedule_detail
