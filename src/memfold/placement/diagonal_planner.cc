#include "memfold/placement/diagonal_planner.h"

#include <algorithm>
#include <numeric>
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

// Places `requests` one by one in `order` (a permutation of their ids), each at the lowest
// aligned offset its placed neighbours allow.
Plan PlaceDiagonalInOrder(std::span<const BufferRequest> requests, std::span<const int32_t> order,
                          std::string planner) {
  std::vector<int64_t> sizes;
  for (const BufferRequest& r : requests) sizes.push_back(AlignUp(r.bytes, r.alignment));
  Plan plan{.planner = std::move(planner), .arena_bytes = 0, .offsets = {}};
  plan.offsets.assign(requests.size(), 0);
  std::vector<int32_t> placed;
  std::vector<Range> ranges;
  for (int32_t id : order) {
    const BufferRequest& b = requests[id];
    ranges.clear();
    for (int32_t e : placed) {
      const BufferRequest& other = requests[e];
      if (other.first <= b.last && b.first <= other.last && sizes[e] > 0 && sizes[id] > 0) {
        ranges.push_back(Forbidden(b, sizes[id], other, plan.offsets[e], sizes[e]));
      }
    }
    std::sort(ranges.begin(), ranges.end(),
              [](const Range& x, const Range& y) { return x.lo < y.lo; });
    int64_t offset = 0;
    for (const Range& r : ranges) {
      if (r.lo >= offset) break;  // sorted by lo: no later range can contain `offset` either
      if (r.hi > offset) offset = AlignUp(r.hi, b.alignment);
    }
    plan.offsets[id] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + sizes[id]);
    placed.push_back(id);
  }
  return plan;
}

}  // namespace

Plan SearchPlacementOrder(std::span<const BufferRequest> requests, std::vector<int32_t> order,
                          int64_t floor, int32_t moves, const std::string& planner) {
  Plan best = PlaceDiagonalInOrder(requests, order, planner);
  int64_t current = best.arena_bytes;
  std::mt19937 random(20261129);
  const auto n = static_cast<uint32_t>(order.size());
  for (int32_t move = 0; move < moves && n > 1 && best.arena_bytes > floor; ++move) {
    const uint32_t i = random() % n, j = random() % n;
    std::swap(order[i], order[j]);
    Plan plan = PlaceDiagonalInOrder(requests, order, planner);
    if (plan.arena_bytes > current) {
      std::swap(order[i], order[j]);
      continue;
    }
    current = plan.arena_bytes;
    if (plan.arena_bytes < best.arena_bytes) best = std::move(plan);
  }
  return best;
}

Plan DiagonalPlanner::Place(std::span<const BufferRequest> requests) const {
  std::vector<int64_t> sizes;
  for (const BufferRequest& r : requests) sizes.push_back(AlignUp(r.bytes, r.alignment));
  return PlaceDiagonalInOrder(requests, PlacementOrder(requests, sizes, order_),
                              std::string(name()));
}

}  // namespace memfold
