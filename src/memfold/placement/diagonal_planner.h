// The diagonal planner (diagonal memory optimisation): like greedy first-fit placement, but
// an output may overlap the start of an input that dies at its op by up to the proven safe
// overlap O_s (BufferRequest::may_overlap), in either placement order of the two buffers.
//
// Each buffer takes the lowest aligned offset outside the forbidden ranges its placed,
// time-overlapping neighbours impose: [o - size, o + size_e) for an unrelated neighbour e,
// shrunk by O_s on the side where the pair may overlap. Three placement orders:
//   kLargestFirst     TFLM's greedy order (size, largest first; ties in reverse request order)
//   kReverseExecution the paper's heap allocation in reverse execution order (latest first use
//                     first), which lets each input be placed against its consumer's output.
//   kPeakFirst        buffers live at the busiest steps first (by the most bytes live at any
//                     step of their lifetime, then size): the peak's producer/consumer pairs
//                     settle their overlaps before smaller buffers take the low offsets.
// Complexity O(n log n + E + n k log k) for E time-overlapping pairs and k time-overlapping
// neighbours per buffer (O(n^2) time and no lists when there are too many pairs to list).
// SearchPlacementOrder looks for a better order than these three by local search (plan_graph.h
// RefinePlan).
#pragma once

#include <optional>

#include "memfold/placement/planner.h"

namespace memfold {

// How long SearchPlacementOrder may look: at most `moves` swaps and about `neighbour_checks`
// neighbour checks in all (a placement checks each buffer against the placed buffers live at
// the same time as it).
struct SearchBudget {
  int32_t moves = 1000;
  int64_t neighbour_checks = 0;
};

// Local search over placement orders: from `order`, swaps two positions drawn by a fixed-seed
// generator and keeps the swap unless the arena grows (plateaus are crossed); stops when the
// budget is spent or the arena reaches `floor`. Returns the smallest plan seen, named
// `planner`. Each buffer's time-overlapping neighbours are listed once (a sweep, O(n log n +
// E) for E overlapping pairs) and a swap at positions i < j places only positions i.. again,
// so a move costs the neighbour checks of the buffers from i on, not n^2 / 2. Returns nothing
// when the lists would pass 2^25 entries (32 million): a training step's stashed feature maps
// are live together, so its graph is dense (DeepSpeech2's 74k buffers have 627 million) and
// is not searched. Deterministic.
std::optional<Plan> SearchPlacementOrder(std::span<const BufferRequest> requests,
                                         std::vector<int32_t> order, int64_t floor,
                                         const SearchBudget& budget, const std::string& planner);

class DiagonalPlanner final : public Planner {
 public:
  enum class Order { kLargestFirst, kReverseExecution, kPeakFirst };
  explicit DiagonalPlanner(Order order) : order_(order) {}
  std::string_view name() const override {
    switch (order_) {
      case Order::kLargestFirst:
        return "diagonal_greedy";
      case Order::kReverseExecution:
        return "diagonal_reverse";
      case Order::kPeakFirst:
        return "diagonal_peak";
    }
    return "diagonal";
  }
  Plan Place(std::span<const BufferRequest> requests) const override;

 private:
  Order order_;
};

}  // namespace memfold
