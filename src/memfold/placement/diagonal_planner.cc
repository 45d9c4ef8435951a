#include "memfold/placement/diagonal_planner.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <random>

namespace memfold {
namespace {

// O_s that `output` may overlap `input` with (0 if none).
int64_t Allowance(const BufferRequest& output, int32_t input) {
  for (const OverlapAllowance& a : output.may_overlap) {
    if (a.input == input) return a.max_bytes;
  }
  return 0;
}

// For each buffer, the most bytes live at any step of its lifetime. O(n log n + sum of
// lifetimes) with a sweep over dense steps.
std::vector<int64_t> BusiestStep(std::span<const BufferRequest> requests,
                                 const std::vector<int64_t>& sizes) {
  int32_t end = 0;
  for (const BufferRequest& r : requests) end = std::max(end, r.last);
  std::vector<int64_t> live(static_cast<size_t>(end) + 2, 0);
  for (const BufferRequest& r : requests) {
    live[static_cast<size_t>(r.first)] += sizes[static_cast<size_t>(r.id)];
    live[static_cast<size_t>(r.last) + 1] -= sizes[static_cast<size_t>(r.id)];
  }
  for (size_t t = 1; t < live.size(); ++t) live[t] += live[t - 1];
  std::vector<int64_t> busiest;
  for (const BufferRequest& r : requests) {
    busiest.push_back(*std::max_element(live.begin() + r.first, live.begin() + r.last + 1));
  }
  return busiest;
}

std::vector<int32_t> PlacementOrder(std::span<const BufferRequest> requests,
                                    const std::vector<int64_t>& sizes,
                                    DiagonalPlanner::Order order) {
  std::vector<int32_t> ids(requests.size());
  std::iota(ids.rbegin(), ids.rend(), 0);  // reverse request order, as TFLM breaks ties
  auto larger = [&](int32_t a, int32_t b) { return sizes[a] > sizes[b]; };
  switch (order) {
    case DiagonalPlanner::Order::kLargestFirst:
      std::stable_sort(ids.begin(), ids.end(), larger);
      break;
    case DiagonalPlanner::Order::kReverseExecution:
      std::stable_sort(ids.begin(), ids.end(),
                       [&](int32_t a, int32_t b) { return requests[a].first > requests[b].first; });
      break;
    case DiagonalPlanner::Order::kPeakFirst: {
      const std::vector<int64_t> busiest = BusiestStep(requests, sizes);
      std::stable_sort(ids.begin(), ids.end(), larger);
      std::stable_sort(ids.begin(), ids.end(),
                       [&](int32_t a, int32_t b) { return busiest[a] > busiest[b]; });
      break;
    }
  }
  return ids;
}

struct Range {
  int64_t lo;  // the offset may be <= lo ...
  int64_t hi;  // ... or >= hi
};

// The offsets buffer `b` may not take because of placed buffer `e` (an open interval).
Range Forbidden(const BufferRequest& b, int64_t size_b, const BufferRequest& e, int64_t offset_e,
                int64_t size_e) {
  if (const int64_t os = Allowance(b, e.id); os > 0 && e.last == b.first) {
    // b is the output and e its dying input: b may end up to O_s past e's start.
    return {offset_e - b.bytes + os, offset_e + size_e};
  }
  if (const int64_t os = Allowance(e, b.id); os > 0 && b.last == e.first) {
    // b is the dying input of output e: b may start O_s before e's payload ends.
    return {offset_e - size_b, offset_e + e.bytes - os};
  }
  return {offset_e - size_b, offset_e + size_e};
}

std::vector<int64_t> OccupiedSizes(std::span<const BufferRequest> requests) {
  std::vector<int64_t> sizes;
  sizes.reserve(requests.size());
  for (const BufferRequest& r : requests) sizes.push_back(AlignUp(r.bytes, r.alignment));
  return sizes;
}

// Each buffer's time-overlapping buffers (both with bytes), one flat list per buffer. Counted
// first by binary search, O(n log n), and built (when there are at most `max_entries`) by a
// sweep in order of first steps that meets each pair once, O(n log n + E).
class OverlapLists {
 public:
  OverlapLists(std::span<const BufferRequest> requests, std::span<const int64_t> sizes,
               int64_t max_entries)
      : begin_(ListStarts(requests, sizes)) {
    if (begin_.back() > max_entries) return;
    std::vector<int32_t> ids;
    for (const BufferRequest& r : requests)
      if (sizes[static_cast<size_t>(r.id)] > 0) ids.push_back(r.id);
    entries_.resize(static_cast<size_t>(begin_.back()));
    std::vector<int64_t> filled(begin_.begin(), begin_.end() - 1);
    std::stable_sort(ids.begin(), ids.end(),
                     [&](int32_t a, int32_t b) { return requests[a].first < requests[b].first; });
    std::vector<int32_t> active;  // started earlier, possibly still live
    for (int32_t id : ids) {
      std::erase_if(active, [&](int32_t e) { return requests[e].last < requests[id].first; });
      for (int32_t e : active) {
        entries_[static_cast<size_t>(filled[static_cast<size_t>(e)]++)] = id;
        entries_[static_cast<size_t>(filled[static_cast<size_t>(id)]++)] = e;
      }
      active.push_back(id);
    }
    built_ = true;
  }

