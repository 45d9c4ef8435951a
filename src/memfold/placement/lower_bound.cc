#include "memfold/placement/lower_bound.h"

#include <algorithm>
#include <vector>

namespace memfold {

namespace {

struct Event {
  int64_t time;
  int64_t delta;
};

int64_t PeakOf(std::vector<Event> events) {
  // At equal times the releases (negative deltas) come first: a buffer whose last step is t-1
  // is not live together with one whose first step is t.
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.time != b.time ? a.time < b.time : a.delta < b.delta;
  });
  int64_t live = 0;
  int64_t peak = 0;
  for (const Event& event : events) {
    live += event.delta;
    peak = std::max(peak, live);
  }
  return peak;
}

std::vector<Event> LifetimeEvents(std::span<const BufferRequest> requests) {
  std::vector<Event> events;
  events.reserve(2 * requests.size());
  for (const BufferRequest& request : requests) {
    const int64_t size = AlignUp(request.bytes, request.alignment);
    events.push_back({request.first, size});
    events.push_back({int64_t{request.last} + 1, -size});
  }
  return events;
}

}  // namespace

int64_t LowerBound(std::span<const BufferRequest> requests) {
  return PeakOf(LifetimeEvents(requests));
}

int64_t LowerBoundWithOverlaps(std::span<const BufferRequest> requests) {
  std::vector<Event> events = LifetimeEvents(requests);
  for (const BufferRequest& out : requests) {
    int64_t saving = 0;
    const int64_t out_size = AlignUp(out.bytes, out.alignment);
    for (const OverlapAllowance& a : out.may_overlap) {
      const BufferRequest& in = requests[static_cast<size_t>(a.input)];
      // The input may start max_bytes before the end of out's payload, so out's alignment
      // padding lies over it too (found by the fuzzer: a 72 B output over a 288 B input fits
      // in 288 B, not 296).
      const int64_t overlap = a.max_bytes + out_size - out.bytes;
      // Dying inputs are disjoint, so an output may lie over several of them at once (a
      // concat over both its inputs, found by the fuzzer): their savings add up, to at most
      // the output's own size.
      if (in.last == out.first)
        saving += std::min({overlap, out_size, AlignUp(in.bytes, in.alignment)});
    }
    saving = std::min(saving, out_size);
    if (saving == 0) continue;
    events.push_back({out.first, -saving});
    events.push_back({int64_t{out.first} + 1, saving});
  }
  return PeakOf(std::move(events));
}

std::vector<int64_t> ArenaFloorPerStep(std::span<const BufferRequest> requests,
                                       std::span<const char> made_earlier) {
  int32_t end = 0;
  for (const BufferRequest& r : requests) end = std::max(end, r.last);
  const auto steps = static_cast<size_t>(end) + 1;
  // Per step: bytes live throughout (a difference array), created and living on, dying after
  // living before.
  std::vector<int64_t> through(steps + 1, 0), created(steps, 0), dying(steps, 0);
  for (const BufferRequest& r : requests) {
    const auto first = static_cast<size_t>(r.first), last = static_cast<size_t>(r.last);
    const bool earlier = !made_earlier.empty() && made_earlier[static_cast<size_t>(r.id)];
    if (first == last && !earlier) continue;
    if (!earlier) created[first] += r.bytes;
    dying[last] += r.bytes;
    through[earlier ? first : first + 1] += r.bytes;
    through[last] -= r.bytes;
  }
  std::vector<int64_t> floor(steps);
  int64_t live_through = 0;
  for (size_t t = 0; t < steps; ++t) {
    live_through += through[t];
    floor[t] = live_through + std::max(created[t], dying[t]);
  }
  return floor;
}

int64_t LowerBoundForAnyOverlap(std::span<const BufferRequest> requests) {
  const std::vector<int64_t> floor = ArenaFloorPerStep(requests);
  return floor.empty() ? 0 : *std::max_element(floor.begin(), floor.end());
}

}  // namespace memfold
