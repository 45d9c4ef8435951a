// Planners: place buffer requests in one arena, chosen by name.
//
// A Planner maps requests to offsets so that buffers whose lifetimes intersect never share
// bytes (planners may ignore overlap allowances; none of the current ones use them). Planners
// know nothing about graphs and are deterministic: the same requests give the same plan.
// Preconditions: see buffer.h (ids equal indices, bytes >= 0, alignment > 0, first <= last).
// Registered planners:
//   naive   every buffer its own memory, in request order; O(n).
//   greedy  TFLM's GreedyMemoryPlanner, result-identical; see greedy_planner.h.
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "memfold/placement/buffer.h"

namespace memfold {

class Planner {
 public:
  virtual ~Planner() = default;
  virtual std::string_view name() const = 0;
  virtual Plan Place(std::span<const BufferRequest> requests) const = 0;
};

// The planner registered under `name`, or nullptr if there is none.
std::unique_ptr<Planner> MakePlanner(std::string_view name);

// Names of all registered planners, in registration order.
std::vector<std::string_view> PlannerNames();

// The naive planner (defined in naive_planner.cc); usually reached through MakePlanner.
std::unique_ptr<Planner> MakeNaivePlanner();

}  // namespace memfold