  bool built() const { return built_; }
  std::span<const int32_t> of(int32_t id) const {
    return {entries_.data() + begin_[static_cast<size_t>(id)],
            entries_.data() + begin_[static_cast<size_t>(id) + 1]};
  }

 private:
  // Where each buffer's list starts: the running sum of its neighbour counts, each the buffers
  // starting by its last step minus those ended before its first (and itself).
  static std::vector<int64_t> ListStarts(std::span<const BufferRequest> requests,
                                         std::span<const int64_t> sizes) {
    std::vector<int32_t> firsts, lasts;
    for (const BufferRequest& r : requests) {
      if (sizes[static_cast<size_t>(r.id)] == 0) continue;
      firsts.push_back(r.first);
      lasts.push_back(r.last);
    }
    std::sort(firsts.begin(), firsts.end());
    std::sort(lasts.begin(), lasts.end());
    std::vector<int64_t> begin(requests.size() + 1, 0);
    for (const BufferRequest& r : requests) {
      if (sizes[static_cast<size_t>(r.id)] == 0) continue;
      const auto started = std::upper_bound(firsts.begin(), firsts.end(), r.last);
      const auto ended = std::lower_bound(lasts.begin(), lasts.end(), r.first);
      begin[static_cast<size_t>(r.id) + 1] =
          (started - firsts.begin()) - (ended - lasts.begin()) - 1;
    }
    std::partial_sum(begin.begin(), begin.end(), begin.begin());
    return begin;
  }

  std::vector<int64_t> begin_;  // buffer id's list is entries_[begin_[id], begin_[id + 1])
  std::vector<int32_t> entries_;
  bool built_ = false;
};

// Enough for every buffer of a 100k-buffer training graph to meet a few hundred others.
constexpr int64_t kMaxOverlapEntries = int64_t{1} << 25;

// Places buffers one by one in a placement order, each at the lowest aligned offset its
// placed, time-overlapping neighbours allow. With overlap lists a placement costs O(k log k)
// for k neighbours; without (too many pairs to list) it scans every placed buffer, O(n).
// After a change of the order at position p only positions p.. are placed again.
class OrderedPlacement {
 public:
  // `lists` are those of `requests` (built or not) with occupied `sizes`.
  OrderedPlacement(std::span<const BufferRequest> requests, std::vector<int64_t> sizes,
                   OverlapLists lists, std::vector<int32_t> order)
      : requests_(requests),
        sizes_(std::move(sizes)),
        lists_(std::move(lists)),
        order_(std::move(order)),
        position_(requests.size(), 0),
        offsets_(requests.size(), 0),
        top_(order_.size(), 0) {
    for (size_t k = 0; k < order_.size(); ++k) position_[static_cast<size_t>(order_[k])] = k;
    PlaceFrom(0);
  }

  int64_t arena_bytes() const { return top_.empty() ? 0 : top_.back(); }
  size_t size() const { return order_.size(); }
  // Neighbour checks done so far, plus one per placement.
  int64_t work() const { return work_; }

  // Swaps positions i and j and places again from the first of them.
  void Swap(size_t i, size_t j) {
    std::swap(order_[i], order_[j]);
    position_[static_cast<size_t>(order_[i])] = i;
    position_[static_cast<size_t>(order_[j])] = j;
    const size_t from = std::min(i, j);
    saved_offsets_.clear();
    for (size_t k = from; k < order_.size(); ++k)
      saved_offsets_.push_back(offsets_[static_cast<size_t>(order_[k])]);
    saved_top_.assign(top_.begin() + static_cast<std::ptrdiff_t>(from), top_.end());
    PlaceFrom(from);
  }

  // Undoes the last Swap(i, j) without placing anything.
  void Unswap(size_t i, size_t j) {
    const size_t from = std::min(i, j);
    for (size_t k = from; k < order_.size(); ++k)  // saved in the swapped order
      offsets_[static_cast<size_t>(order_[k])] = saved_offsets_[k - from];
    std::copy(saved_top_.begin(), saved_top_.end(),
              top_.begin() + static_cast<std::ptrdiff_t>(from));
    std::swap(order_[i], order_[j]);
    position_[static_cast<size_t>(order_[i])] = i;
    position_[static_cast<size_t>(order_[j])] = j;
  }

  Plan ToPlan(std::string planner) const {
    return Plan{.planner = std::move(planner), .arena_bytes = arena_bytes(), .offsets = offsets_};
  }

