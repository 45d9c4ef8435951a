#include "memfold/placement/greedy_planner.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <numeric>

namespace memfold {
namespace {

// TFLM's placement order: the requests without a fixed offset in reverse request order
// (or request order for the stable variant), stably sorted by size, largest first.
std::vector<int32_t> PlacementOrder(std::span<const BufferRequest> requests,
                                    std::span<const int64_t> sizes, GreedyPlanner::TieOrder ties) {
  std::vector<int32_t> order;
  for (int32_t id = 0; id < static_cast<int32_t>(requests.size()); ++id) {
    if (requests[id].fixed_offset == BufferRequest::kNotFixed) order.push_back(id);
  }
  if (ties == GreedyPlanner::TieOrder::kReverseRequest) std::reverse(order.begin(), order.end());
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return sizes[a] > sizes[b]; });
  return order;
}

// Maps the distinct time steps of the requests to dense indices 0..size()-1.
class TimeAxis {
 public:
  explicit TimeAxis(std::span<const BufferRequest> requests) {
    steps_.reserve(2 * requests.size());
    for (const BufferRequest& request : requests) {
      steps_.push_back(request.first);
      steps_.push_back(request.last);
    }
    std::sort(steps_.begin(), steps_.end());
    steps_.erase(std::unique(steps_.begin(), steps_.end()), steps_.end());
  }

  int32_t size() const { return static_cast<int32_t>(steps_.size()); }

  int32_t Index(int32_t step) const {
    return static_cast<int32_t>(std::lower_bound(steps_.begin(), steps_.end(), step) -
                                steps_.begin());
  }

 private:
  std::vector<int32_t> steps_;
};

// Placed buffers indexed by lifetime (dense steps). A buffer live during [first, last] is
// either live at `first` (found by a stabbing query on a segment tree that stores each
// lifetime in O(log T) nodes) or starts within (first, last] (found in per-step lists).
// The two sets are disjoint, so each placed buffer is reported at most once. A Fenwick tree
// over the per-step start counts makes counting O(log T).
class LifetimeIndex {
 public:
  explicit LifetimeIndex(int32_t steps)
      : leaves_(static_cast<int32_t>(std::bit_ceil(static_cast<uint32_t>(std::max(steps, 1))))),
        nodes_(2 * static_cast<size_t>(leaves_)),
        starts_(steps),
        started_by_(static_cast<size_t>(steps) + 1, 0) {}

  void Add(int32_t slot, int32_t first, int32_t last) {
    starts_[first].push_back(slot);
    for (size_t k = static_cast<size_t>(first) + 1; k < started_by_.size(); k += k & (~k + 1))
      ++started_by_[k];
    for (int32_t lo = first + leaves_, hi = last + leaves_ + 1; lo < hi; lo >>= 1, hi >>= 1) {
      if (lo & 1) nodes_[lo++].push_back(slot);
      if (hi & 1) nodes_[--hi].push_back(slot);
    }
  }

  // Number of added slots whose lifetime intersects [first, last].
  size_t Count(int32_t first, int32_t last) const {
    size_t count = 0;
    for (int32_t node = first + leaves_; node > 0; node >>= 1) count += nodes_[node].size();
    return count + StartedBy(last) - StartedBy(first);
  }

  // Appends to `slots` every added slot whose lifetime intersects [first, last].
  void Collect(int32_t first, int32_t last, std::vector<int32_t>& slots) const {
    for (int32_t node = first + leaves_; node > 0; node >>= 1) {
      slots.insert(slots.end(), nodes_[node].begin(), nodes_[node].end());
    }
    for (int32_t step = first + 1; step <= last; ++step) {
      slots.insert(slots.end(), starts_[step].begin(), starts_[step].end());
    }
  }

 private:
  int32_t leaves_;
  std::vector<std::vector<int32_t>> nodes_;
  // Slots added with a first step <= `step`.
  size_t StartedBy(int32_t step) const {
    size_t count = 0;
    for (auto k = static_cast<size_t>(step) + 1; k > 0; k -= k & (~k + 1)) count += started_by_[k];
    return count;
  }

  std::vector<std::vector<int32_t>> starts_;
  std::vector<size_t> started_by_;  // Fenwick tree: started_by_[k] sums a range ending at step k-1
};

