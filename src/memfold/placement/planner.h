// The placement core's common interface: a Planner maps buffer requests to one arena offset
// each, so that buffers whose lifetimes intersect never share bytes (apart from the overlaps a
// request allows, for the planners that use them). Planners know nothing about graphs and are
// deterministic: the same requests give the same plan. Users name planning strategies, not these
// classes: the one registry of names is plan/strategies.h.
// Preconditions: see buffer.h (ids equal indices, bytes >= 0, alignment > 0, first <= last).
#pragma once

#include <span>
#include <string_view>

#include "memfold/placement/buffer.h"

namespace memfold {

class Planner {
 public:
  virtual ~Planner() = default;
  virtual std::string_view name() const = 0;
  virtual Plan Place(std::span<const BufferRequest> requests) const = 0;
};

// Every buffer its own memory, in request order: the upper bound every other planner must
// beat. O(n).
class NaivePlanner final : public Planner {
 public:
  std::string_view name() const override { return "naive"; }
  Plan Place(std::span<const BufferRequest> requests) const override;
};

}  // namespace memfold