 private:
  void PlaceFrom(size_t from) {
    for (size_t k = from; k < order_.size(); ++k) {
      const int32_t id = order_[k];
      const int64_t offset = LowestFreeOffset(id, k);
      offsets_[static_cast<size_t>(id)] = offset;
      top_[k] = std::max(k > 0 ? top_[k - 1] : 0, offset + sizes_[static_cast<size_t>(id)]);
    }
  }

  int64_t LowestFreeOffset(int32_t id, size_t at) {
    const BufferRequest& b = requests_[id];
    ranges_.clear();
    ++work_;  // a placement costs at least one check, even with no neighbour
    auto meet = [&](int32_t e) {
      ranges_.push_back(Forbidden(b, sizes_[static_cast<size_t>(id)], requests_[e],
                                  offsets_[static_cast<size_t>(e)],
                                  sizes_[static_cast<size_t>(e)]));
    };
    if (lists_.built()) {
      const std::span<const int32_t> met = lists_.of(id);
      work_ += static_cast<int64_t>(met.size());
      for (int32_t e : met)
        if (position_[static_cast<size_t>(e)] < at) meet(e);
    } else {
      work_ += static_cast<int64_t>(at);
      for (size_t k = 0; k < at; ++k) {
        const int32_t e = order_[k];
        const BufferRequest& other = requests_[e];
        if (other.first <= b.last && b.first <= other.last && sizes_[static_cast<size_t>(e)] > 0 &&
            sizes_[static_cast<size_t>(id)] > 0)
          meet(e);
      }
    }
    std::sort(ranges_.begin(), ranges_.end(),
              [](const Range& x, const Range& y) { return x.lo < y.lo; });
    int64_t offset = 0;
    for (const Range& r : ranges_) {
      if (r.lo >= offset) break;  // sorted by lo: no later range can contain `offset` either
      if (r.hi > offset) offset = AlignUp(r.hi, b.alignment);
    }
    return offset;
  }

  std::span<const BufferRequest> requests_;
  std::vector<int64_t> sizes_;
  OverlapLists lists_;
  std::vector<int32_t> order_;
  std::vector<size_t> position_;  // per buffer: its place in order_
  std::vector<int64_t> offsets_;  // per buffer
  std::vector<int64_t> top_;      // per position: the highest end among positions 0..k
  int64_t work_ = 0;
  std::vector<Range> ranges_;           // scratch
  std::vector<int64_t> saved_offsets_;  // what Swap replaced, for Unswap
  std::vector<int64_t> saved_top_;
};

}  // namespace

std::optional<Plan> SearchPlacementOrder(std::span<const BufferRequest> requests,
                                         std::vector<int32_t> order, int64_t floor,
                                         const SearchBudget& budget, const std::string& planner) {
  std::vector<int64_t> sizes = OccupiedSizes(requests);
  OverlapLists lists(requests, sizes, kMaxOverlapEntries);
  if (!lists.built()) return std::nullopt;
  OrderedPlacement placement(requests, std::move(sizes), std::move(lists), std::move(order));
  Plan best = placement.ToPlan(planner);
  int64_t current = best.arena_bytes;
  std::mt19937 random(20261129);
  const auto n = static_cast<uint32_t>(placement.size());
  // Swaps are drawn from the last `window` positions, where a move re-places at most that
  // many buffers: all of them while the budget covers `moves` full placements, else as many
  // as it covers (the order's tail is where the highest offsets are placed).
  const double full = std::max<double>(1.0, static_cast<double>(placement.work()));
  const auto window = static_cast<uint32_t>(std::clamp<double>(
      static_cast<double>(budget.neighbour_checks) / std::max(1, budget.moves) / full * n, 2.0,
      std::max(2U, n)));
  const uint32_t start = n - window;
  for (int32_t move = 0; move < budget.moves && n > 1 && best.arena_bytes > floor &&
                         placement.work() < budget.neighbour_checks;
       ++move) {
    const uint32_t i = start + random() % window, j = start + random() % window;
    if (i == j) continue;  // the same order: the same plan
    placement.Swap(i, j);
    if (placement.arena_bytes() > current) {
      placement.Unswap(i, j);
      continue;
    }
    current = placement.arena_bytes();
    if (current < best.arena_bytes) best = placement.ToPlan(planner);
  }
  return best;
}

Plan DiagonalPlanner::Place(std::span<const BufferRequest> requests) const {
  std::vector<int64_t> sizes = OccupiedSizes(requests);
  OverlapLists lists(requests, sizes, kMaxOverlapEntries);
  std::vector<int32_t> order = PlacementOrder(requests, sizes, order_);
  const OrderedPlacement placement(requests, std::move(sizes), std::move(lists), std::move(order));
  return placement.ToPlan(std::string(name()));
}

}  // namespace memfold
