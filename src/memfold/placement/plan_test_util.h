// Helpers shared by the planner tests (greedy_planner_test.cc, lower_bound_test.cc,
// planner_test.cc, verify_plan_test.cc). Header-only, for test targets; O(1).
#pragma once

#include <cstdint>

#include "memfold/placement/buffer.h"

namespace memfold {

// A buffer request of `bytes`, live from step `first` to step `last` inclusive, with no
// overlap allowances and no fixed offset.
inline BufferRequest Request(int32_t id, int64_t bytes, int32_t first, int32_t last,
                             int64_t alignment = 16) {
  return {.id = id,
          .bytes = bytes,
          .alignment = alignment,
          .first = first,
          .last = last,
          .may_overlap = {}};
}

}  // namespace memfold