// A placed buffer with its dense lifetime. `slot` is its position in placement order, TFLM's
// tie-break among equal offsets (a new list entry goes after the entries with the same offset).
struct Placed {
  int64_t offset;
  int64_t end;
  int32_t slot;
  int32_t first;
  int32_t last;

  bool LiveDuring(int32_t from, int32_t to) const { return first <= to && from <= last; }
};

struct ByOffsetThenSlot {
  bool operator()(const Placed& a, const Placed& b) const {
    return a.offset != b.offset ? a.offset < b.offset : a.slot < b.slot;
  }
};

// TFLM's gap search. Fed the placed buffers live at the same time in (offset, slot) order, it
// raises the candidate to the highest end seen so far until the gap before the next buffer fits.
// Requires size > 0 (a buffer of no bytes always lands at 0).
class GapSearch {
 public:
  GapSearch(int64_t size, int64_t alignment) : size_(size), alignment_(alignment) {}

  // Returns false once the gap before `entry` fits: the candidate is then final.
  bool Continue(const Placed& entry) {
    if (entry.offset - candidate_ >= size_) return false;
    Raise(entry.end);
    return true;
  }

  // What Continue does for a run of buffers none of which can end the search.
  void Raise(int64_t end) { candidate_ = AlignUp(std::max(candidate_, end), alignment_); }

  int64_t size() const { return size_; }
  int64_t candidate() const { return candidate_; }

 private:
  int64_t size_;
  int64_t alignment_;
  int64_t candidate_ = 0;
};

// All placed buffers in (offset, slot) order, in blocks of up to 2 * kBlock consecutive
// buffers. Each block keeps a summary that lets the gap search pass over it in O(1) when
// walking it could not change the result: every buffer of the block ends at or below the
// candidate (none can raise it or fit a gap), or every buffer is live during the query and no
// gap before one of them can fit. Long-lived buffers of a training step are all live together,
// so the walk that costs TFLM O(p) per buffer costs O(p / kBlock + kBlock) here. Inserting is
// O(log p + kBlock).
class OffsetOrder {
 public:
  void Insert(const Placed& entry) {
    if (blocks_.empty()) {
      blocks_.emplace_back().entries.push_back(entry);
      blocks_.back().Summarize();
      return;
    }
    // The first block whose last buffer lies above the new one (equal offsets: after them).
    auto block = std::upper_bound(
        blocks_.begin(), blocks_.end(), entry.offset,
        [](int64_t offset, const Block& b) { return offset < b.entries.back().offset; });
    if (block == blocks_.end()) --block;
    auto at = std::upper_bound(block->entries.begin(), block->entries.end(), entry.offset,
                               [](int64_t offset, const Placed& e) { return offset < e.offset; });
    block->entries.insert(at, entry);
    if (block->entries.size() > 2 * kBlock) {
      Block upper;
      upper.entries.assign(block->entries.begin() + kBlock, block->entries.end());
      block->entries.resize(kBlock);
      block->Summarize();
      upper.Summarize();
      blocks_.insert(block + 1, std::move(upper));
    } else {
      block->Summarize();
    }
  }

  // Feeds `search` the buffers live during [first, last] in (offset, slot) order, skipping
  // blocks that cannot matter, until it stops.
  void Search(int32_t first, int32_t last, GapSearch& search) const {
    for (const Block& block : blocks_) {
      if (block.max_end <= search.candidate()) continue;
      if (block.AllLiveDuring(first, last) && !block.MayFit(search)) {
        search.Raise(block.max_end);
        continue;
      }
      for (const Placed& entry : block.entries) {
        if (entry.LiveDuring(first, last) && !search.Continue(entry)) return;
      }
    }
  }

 private:
  static constexpr size_t kBlock = 32;

  struct Block {
    std::vector<Placed> entries;  // never empty once summarized
    int64_t max_end = 0;
    int32_t max_first = 0;
    int32_t min_last = 0;
    // The largest gap between a buffer (after the first) and the highest end before it
    // within the block: a gap search cannot stop inside the block at a smaller one.
    int64_t inner_gap = 0;

    void Summarize() {
      max_end = entries[0].end;
      max_first = entries[0].first;
      min_last = entries[0].last;
      inner_gap = std::numeric_limits<int64_t>::min();
      for (size_t k = 1; k < entries.size(); ++k) {
        inner_gap = std::max(inner_gap, entries[k].offset - max_end);
        max_end = std::max(max_end, entries[k].end);
        max_first = std::max(max_first, entries[k].first);
        min_last = std::min(min_last, entries[k].last);
      }
    }

