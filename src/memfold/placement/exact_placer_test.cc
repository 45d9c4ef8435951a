// The exact solver against problems whose optimum is known: perfect packings (cut from a
// full rectangle, so the optimum is the live-bytes bound) and small random problems solved by
// brute force over every offset. Every plan is checked by VerifyPlan. (Small random problems
// almost never need more than their live bytes: two million of 6 to 8 buffers had none.)
#include "memfold/placement/exact_placer.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <sstream>

#include "memfold/placement/lower_bound.h"
#include "memfold/placement/portfolio.h"
#include "memfold/placement/verify_plan.h"

namespace memfold {
namespace {

BufferRequest Buffer(int32_t id, int32_t first, int32_t last, int64_t bytes,
                     int64_t alignment = 1) {
  return {.id = id, .bytes = bytes, .alignment = alignment, .first = first, .last = last};
}

// Cuts a `steps` x `height` rectangle into `count` buffers by random guillotine cuts: a plan
// with no gap exists, so the optimum is the bound (height).
std::vector<BufferRequest> PerfectPacking(uint32_t seed, size_t count, int32_t steps,
                                          int64_t height) {
  struct Box {
    int32_t first, end;
    int64_t bottom, top;
  };
  std::mt19937 rng(seed);
  std::vector<Box> boxes = {{0, steps, 0, height}};
  while (boxes.size() < count) {
    const size_t pick = std::uniform_int_distribution<size_t>(0, boxes.size() - 1)(rng);
    const Box b = boxes[pick];
    const bool in_time = rng() % 2 == 0;
    if (in_time && b.end - b.first > 1) {
      const int32_t cut = std::uniform_int_distribution<int32_t>(b.first + 1, b.end - 1)(rng);
      boxes[pick] = {b.first, cut, b.bottom, b.top};
      boxes.push_back({cut, b.end, b.bottom, b.top});
    } else if (!in_time && b.top - b.bottom > 1) {
      const int64_t cut = std::uniform_int_distribution<int64_t>(b.bottom + 1, b.top - 1)(rng);
      boxes[pick] = {b.first, b.end, b.bottom, cut};
      boxes.push_back({b.first, b.end, cut, b.top});
    }
  }
  std::vector<BufferRequest> requests;
  for (const Box& b : boxes) {
    requests.push_back(
        Buffer(static_cast<int32_t>(requests.size()), b.first, b.end - 1, b.top - b.bottom));
  }
  return requests;
}

// Whether `in` may start at `in_at` over `out` at `out_at`: `out` names it in may_overlap and
// it starts no lower than out's end less the allowance (buffer.h's rule, written out here).
bool AllowedOver(const BufferRequest& out, int64_t out_at, const BufferRequest& in, int64_t in_at) {
  for (const OverlapAllowance& a : out.may_overlap) {
    if (a.input == in.id && in.last == out.first && in_at >= out_at + out.bytes - a.max_bytes)
      return true;
  }
  return false;
}

// One line per buffer (id, lifetime, bytes, alignment, allowances), for failure messages.
std::string Describe(const std::vector<BufferRequest>& requests) {
  std::ostringstream text;
  for (const BufferRequest& r : requests) {
    text << r.id << " [" << r.first << "," << r.last << "] " << r.bytes << " B /" << r.alignment;
    for (const OverlapAllowance& a : r.may_overlap)
      text << " over " << a.input << ":" << a.max_bytes;
    text << "\n";
  }
  return text.str();
}

// The smallest arena by trying every aligned offset up to `limit` for every buffer.
int64_t BruteForceOptimum(const std::vector<BufferRequest>& requests, int64_t limit) {
  std::vector<int64_t> offsets(requests.size());
  auto occupied = [&](size_t k) { return AlignUp(requests[k].bytes, requests[k].alignment); };
  int64_t best = limit;
  std::function<void(size_t, int64_t)> place = [&](size_t k, int64_t top) {
    if (top >= best) return;
    if (k == requests.size()) {
      best = top;
      return;
    }
    const BufferRequest& r = requests[k];
    for (int64_t at = 0; at + occupied(k) <= best; at += r.alignment) {
      bool clash = false;
      for (size_t j = 0; j < k && !clash; ++j) {
        const BufferRequest& o = requests[j];
        clash = o.first <= r.last && r.first <= o.last && offsets[j] < at + occupied(k) &&
                at < offsets[j] + occupied(j) && !AllowedOver(r, at, o, offsets[j]) &&
                !AllowedOver(o, offsets[j], r, at);
      }
      if (clash) continue;
      offsets[k] = at;
      place(k + 1, std::max(top, at + occupied(k)));
    }
  };
  place(0, 0);
  return best;
}

// A small random problem: 3 to 7 buffers over a few steps; with `allowances`, each buffer made
// where another dies may overlap it by a random share of its own bytes (from none to all),
// at an alignment of 1, 2 or 4.
std::vector<BufferRequest> RandomProblem(std::mt19937& rng, bool allowances) {
  std::vector<BufferRequest> requests;
  const int n = std::uniform_int_distribution<int>(3, 7)(rng);
  const int64_t alignment = allowances ? int64_t{1} << (rng() % 3) : 1;
  for (int k = 0; k < n; ++k) {
    const int32_t first = std::uniform_int_distribution<int32_t>(0, 4)(rng);
    const int32_t last = first + std::uniform_int_distribution<int32_t>(0, 2)(rng);
    requests.push_back(
        Buffer(k, first, last, std::uniform_int_distribution<int64_t>(1, 6)(rng), alignment));
  }
  if (!allowances) return requests;
  for (BufferRequest& out : requests) {
    for (const BufferRequest& in : requests) {
      // An input made at the step it dies (so made by the operator it feeds) is left out, as
      // operators make none: DeclinesWhatItDoesNotModel covers it.
      if (in.id != out.id && in.last == out.first && in.first < in.last && rng() % 3 != 0) {
        out.may_overlap.push_back(
            {in.id, std::uniform_int_distribution<int64_t>(0, out.bytes)(rng)});
      }
    }
  }
  return requests;
}

TEST(ExactPlacer, PerfectPackingsMeetTheBound) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    const std::vector<BufferRequest> requests = PerfectPacking(seed, 60, 40, 1000);
    ASSERT_EQ(LowerBound(requests), 1000);
    const ExactOutcome out = PlaceExactly(requests, {.capacity = 1000});
    ASSERT_TRUE(out.declined.empty());
    ASSERT_TRUE(out.plan.has_value()) << "seed " << seed << " after " << out.nodes << " nodes";
    EXPECT_EQ(out.plan->arena_bytes, 1000);
    EXPECT_TRUE(VerifyPlan(requests, *out.plan).ok()) << "seed " << seed;
  }
}

