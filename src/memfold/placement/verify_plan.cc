#include "memfold/placement/verify_plan.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace memfold {
namespace {

using std::to_string;

// Rounding written out here rather than shared with the planners, so that a rounding bug in
// one cannot hide in the other.
int64_t OccupiedBytes(const BufferRequest& request) {
  const int64_t remainder = request.bytes % request.alignment;
  return remainder == 0 ? request.bytes : request.bytes + (request.alignment - remainder);
}

std::string Describe(const BufferRequest& request, int64_t offset) {
  return "buffer " + to_string(request.id) + " at [" + to_string(offset) + ", " +
         to_string(offset + OccupiedBytes(request)) + ") (" + to_string(request.bytes) +
         " B, live " + to_string(request.first) + ".." + to_string(request.last) + ")";
}

Status CheckRequest(std::span<const BufferRequest> requests, size_t index) {
  const BufferRequest& request = requests[index];
  const std::string name = "plan: request " + to_string(index);
  if (request.id != static_cast<int64_t>(index)) {
    return Status::Error(name + " has id " + to_string(request.id) + "; ids must equal indices");
  }
  if (request.bytes < 0) return Status::Error(name + " has negative size");
  if (request.alignment <= 0) return Status::Error(name + " has alignment <= 0");
  if (request.first > request.last) {
    return Status::Error(name + " has first step " + to_string(request.first) +
                         " after last step " + to_string(request.last));
  }
  for (const OverlapAllowance& allowance : request.may_overlap) {
    if (allowance.input < 0 || static_cast<size_t>(allowance.input) >= requests.size()) {
      return Status::Error(name + " allows overlap with unknown buffer " +
                           to_string(allowance.input));
    }
    if (allowance.max_bytes < 0) return Status::Error(name + " has a negative allowance");
  }
  return Status::Ok();
}

Status CheckPlacement(const BufferRequest& request, int64_t offset, int64_t arena_bytes) {
  if (offset < 0) {
    return Status::Error("plan: buffer " + to_string(request.id) + " has negative offset " +
                         to_string(offset));
  }
  if (offset % request.alignment != 0) {
    return Status::Error("plan: " + Describe(request, offset) +
                         " is not aligned to its alignment of " + to_string(request.alignment));
  }
  if (offset > arena_bytes - OccupiedBytes(request)) {
    return Status::Error("plan: " + Describe(request, offset) + " ends past the arena of " +
                         to_string(arena_bytes) + " B");
  }
  return Status::Ok();
}

Status CheckShapeAndBounds(std::span<const BufferRequest> requests, const Plan& plan) {
  if (plan.offsets.size() != requests.size()) {
    return Status::Error("plan: " + to_string(plan.offsets.size()) + " offsets for " +
                         to_string(requests.size()) + " requests");
  }
  if (plan.arena_bytes < 0) return Status::Error("plan: negative arena size");
  for (size_t i = 0; i < requests.size(); ++i) {
    MF_RETURN_IF_ERROR(CheckRequest(requests, i));
    MF_RETURN_IF_ERROR(CheckPlacement(requests[i], plan.offsets[i], plan.arena_bytes));
  }
  return Status::Ok();
}

// Sweeps time in order of first steps, keeping the live buffers in a set ordered by offset.
// Each admitted buffer is compared with every live buffer that shares a byte with it. Live
// buffers only overlap each other where an allowance permits it (anything else was already
// reported), which is what keeps the search for such buffers short; see Admit.
class OverlapSweep {
 public:
  OverlapSweep(std::span<const BufferRequest> requests, std::span<const int64_t> offsets)
      : requests_(requests),
        offsets_(offsets),
        partners_(requests.size()),
        is_live_(requests.size(), false) {
    for (const BufferRequest& out : requests) {
      for (const OverlapAllowance& allowance : out.may_overlap) {
        partners_[out.id].push_back(allowance.input);
        partners_[allowance.input].push_back(out.id);
      }
    }
  }

  Status Run() {
    const std::vector<int32_t> by_first = SortedIds(&BufferRequest::first);
    const std::vector<int32_t> by_last = SortedIds(&BufferRequest::last);
    size_t released = 0;
    for (int32_t id : by_first) {
      while (released < by_last.size() && requests_[by_last[released]].last < requests_[id].first) {
        Release(by_last[released++]);
      }
      MF_RETURN_IF_ERROR(Admit(id));
    }
    return Status::Ok();
  }