    bool AllLiveDuring(int32_t from, int32_t to) const {
      return max_first <= to && from <= min_last;
    }

    // False only if no buffer of the block can end the search: the candidate when it reaches
    // a buffer is at least the incoming candidate and at least the ends before it in the block.
    bool MayFit(const GapSearch& search) const {
      const int64_t c = search.candidate();
      return entries.front().offset - c >= search.size() ||
             (inner_gap >= search.size() && entries.back().offset - c >= search.size());
    }
  };

  std::vector<Block> blocks_;
};

// Places buffers one at a time. A buffer that meets few placed buffers collects them from the
// lifetime index and sorts them; one that meets most of them (a long-lived buffer) walks all
// placed buffers in offset order and skips the others, as TFLM does, which is cheaper than
// sorting nearly all of them. Both feed the gap search the same sequence.
class GreedyPlacer {
 public:
  explicit GreedyPlacer(std::span<const BufferRequest> requests)
      : requests_(requests), time_(requests), index_(time_.size()) {
    placed_.reserve(requests.size());
  }

  int64_t Place(int32_t id, int64_t size) {
    const int32_t first = time_.Index(requests_[id].first);
    const int32_t last = time_.Index(requests_[id].last);
    if (size == 0) return Record(0, size, first, last);  // TFLM's walk stops at once
    GapSearch search(size, requests_[id].alignment);
    // Sorting the k buffers met costs about k log k; walking all p placed ones at most p.
    const size_t met = index_.Count(first, last);
    if (met * std::bit_width(met) <= placed_.size()) {
      SearchNeighbours(first, last, search);
    } else {
      by_offset_.Search(first, last, search);
    }
    return Record(search.candidate(), size, first, last);
  }

  // A buffer whose offset is given (offline plan).
  int64_t PlaceAt(int32_t id, int64_t size, int64_t offset) {
    return Record(offset, size, time_.Index(requests_[id].first), time_.Index(requests_[id].last));
  }

 private:
  int64_t Record(int64_t offset, int64_t size, int32_t first, int32_t last) {
    const Placed entry = {.offset = offset,
                          .end = offset + size,
                          .slot = static_cast<int32_t>(placed_.size()),
                          .first = first,
                          .last = last};
    placed_.push_back(entry);
    by_offset_.Insert(entry);
    index_.Add(entry.slot, first, last);
    return entry.offset;
  }

  void SearchNeighbours(int32_t first, int32_t last, GapSearch& search) {
    slots_.clear();
    index_.Collect(first, last, slots_);
    neighbours_.clear();
    for (int32_t slot : slots_) neighbours_.push_back(placed_[slot]);
    std::sort(neighbours_.begin(), neighbours_.end(), ByOffsetThenSlot());
    for (const Placed& entry : neighbours_) {
      if (!search.Continue(entry)) return;
    }
  }

  std::span<const BufferRequest> requests_;
  TimeAxis time_;
  LifetimeIndex index_;
  std::vector<Placed> placed_;  // by slot
  OffsetOrder by_offset_;
  std::vector<int32_t> slots_;      // scratch
  std::vector<Placed> neighbours_;  // scratch
};

}  // namespace

Plan GreedyPlanner::Place(std::span<const BufferRequest> requests) const {
  std::vector<int64_t> sizes;
  sizes.reserve(requests.size());
  for (const BufferRequest& request : requests) {
    sizes.push_back(AlignUp(request.bytes, request.alignment));
  }
  GreedyPlacer placer(requests);
  Plan plan{.planner = std::string(name()), .arena_bytes = 0, .offsets = {}};
  plan.offsets.assign(requests.size(), 0);
  for (int32_t id = 0; id < static_cast<int32_t>(requests.size()); ++id) {
    if (requests[id].fixed_offset == BufferRequest::kNotFixed) continue;
    plan.offsets[id] = placer.PlaceAt(id, sizes[id], requests[id].fixed_offset);
    plan.arena_bytes = std::max(plan.arena_bytes, plan.offsets[id] + sizes[id]);
  }
  for (int32_t id : PlacementOrder(requests, sizes, ties_)) {
    plan.offsets[id] = placer.Place(id, sizes[id]);
    plan.arena_bytes = std::max(plan.arena_bytes, plan.offsets[id] + sizes[id]);
  }
  return plan;
}

}  // namespace memfold