void ExpectTheBruteForceOptimum(bool allowances, int trials) {
  std::mt19937 rng(allowances ? 11 : 7);
  for (int trial = 0; trial < trials; ++trial) {
    const std::vector<BufferRequest> requests = RandomProblem(rng, allowances);
    const int64_t optimum = BruteForceOptimum(requests, 64);
    const ExactOutcome out = PlaceExactly(requests, {});
    ASSERT_EQ(out.declined, "");
    ASSERT_TRUE(out.complete) << "trial " << trial << ":\n" << Describe(requests);
    ASSERT_TRUE(out.plan.has_value());
    EXPECT_EQ(out.plan->arena_bytes, optimum) << "trial " << trial << ":\n" << Describe(requests);
    EXPECT_TRUE(VerifyPlan(requests, *out.plan).ok());
    // A capacity one byte below the optimum has no plan, and the search says so (a capacity
    // of 0 asks for the smallest arena).
    if (optimum == 1) continue;
    const ExactOutcome tight = PlaceExactly(requests, {.capacity = optimum - 1});
    EXPECT_TRUE(tight.complete && !tight.plan) << "trial " << trial;
  }
}

TEST(ExactPlacer, MinimisingFindsAndProvesTheBruteForceOptimum) {
  ExpectTheBruteForceOptimum(/*allowances=*/false, 60);
}

// Diagonal overlap allowances (an output over the start of an input dying where it is made),
// at alignments that round the allowed overlap.
TEST(ExactPlacer, ProvesTheOptimumWithOverlapAllowances) {
  ExpectTheBruteForceOptimum(/*allowances=*/true, 600);
}

TEST(ExactPlacer, StartsFromTheIncumbentAndKeepsTheAlignment) {
  // Three buffers of 10 B at 16 B alignment, two live together: 32 B, at multiples of 16.
  const std::vector<BufferRequest> requests = {Buffer(0, 0, 1, 10, 16), Buffer(1, 1, 2, 10, 16),
                                               Buffer(2, 2, 3, 10, 16)};
  const Plan worse{.planner = "by hand", .arena_bytes = 48, .offsets = {0, 16, 32}};
  ASSERT_TRUE(VerifyPlan(requests, worse).ok());
  const ExactOutcome out = PlaceExactly(requests, {}, &worse);
  ASSERT_TRUE(out.plan && out.complete);
  EXPECT_EQ(out.plan->arena_bytes, 32);
  for (int64_t offset : out.plan->offsets) EXPECT_EQ(offset % 16, 0);
  EXPECT_TRUE(VerifyPlan(requests, *out.plan).ok());
}

