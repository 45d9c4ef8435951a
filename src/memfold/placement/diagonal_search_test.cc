// The placement-order search: its incremental placement (overlap lists, re-placing only the
// positions after a swap, undoing rejected swaps) takes exactly the steps of a literal search
// that places every order from scratch against every placed buffer, on random buffer sets with
// diagonal allowances; its plans verify and never grow.

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "memfold/placement/diagonal_planner.h"
#include "memfold/placement/lower_bound.h"
#include "memfold/placement/plan_test_util.h"
#include "memfold/placement/verify_plan.h"

namespace memfold {
namespace {

// A schedule of short-lived buffers with a few long-lived ones and some empty ones; an output
// may overlap an input that dies at its first step by a random allowance.
std::vector<BufferRequest> RandomRequests(std::mt19937& rng) {
  const auto count = static_cast<int32_t>(Uniform(rng, 2, 120));
  const int64_t alignment = std::vector<int64_t>{1, 16, 64}[Uniform(rng, 0, 2)];
  std::vector<BufferRequest> requests;
  for (int32_t id = 0; id < count; ++id) {
    const int32_t first = id / 2;
    const auto span =
        static_cast<int32_t>(Uniform(rng, 0, 9) == 0 ? Uniform(rng, 0, count) : Uniform(rng, 0, 3));
    requests.push_back({.id = id,
                        .bytes = Uniform(rng, 0, 12) == 0 ? 0 : Uniform(rng, 1, 5000),
                        .alignment = alignment,
                        .first = first,
                        .last = first + span,
                        .may_overlap = {}});
  }
  for (BufferRequest& out : requests) {
    for (const BufferRequest& in : requests) {
      if (in.id != out.id && in.last == out.first && Uniform(rng, 0, 2) == 0)
        out.may_overlap.push_back({in.id, Uniform(rng, 0, out.bytes)});
    }
  }
  return requests;
}

// The diagonal rule written out for one order: each buffer at the lowest aligned offset that
// keeps it off every earlier-placed buffer live with it, up to an allowance either way.
Plan PlaceLiterally(const std::vector<BufferRequest>& requests, const std::vector<int32_t>& order) {
  auto occupied = [](const BufferRequest& r) { return AlignUp(r.bytes, r.alignment); };
  auto allowance = [](const BufferRequest& out, const BufferRequest& in) -> int64_t {
    for (const OverlapAllowance& a : out.may_overlap)
      if (a.input == in.id && in.last == out.first) return a.max_bytes;
    return -1;
  };
  Plan plan{.planner = "literal", .arena_bytes = 0, .offsets = {}};
  plan.offsets.assign(requests.size(), 0);
  std::vector<int32_t> placed;
  for (int32_t id : order) {
    const BufferRequest& b = requests[id];
    int64_t offset = 0;
    for (bool moved = true; moved && occupied(b) > 0;) {
      moved = false;
      for (int32_t e : placed) {
        const BufferRequest& other = requests[e];
        const int64_t at = plan.offsets[e];
        if (occupied(other) == 0 || other.first > b.last || b.first > other.last) continue;
        int64_t lo = at - occupied(b), hi = at + occupied(other);  // offsets in (lo, hi) clash
        const int64_t as_output = allowance(b, other), as_input = allowance(other, b);
        if (as_output > 0) {
          lo = at - b.bytes + as_output;  // b may end up to its allowance past other's start
        } else if (as_input > 0) {
          hi = at + other.bytes - as_input;  // b may start that far below other's end
        }
        if (offset > lo && offset < hi) {
          offset = AlignUp(hi, b.alignment);
          moved = true;
        }
      }
    }
    plan.offsets[id] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + occupied(b));
    placed.push_back(id);
  }
  return plan;
}

// SearchPlacementOrder's walk with every order placed from scratch.
Plan SearchLiterally(const std::vector<BufferRequest>& requests, std::vector<int32_t> order,
                     int32_t moves) {
  Plan best = PlaceLiterally(requests, order);
  int64_t current = best.arena_bytes;
  std::mt19937 random(20261129);
  const auto n = static_cast<uint32_t>(order.size());
  for (int32_t move = 0; move < moves; ++move) {
    const uint32_t i = random() % n, j = random() % n;
    std::swap(order[i], order[j]);
    Plan plan = PlaceLiterally(requests, order);
    if (plan.arena_bytes > current) {
      std::swap(order[i], order[j]);
      continue;
    }
    current = plan.arena_bytes;
    if (plan.arena_bytes < best.arena_bytes) best = std::move(plan);
  }
  return best;
}

TEST(DiagonalSearch, IncrementalSearchTakesTheLiteralSearchsSteps) {
  std::mt19937 rng(20261202);
  int improved = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const std::vector<BufferRequest> requests = RandomRequests(rng);
    std::vector<int32_t> order(requests.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    const int32_t moves = 60;
    const Plan searched =
        SearchPlacementOrder(requests, order, /*floor=*/0,
                             {.moves = moves, .neighbour_checks = int64_t{1} << 40}, "search")
            .value();
    const Plan literal = SearchLiterally(requests, order, moves);
    ASSERT_EQ(searched.offsets, literal.offsets) << "trial " << trial;
    ASSERT_EQ(searched.arena_bytes, literal.arena_bytes) << "trial " << trial;
    ASSERT_TRUE(VerifyPlan(requests, searched).ok()) << VerifyPlan(requests, searched).message();
    const Plan start = PlaceLiterally(requests, order);
    ASSERT_LE(searched.arena_bytes, start.arena_bytes);
    ASSERT_GE(searched.arena_bytes, LowerBoundWithOverlaps(requests));
    improved += searched.arena_bytes < start.arena_bytes;
  }
  EXPECT_GT(improved, 30);  // the search does find better orders, not only the first one
}

// A spent budget stops the search: no moves, or no neighbour checks, give the start plan.
TEST(DiagonalSearch, ABudgetOfNothingKeepsTheStartingOrder) {
  std::mt19937 rng(5);
  const std::vector<BufferRequest> requests = RandomRequests(rng);
  std::vector<int32_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  const Plan start = PlaceLiterally(requests, order);
  for (const SearchBudget budget : {SearchBudget{.moves = 0, .neighbour_checks = 1 << 30},
                                    SearchBudget{.moves = 1000, .neighbour_checks = 0}}) {
    EXPECT_EQ(SearchPlacementOrder(requests, order, 0, budget, "search")->offsets, start.offsets);
  }
}

}  // namespace
}  // namespace memfold
