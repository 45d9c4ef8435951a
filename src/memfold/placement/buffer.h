// Buffer requests and plans: the only vocabulary planners share with the rest of memfold.
//
// A planner sees each tensor as a BufferRequest (size, alignment, inclusive lifetime in time
// steps, optional overlap allowances) and answers with a Plan (one arena offset per request).
// Nothing here knows about graphs. Preconditions every planner relies on: requests[i].id == i,
// bytes >= 0, alignment > 0, first <= last. VerifyPlan checks them for data from users.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace memfold {

// The output buffer `id` may overlap the START of buffer `input` by up to `max_bytes`: the
// input may begin as early as output_offset + output_bytes - max_bytes (diagonal memory
// optimisation). Only valid when input.last == this.first (the input dies at the op that
// creates this buffer).
struct OverlapAllowance {
  int32_t input;
  int64_t max_bytes;
};

struct BufferRequest {
  int32_t id;              // index of this request in the request vector
  int64_t bytes;           // payload size
  int64_t alignment = 16;  // offset alignment; occupied size is bytes rounded up to this
  int32_t first;           // first time step it is live (inclusive)
  int32_t last;            // last time step it is live (inclusive)
  std::vector<OverlapAllowance> may_overlap;  // empty for TFLM-style planning
  // >= 0: the buffer must sit at this offset (an offline plan from the model file, as TFLM's
  // planners accept); planners that honour it say so.
  int64_t fixed_offset = kNotFixed;
  static constexpr int64_t kNotFixed = -1;
};

struct Plan {
  std::string planner;
  int64_t arena_bytes = 0;
  std::vector<int64_t> offsets;  // offsets[i] belongs to requests[i]
};

// Smallest multiple of `alignment` that is >= `value`. Requires value >= 0, alignment > 0.
// Powers of two (every alignment memfold asks for) take a mask instead of a 64-bit division,
// which dominated the greedy planner's gap search.
inline int64_t AlignUp(int64_t value, int64_t alignment) {
  if ((alignment & (alignment - 1)) == 0) return (value + alignment - 1) & -alignment;
  return (value + alignment - 1) / alignment * alignment;
}

}  // namespace memfold
