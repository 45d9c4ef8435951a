#include "memfold/plan/lower_bound.h"

#include <algorithm>
#include <vector>

namespace memfold {

int64_t LowerBound(std::span<const BufferRequest> requests) {
  struct Event {
    int64_t time;
    int64_t delta;
  };
  std::vector<Event> events;
  events.reserve(2 * requests.size());
  for (const BufferRequest& request : requests) {
    const int64_t size = AlignUp(request.bytes, request.alignment);
    events.push_back({request.first, size});
    events.push_back({int64_t{request.last} + 1, -size});
  }
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

}  // namespace memfold
