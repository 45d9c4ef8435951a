// The re-ordering search's local improvement: one node moved within its dependence window
// across the first step at the peak (schedule_local.cc).
// Internal to the re-ordering search (passes/schedule.h, which documents the method).
#pragma once

#include <cstdint>
#include <vector>

#include "memfold/passes/schedule_model.h"

namespace memfold::schedule_detail {

// First-improvement hill climbing from `order` until no move across the peak helps or `budget`
// node steps have been walked.
std::vector<NodeId> ImproveLocally(const StepModel& model, std::vector<NodeId> order,
                                   int64_t budget);

}  // namespace memfold::schedule_detail
