// `memfold compare`'s measurements of one model: every inference planner's arena, the lower
// bounds, the analytic-vs-exact safe-overlap gap, the diagonal planning time, and whether the
// greedy and diagonal plans run like the unplanned model at every read. Cost: the planners'
// and two checked runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "memfold/base/status.h"

namespace memfold {

struct PlannerComparison {
  std::string model;
  size_t ops = 0;
  int64_t naive = 0, greedy = 0, greedy_stable = 0, diagonal = 0, lower_bound = 0,
          diagonal_bound = 0;
  double overlap_gap = 0;  // (exact - analytic) / exact over all operators, in %
  double plan_ms = 0;      // diagonal planning, including the safe-overlap analysis
  std::string runs;        // "yes", "NO", or why it cannot run
};

Result<PlannerComparison> ComparePlanners(const std::string& model);

}  // namespace memfold
