// Helpers shared by the placement module's tests. Header-only, for test targets; O(1).
#pragma once

#include <cstdint>
#include <random>

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

// A uniform draw from [lo, hi].
inline int64_t Uniform(std::mt19937& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

}  // namespace memfold