 private:
  int64_t Begin(int32_t id) const { return offsets_[id]; }
  int64_t End(int32_t id) const { return offsets_[id] + OccupiedBytes(requests_[id]); }

  std::vector<int32_t> SortedIds(int32_t BufferRequest::*step) const {
    std::vector<int32_t> ids(requests_.size());
    std::iota(ids.begin(), ids.end(), 0);
    std::stable_sort(ids.begin(), ids.end(),
                     [&](int32_t a, int32_t b) { return requests_[a].*step < requests_[b].*step; });
    return ids;
  }

  void Release(int32_t id) {
    live_.erase({Begin(id), id});
    is_live_[id] = false;
  }

  // Live buffers touching [begin, end) either start inside it (a range scan) or start below and
  // reach past `begin`. Such a buffer also overlaps `below`, the live buffer starting closest
  // below `begin`, so it is `below` itself or one of its allowance partners.
  Status Admit(int32_t id) {
    const int64_t begin = Begin(id);
    const int64_t end = End(id);
    if (begin == end) return Status::Ok();  // Empty buffers own no byte.
    const auto above = live_.lower_bound({begin, std::numeric_limits<int32_t>::min()});
    for (auto it = above; it != live_.end() && it->first < end; ++it) {
      MF_RETURN_IF_ERROR(CheckPair(id, it->second));
    }
    if (above != live_.begin()) {
      const int32_t below = std::prev(above)->second;
      MF_RETURN_IF_ERROR(CheckIfReaching(id, below));
      for (int32_t partner : partners_[below]) {
        if (is_live_[partner] && Begin(partner) < begin) {
          MF_RETURN_IF_ERROR(CheckIfReaching(id, partner));
        }
      }
    }
    live_.insert({begin, id});
    is_live_[id] = true;
    return Status::Ok();
  }

  // `lower` starts below `id`; checks the pair if `lower` reaches into `id`.
  Status CheckIfReaching(int32_t id, int32_t lower) const {
    return End(lower) > Begin(id) ? CheckPair(id, lower) : Status::Ok();
  }

  // `a` and `b` are live together and their occupied bytes intersect.
  Status CheckPair(int32_t a, int32_t b) const {
    if (AllowanceHolds(a, b) || AllowanceHolds(b, a)) return Status::Ok();
    return Status::Error("plan: " + Describe(requests_[a], offsets_[a]) + " and " +
                         Describe(requests_[b], offsets_[b]) + " are live together and overlap; " +
                         Reason(a, b));
  }

  // The allowance of `out` naming `in`, or nullptr.
  const OverlapAllowance* FindAllowance(int32_t out, int32_t in) const {
    for (const OverlapAllowance& allowance : requests_[out].may_overlap) {
      if (allowance.input == in) return &allowance;
    }
    return nullptr;
  }

  bool AllowanceHolds(int32_t out, int32_t in) const {
    const OverlapAllowance* allowance = FindAllowance(out, in);
    return allowance != nullptr && requests_[in].last == requests_[out].first &&
           offsets_[in] >= offsets_[out] + requests_[out].bytes - allowance->max_bytes;
  }

  std::string Reason(int32_t a, int32_t b) const {
    int32_t out = a;
    int32_t in = b;
    if (FindAllowance(out, in) == nullptr) std::swap(out, in);
    const OverlapAllowance* allowance = FindAllowance(out, in);
    if (allowance == nullptr) return "neither names the other in may_overlap";
    const std::string out_name = "buffer " + to_string(out);
    const std::string in_name = "input " + to_string(in);
    if (requests_[in].last != requests_[out].first) {
      return out_name + " may overlap " + in_name + " only if it dies at step " +
             to_string(requests_[out].first) + ", but it lives until " +
             to_string(requests_[in].last);
    }
    const int64_t overlap = offsets_[out] + requests_[out].bytes - offsets_[in];
    return out_name + " overlaps the start of " + in_name + " by " + to_string(overlap) +
           " B, more than its allowance of " + to_string(allowance->max_bytes) + " B";
  }

  std::span<const BufferRequest> requests_;
  std::span<const int64_t> offsets_;
  std::vector<std::vector<int32_t>> partners_;
  std::vector<bool> is_live_;
  std::set<std::pair<int64_t, int32_t>> live_;
};

}  // namespace

Status VerifyPlan(std::span<const BufferRequest> requests, const Plan& plan) {
  MF_RETURN_IF_ERROR(CheckShapeAndBounds(requests, plan));
  return OverlapSweep(requests, plan.offsets).Run();
}

}  // namespace memfold
