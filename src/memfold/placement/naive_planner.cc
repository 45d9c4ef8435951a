// The naive planner: no reuse at all, the upper bound every other planner must beat.

#include "memfold/placement/planner.h"

namespace memfold {
namespace {

class NaivePlanner final : public Planner {
 public:
  std::string_view name() const override { return "naive"; }

  Plan Place(std::span<const BufferRequest> requests) const override {
    Plan plan{.planner = std::string(name()), .arena_bytes = 0, .offsets = {}};
    plan.offsets.reserve(requests.size());
    for (const BufferRequest& request : requests) {
      const int64_t offset = AlignUp(plan.arena_bytes, request.alignment);
      plan.offsets.push_back(offset);
      plan.arena_bytes = offset + AlignUp(request.bytes, request.alignment);
    }
    return plan;
  }
};

}  // namespace

std::unique_ptr<Planner> MakeNaivePlanner() { return std::make_unique<NaivePlanner>(); }

}  // namespace memfold
