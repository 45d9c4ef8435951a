// One placement engine for any problem: the heuristics first, cheapest first, until one meets
// the lower bound (TFLM's greedy in both tie orders, then the diagonal planner's three orders,
// which honour overlap allowances, when the problem has at most 2^24 overlapping pairs), then,
// for problems of
// at most kExactMaxBuffers buffers, the exact solver (exact_placer.h) from the best of them
// within the time left; larger problems get the placement-order search (diagonal_planner.h)
// within a move budget. Every result says whether it is optimal (proven by the exhausted
// search, or equal to the lower bound) and how far it may be above the bound.
//
// With a capacity, the first plan within it is enough (MiniMalloc's question); without one the
// smallest arena is sought. Deterministic: the exact solver stops on a budget of work; the
// wall clock only cuts searches on a machine too slow for it. Preconditions: see buffer.h.
// Cost: the heuristics' O(n k log k), then the exact solver's bounded search.
#pragma once

#include <span>
#include <string>

#include "memfold/placement/buffer.h"

namespace memfold {

inline constexpr size_t kExactMaxBuffers = 4096;

// The exact solver's budget per second of PortfolioOptions::seconds, in its units of work
// (ExactLimits::max_work): this machine does 260-860 million a second (MiniMalloc's instances,
// a streamed patch plan of 843 buffers), so the work, not the clock, ends the search and the
// result is the same on every run.
inline constexpr int64_t kExactWorkPerSecond = 500'000'000;

struct PortfolioOptions {
  int64_t capacity = 0;  // > 0: stop at the first plan within it
  double seconds = 10;   // the exact solver's budget: kExactWorkPerSecond units of work a second
  // The wall clock's cut, a safety net for a problem whose work is slow or a slow machine (its
  // result then depends on the machine); 0: twice `seconds` plus one.
  double wall_seconds = 0;
  // A placement to start from (one offset per request, e.g. a replayed plan's), taken when it
  // is valid: the result is never larger.
  std::span<const int64_t> start;
};

struct PortfolioResult {
  Plan plan;  // named after the solver that found it
  int64_t lower_bound = 0;
  bool optimal = false;  // no plan of these requests is smaller
  double seconds = 0;
};

PortfolioResult PlaceWithPortfolio(std::span<const BufferRequest> requests,
                                   const PortfolioOptions& options);

// Whether `arena` meets `lower_bound` (a bound of these requests): it is no larger than the
// bound rounded up to the alignment every request shares, below which no arena of theirs ends.
bool MeetsLowerBound(std::span<const BufferRequest> requests, int64_t arena, int64_t lower_bound);

// How far `arena` is above `lower_bound`, as a fraction of the bound (0 for a zero bound).
double GapToLowerBound(int64_t arena, int64_t lower_bound);

}  // namespace memfold