// Found by review: an output naming its input twice is read as VerifyPlan reads it (the first
// allowance), and an allowance beyond the output's bytes (the input may start below the
// output, which the search never tries) gives a valid plan but no proof.
TEST(ExactPlacer, ReadsAllowancesAsTheVerifierDoes) {
  std::vector<BufferRequest> twice = {Buffer(0, 0, 1, 16, 16), Buffer(1, 1, 2, 16, 16)};
  twice[1].may_overlap = {{0, 0}, {0, 16}};
  const ExactOutcome first = PlaceExactly(twice, {});
  ASSERT_TRUE(first.plan && first.complete);
  EXPECT_EQ(first.plan->arena_bytes, 32);
  EXPECT_TRUE(VerifyPlan(twice, *first.plan).ok());
  std::vector<BufferRequest> beyond = {Buffer(0, 0, 1, 48, 16), Buffer(1, 1, 2, 16, 16)};
  beyond[1].may_overlap = {{0, 48}};
  const ExactOutcome inside = PlaceExactly(beyond, {});
  ASSERT_TRUE(inside.plan.has_value());
  EXPECT_EQ(inside.plan->arena_bytes, 48);
  EXPECT_TRUE(VerifyPlan(beyond, *inside.plan).ok());
  EXPECT_FALSE(inside.complete);
}

TEST(ExactPlacer, DeclinesWhatItDoesNotModel) {
  std::vector<BufferRequest> requests = {Buffer(0, 0, 1, 10), Buffer(1, 1, 2, 10)};
  requests[1].fixed_offset = 0;
  EXPECT_EQ(PlaceExactly(requests, {}).declined, "fixed offsets");
  requests[1].fixed_offset = BufferRequest::kNotFixed;
  requests[1].alignment = 16;
  EXPECT_EQ(PlaceExactly(requests, {}).declined, "mixed alignments");
  // Three buffers of one step, each allowed over the next: all three may share one offset,
  // which no placement in order of offset reaches.
  std::vector<BufferRequest> cycle = {Buffer(0, 2, 2, 6), Buffer(1, 2, 2, 5), Buffer(2, 2, 2, 2)};
  cycle[0].may_overlap = {{1, 6}};
  cycle[1].may_overlap = {{2, 5}};
  cycle[2].may_overlap = {{0, 2}};
  EXPECT_EQ(PlaceExactly(cycle, {}).declined, "allowances between buffers of one step");
}

TEST(ExactPlacer, AWorkBudgetStopsTheSearchWithoutAProof) {
  const std::vector<BufferRequest> requests = PerfectPacking(3, 200, 60, 5000);
  // Less work than one look at every buffer per placement: no plan can be completed, and the
  // search stops within a node of the budget.
  const ExactOutcome out = PlaceExactly(requests, {.capacity = 5000, .max_work = 2000});
  EXPECT_FALSE(out.complete);
  EXPECT_FALSE(out.plan.has_value());
  EXPECT_LE(out.work, 2000 + 2 * 200 + 2);
}

TEST(Portfolio, SaysWhetherThePlanIsOptimalAndHowFarFromTheBound) {
  const std::vector<BufferRequest> packing = PerfectPacking(5, 80, 50, 4096);
  const PortfolioResult result = PlaceWithPortfolio(packing, {});
  EXPECT_TRUE(result.optimal);
  EXPECT_EQ(result.plan.arena_bytes, 4096);
  EXPECT_EQ(result.lower_bound, 4096);
  EXPECT_TRUE(VerifyPlan(packing, result.plan).ok());
  // With a capacity the first plan within it is enough.
  const PortfolioResult loose = PlaceWithPortfolio(packing, {.capacity = 1 << 20});
  EXPECT_LE(loose.plan.arena_bytes, 1 << 20);
  // A valid placement to start from is kept when nothing beats it; an invalid one is ignored.
  const std::vector<BufferRequest> pair = {Buffer(0, 0, 1, 10), Buffer(1, 1, 2, 10)};
  const std::vector<int64_t> apart = {0, 10}, clash = {0, 5};
  EXPECT_EQ(PlaceWithPortfolio(pair, {.start = apart}).plan.arena_bytes, 20);
  EXPECT_TRUE(VerifyPlan(pair, PlaceWithPortfolio(pair, {.start = clash}).plan).ok());
  EXPECT_DOUBLE_EQ(GapToLowerBound(4500, 4000), 0.125);
  const std::vector<BufferRequest> aligned = {Buffer(0, 0, 0, 10, 16)};
  EXPECT_TRUE(MeetsLowerBound(aligned, 16, 10));
  EXPECT_FALSE(MeetsLowerBound(aligned, 32, 10));
}

}  // namespace
}  // namespace memfold
