#include "memfold/passes/schedule_local.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstdlib>
#include <tuple>
#include <utility>
#include <vector>

#include "memfold/passes/schedule_model.h"

namespace memfold::schedule_detail {
namespace {

// ---------------------------------------------------------------------------------------------
// Local improvement: move one node within its dependence window, across the first step at
// the peak.

// Orders compare by peak, then by how many steps reach it (fewer is progress towards a lower
// peak), then by the sum of all steps.
struct Score {
  int64_t peak = 0;
  int64_t at_peak = 0;
  int64_t area = 0;
  bool operator<(const Score& o) const {
    return std::tuple(peak, at_peak, area) < std::tuple(o.peak, o.at_peak, o.area);
  }
  // This score joined with the steps of another part of the order.
  Score With(const Score& part) const {
    const int64_t top = std::max(peak, part.peak);
    return {top, (peak == top ? at_peak : 0) + (part.peak == top ? part.at_peak : 0),
            area + part.area};
  }
  Score With(int64_t cost) const { return With(Score{cost, 1, cost}); }
};

// Moving the node at position i to position j changes only the steps between the two: the
// same nodes have run before and after them. So a move is scored by walking that stretch
// alone, joined with prefix and suffix scores of the current order.
class LocalSearch {
 public:
  LocalSearch(const StepModel& model, std::vector<NodeId> order)
      : model_(model), order_(std::move(order)) {
    Rebuild();
  }

  // First-improvement hill climbing until no move across the peak helps or `budget` node
  // steps have been walked.
  std::vector<NodeId> Run(int64_t budget) {
    while (budget > 0 && ImproveOnce(&budget)) {
      [[maybe_unused]] const Score predicted = predicted_;
      Rebuild();
      assert(!(predicted < total()) && !(total() < predicted));  // the stretch walk was exact
    }
    return std::move(order_);
  }

 private:
  int32_t size() const { return static_cast<int32_t>(order_.size()); }
  Score total() const { return prefix_.back().With(Score{model_.fixed_peak(), 0, 0}); }

  void Rebuild() {
    const std::vector<Step> steps = model_.StepsOf(order_);
    const auto n = static_cast<size_t>(size());
    position_.assign(n, 0);
    for (size_t i = 0; i < n; ++i)
      position_[static_cast<size_t>(order_[i])] = static_cast<int32_t>(i);
    live_before_.assign(n + 1, model_.initial_live());
    prefix_.assign(n + 1, Score{});
    suffix_.assign(n + 1, Score{});
    for (size_t i = 0; i < n; ++i) {
      live_before_[i + 1] = steps[i].live_after;
      prefix_[i + 1] = prefix_[i].With(steps[i].cost);
    }
    for (size_t i = n; i-- > 0;) suffix_[i] = suffix_[i + 1].With(steps[i].cost);
  }

  bool ImproveOnce(int64_t* budget) {
    const Score current = total();
    int32_t peak = 0;
    while (peak < size() && prefix_[static_cast<size_t>(peak) + 1].peak < current.peak) ++peak;
    if (peak == size()) return false;  // the steps no order changes set the peak
    for (int32_t i = 0; i < size() && *budget > 0; ++i) {
      const auto [lo, hi] = Window(i);
      if (lo > peak || hi < peak) continue;
      // Only moves that carry the node across the peak step (or move the peak's own node).
      const int32_t from = i < peak ? std::max(peak, lo) : lo;
      const int32_t to = i > peak ? std::min(peak, hi) : hi;
      for (int32_t j = from; j <= to && *budget > 0; ++j) {
        if (j == i) continue;
        *budget -= std::abs(j - i) + 1;
        predicted_ = MoveScore(i, j);
        if (predicted_ < current) {
          Move(i, j);
          return true;
        }
      }
    }
    return false;
  }

  // Positions the node at position i may take: after its last predecessor, before its first
  // successor.
  std::pair<int32_t, int32_t> Window(int32_t i) const {
    const NodeInfo& info = model_.node(order_[static_cast<size_t>(i)]);
    int32_t lo = 0, hi = size() - 1;
    for (NodeId m : info.preds) lo = std::max(lo, position_[static_cast<size_t>(m)] + 1);
    for (NodeId m : info.succs) hi = std::min(hi, position_[static_cast<size_t>(m)] - 1);
    return {lo, hi};
  }

  Score MoveScore(int32_t i, int32_t j) const {
    const int32_t a = std::min(i, j), b = std::max(i, j);
    const NodeId moved = order_[static_cast<size_t>(i)];
    // Position of node m after the move.
    auto moved_to = [&](NodeId m) {
      const int32_t p = position_[static_cast<size_t>(m)];
      if (m == moved) return j;
      if (p < a || p > b) return p;
      return i < j ? p - 1 : p + 1;
    };
    Score part{};
    int64_t live = live_before_[static_cast<size_t>(a)];
    for (int32_t q = a; q <= b; ++q) {
      const NodeId node = q == j ? moved : order_[static_cast<size_t>(i < j ? q + 1 : q - 1)];
      const Step step = model_.StepOf(node, live, [&](NodeId m) { return moved_to(m) < q; });
      part = part.With(step.cost);
      live = step.live_after;
    }
    return prefix_[static_cast<size_t>(a)]
        .With(part)
        .With(suffix_[static_cast<size_t>(b) + 1])
        .With(Score{model_.fixed_peak(), 0, 0});
  }

  void Move(int32_t i, int32_t j) {
    const NodeId node = order_[static_cast<size_t>(i)];
    order_.erase(order_.begin() + i);
    order_.insert(order_.begin() + j, node);
  }

  const StepModel& model_;
  std::vector<NodeId> order_;
  std::vector<int32_t> position_;
  std::vector<int64_t> live_before_;  // live bytes before each position (and after the last)
  std::vector<Score> prefix_;         // prefix_[k]: steps at positions < k
  std::vector<Score> suffix_;         // suffix_[k]: steps at positions >= k
  Score predicted_;                   // the score of the last move tried
};

}  // namespace

std::vector<NodeId> ImproveLocally(const StepModel& model, std::vector<NodeId> order,
                                   int64_t budget) {
  return LocalSearch(model, std::move(order)).Run(budget);
}

}  // namespace memfold::schedule_detail
