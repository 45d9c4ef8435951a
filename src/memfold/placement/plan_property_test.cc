// Property tests on random buffer sets: plans verify, bounds hold, planning is deterministic,
// the greedy planner matches a literal O(n^2) rendering of TFLM's algorithm, and VerifyPlan
// agrees with an all-pairs check.

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "memfold/placement/greedy_planner.h"
#include "memfold/placement/lower_bound.h"
#include "memfold/placement/plan_test_util.h"
#include "memfold/placement/planner.h"
#include "memfold/placement/verify_plan.h"

namespace memfold {
namespace {

// Lifetimes follow one of three shapes: a schedule (short spans, a few long-lived buffers),
// random windows, or few distinct steps (many ties). Sizes are sometimes drawn from a few
// values to force equal-size ties. One alignment per set, as in TFLM.
std::vector<BufferRequest> RandomRequests(std::mt19937& rng) {
  const int32_t count = static_cast<int32_t>(Uniform(rng, 1, 300));
  const int64_t alignment = std::vector<int64_t>{1, 4, 16, 64}[Uniform(rng, 0, 3)];
  const int64_t shape = Uniform(rng, 0, 2);
  const bool few_sizes = Uniform(rng, 0, 3) == 0;
  std::vector<BufferRequest> requests;
  for (int32_t id = 0; id < count; ++id) {
    int32_t first = 0;
    int32_t span = 0;
    if (shape == 0) {
      first = id / 2;
      span = static_cast<int32_t>(Uniform(rng, 0, 19) == 0 ? Uniform(rng, 0, count)
                                                           : Uniform(rng, 0, 3));
    } else if (shape == 1) {
      first = static_cast<int32_t>(Uniform(rng, 0, 100));
      span = static_cast<int32_t>(Uniform(rng, 0, 30));
    } else {
      first = static_cast<int32_t>(Uniform(rng, 0, 3));
      span = static_cast<int32_t>(Uniform(rng, 0, 3));
    }
    const int64_t bytes = few_sizes ? 16 * Uniform(rng, 1, 4) : Uniform(rng, 1, 100000);
    requests.push_back({.id = id,
                        .bytes = bytes,
                        .alignment = alignment,
                        .first = first,
                        .last = first + span,
                        .may_overlap = {}});
  }
  return requests;
}

bool LiveTogether(const BufferRequest& a, const BufferRequest& b) {
  return a.first <= b.last && b.first <= a.last;
}

// TFLM's GreedyMemoryPlanner written out plainly: sort array filled from the end, bubble sort
// by size (largest first), offset-ordered list where a new entry goes after equal offsets, and
// a walk over the whole list skipping buffers not live at the same time.
std::vector<int64_t> TflmGreedyOffsets(const std::vector<BufferRequest>& requests) {
  const size_t count = requests.size();
  std::vector<int64_t> sorted_sizes(count);
  std::vector<int32_t> sorted_ids(count);
  for (size_t i = 0; i < count; ++i) {
    sorted_sizes[count - 1 - i] = AlignUp(requests[i].bytes, requests[i].alignment);
    sorted_ids[count - 1 - i] = static_cast<int32_t>(i);
  }
  for (bool swapped = true; swapped;) {
    swapped = false;
    for (size_t i = 1; i < count; ++i) {
      if (sorted_sizes[i - 1] < sorted_sizes[i]) {
        std::swap(sorted_sizes[i - 1], sorted_sizes[i]);
        std::swap(sorted_ids[i - 1], sorted_ids[i]);
        swapped = true;
      }
    }
  }
  std::vector<int64_t> offsets(count, 0);
  std::vector<int32_t> by_offset;
  for (size_t k = 0; k < count; ++k) {
    const BufferRequest& wanted = requests[sorted_ids[k]];
    int64_t candidate = 0;
    for (int32_t other : by_offset) {
      if (!LiveTogether(requests[other], wanted)) continue;
      if (offsets[other] - candidate >= sorted_sizes[k]) break;
      candidate = std::max(
          candidate, offsets[other] + AlignUp(requests[other].bytes, requests[other].alignment));
    }
    offsets[wanted.id] = candidate;
    const auto after_equal = std::find_if(by_offset.begin(), by_offset.end(), [&](int32_t other) {
      return offsets[other] > candidate;
    });
    by_offset.insert(after_equal, wanted.id);
  }
  return offsets;
}

TEST(PlanPropertyTest, RandomSetsVerifyRespectBoundsAndAreDeterministic) {
  std::mt19937 rng(20240601);
  const NaivePlanner naive;
  const GreedyPlanner greedy;
  for (int trial = 0; trial < 1000; ++trial) {
    const std::vector<BufferRequest> requests = RandomRequests(rng);
    const Plan naive_plan = naive.Place(requests);
    const Plan greedy_plan = greedy.Place(requests);
    ASSERT_TRUE(VerifyPlan(requests, naive_plan).ok())
        << VerifyPlan(requests, naive_plan).message();
    ASSERT_TRUE(VerifyPlan(requests, greedy_plan).ok())
        << "trial " << trial << ": " << VerifyPlan(requests, greedy_plan).message();
    ASSERT_LE(LowerBound(requests), greedy_plan.arena_bytes) << "trial " << trial;
    ASSERT_LE(greedy_plan.arena_bytes, naive_plan.arena_bytes) << "trial " << trial;
    ASSERT_EQ(greedy.Place(requests).offsets, greedy_plan.offsets) << "trial " << trial;
    ASSERT_EQ(naive.Place(requests).offsets, naive_plan.offsets) << "trial " << trial;
    ASSERT_EQ(greedy_plan.offsets, TflmGreedyOffsets(requests)) << "trial " << trial;
  }
}

// The rules of verify_plan.h applied to every pair, without any cleverness.
bool AllPairsValid(const std::vector<BufferRequest>& requests,
                   const std::vector<int64_t>& offsets) {
  auto allowed = [&](const BufferRequest& out, const BufferRequest& in) {
    for (const OverlapAllowance& allowance : out.may_overlap) {
      if (allowance.input == in.id && in.last == out.first &&
          offsets[in.id] >= offsets[out.id] + out.bytes - allowance.max_bytes) {
        return true;
      }
    }
    return false;
  };
  for (const BufferRequest& a : requests) {
    for (const BufferRequest& b : requests) {
      if (a.id >= b.id || !LiveTogether(a, b)) continue;
      const int64_t a_end = offsets[a.id] + AlignUp(a.bytes, a.alignment);
      const int64_t b_end = offsets[b.id] + AlignUp(b.bytes, b.alignment);
      const bool share_bytes = std::max(offsets[a.id], offsets[b.id]) < std::min(a_end, b_end);
      if (share_bytes && !allowed(a, b) && !allowed(b, a)) return false;
    }
  }
  return true;
}

// A chain-like schedule where many outputs may overlap an input that dies when they are made;
// offsets start from the greedy plan, then some inputs are pulled down onto their outputs
// (exactly to, one byte past, or short of the allowance) and some buffers are moved at random.
TEST(PlanPropertyTest, VerifyPlanAgreesWithAllPairsCheck) {
  std::mt19937 rng(7);
  int valid = 0;
  int invalid = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int32_t count = static_cast<int32_t>(Uniform(rng, 2, 40));
    std::vector<BufferRequest> requests;
    for (int32_t id = 0; id < count; ++id) {
      const int32_t first = id / 2;
      requests.push_back({.id = id,
                          .bytes = Uniform(rng, 0, 100),
                          .alignment = 1,
                          .first = first,
                          .last = first + static_cast<int32_t>(Uniform(rng, 0, 2)),
                          .may_overlap = {}});
    }
    for (BufferRequest& out : requests) {
      const int32_t input = static_cast<int32_t>(Uniform(rng, 0, count - 1));
      if (input != out.id && Uniform(rng, 0, 1) == 0) {
        out.may_overlap.push_back({.input = input, .max_bytes = Uniform(rng, 0, out.bytes + 10)});
      }
    }
    std::vector<int64_t> offsets = GreedyPlanner().Place(requests).offsets;
    for (const BufferRequest& out : requests) {
      for (const OverlapAllowance& allowance : out.may_overlap) {
        if (Uniform(rng, 0, 1) == 0) continue;
        const int64_t earliest = offsets[out.id] + out.bytes - allowance.max_bytes;
        offsets[allowance.input] = std::max<int64_t>(0, earliest + Uniform(rng, -1, 1));
      }
    }
    if (Uniform(rng, 0, 3) == 0) offsets[Uniform(rng, 0, count - 1)] = Uniform(rng, 0, 200);
    int64_t arena = 0;
    for (const BufferRequest& request : requests) {
      arena = std::max(arena, offsets[request.id] + request.bytes);
    }
    const bool expected = AllPairsValid(requests, offsets);
    const Status status =
        VerifyPlan(requests, {.planner = "test", .arena_bytes = arena, .offsets = offsets});
    ASSERT_EQ(status.ok(), expected) << "trial " << trial << ": " << status.message();
    (expected ? valid : invalid)++;
  }
  EXPECT_GT(valid, 300);
  EXPECT_GT(invalid, 300);
}

}  // namespace
}  // namespace memfold
