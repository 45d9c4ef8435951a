#include "memfold/placement/planner.h"

namespace memfold {

Plan NaivePlanner::Place(std::span<const BufferRequest> requests) const {
  Plan plan{.planner = std::string(name()), .arena_bytes = 0, .offsets = {}};
  plan.offsets.reserve(requests.size());
  for (const BufferRequest& request : requests) {
    const int64_t offset = AlignUp(plan.arena_bytes, request.alignment);
    plan.offsets.push_back(offset);
    plan.arena_bytes = offset + AlignUp(request.bytes, request.alignment);
  }
  return plan;
}

}  // namespace memfold
