#include "memfold/placement/portfolio.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <numeric>
#include <optional>
#include <vector>

#include "memfold/placement/diagonal_planner.h"
#include "memfold/placement/exact_placer.h"
#include "memfold/placement/greedy_planner.h"
#include "memfold/placement/lower_bound.h"
#include "memfold/placement/verify_plan.h"

namespace memfold {

namespace {

// Above this many overlapping pairs the diagonal orders are skipped (see BestHeuristic): past
// it the diagonal planner keeps no neighbour lists (2^25 entries, two per pair) and scans every
// placed buffer for each placement, O(n^2).
constexpr int64_t kDiagonalMaxPairs = int64_t{1} << 24;

// The order search's budget for problems the exact solver does not take.
constexpr SearchBudget kLargeSearch{.moves = 2000, .neighbour_checks = 200'000'000};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

bool HasAllowances(std::span<const BufferRequest> requests) {
  return std::any_of(requests.begin(), requests.end(),
                     [](const BufferRequest& r) { return !r.may_overlap.empty(); });
}

// Pairs of buffers live at the same time: the diagonal orders' work grows with them. A sweep,
// O(n log n).
int64_t OverlappingPairs(std::span<const BufferRequest> requests) {
  std::vector<std::pair<int64_t, int>> events;  // (time, +1 created / -1 released), releases first
  for (const BufferRequest& r : requests) {
    events.emplace_back(r.first, 1);
    events.emplace_back(int64_t{r.last} + 1, -1);
  }
  std::sort(events.begin(), events.end());
  int64_t live = 0, pairs = 0;
  for (const auto& [time, delta] : events) {
    if (delta > 0) pairs += live;
    live += delta;
  }
  return pairs;
}

// The smallest plan of the heuristics, cheapest first; the first that meets `lower_bound`
// ends the run. The diagonal orders are left out of problems whose overlapping pairs pass
// kDiagonalMaxPairs (seconds each on tens of thousands of long-lived buffers, hours on a few
// hundred thousand, where greedy takes a second); greedy's plans ignore the allowances and
// stay valid.
Plan BestHeuristic(std::span<const BufferRequest> requests, int64_t lower_bound) {
  std::vector<std::unique_ptr<Planner>> planners;
  planners.push_back(std::make_unique<GreedyPlanner>(GreedyPlanner::TieOrder::kReverseRequest));
  planners.push_back(std::make_unique<GreedyPlanner>(GreedyPlanner::TieOrder::kRequest));
  if (OverlappingPairs(requests) <= kDiagonalMaxPairs) {
    for (DiagonalPlanner::Order order :
         {DiagonalPlanner::Order::kPeakFirst, DiagonalPlanner::Order::kLargestFirst,
          DiagonalPlanner::Order::kReverseExecution}) {
      planners.push_back(std::make_unique<DiagonalPlanner>(order));
    }
  }
  std::optional<Plan> best;
  for (const std::unique_ptr<Planner>& planner : planners) {
    Plan plan = planner->Place(requests);
    if (!best || plan.arena_bytes < best->arena_bytes) best = std::move(plan);
    if (MeetsLowerBound(requests, best->arena_bytes, lower_bound)) break;
  }
  return *std::move(best);
}

// The order search from `start`'s offset order; `start` when it finds nothing smaller.
Plan SearchFrom(std::span<const BufferRequest> requests, Plan start, int64_t floor) {
  std::vector<int32_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return start.offsets[static_cast<size_t>(a)] < start.offsets[static_cast<size_t>(b)];
  });
  std::optional<Plan> found =
      SearchPlacementOrder(requests, std::move(order), floor, kLargeSearch, "diagonal_search");
  return found && found->arena_bytes < start.arena_bytes ? *std::move(found) : std::move(start);
}

}  // namespace

PortfolioResult PlaceWithPortfolio(std::span<const BufferRequest> requests,
                                   const PortfolioOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  PortfolioResult result;
  const bool overlapping = HasAllowances(requests);
  result.lower_bound = overlapping ? LowerBoundWithOverlaps(requests) : LowerBound(requests);
  result.plan = BestHeuristic(requests, result.lower_bound);
  if (options.start.size() == requests.size() && !requests.empty()) {
    Plan given{.planner = "given",
               .arena_bytes = 0,
               .offsets = {options.start.begin(), options.start.end()}};
    for (const BufferRequest& r : requests) {
      given.arena_bytes = std::max(given.arena_bytes, given.offsets[static_cast<size_t>(r.id)] +
                                                          AlignUp(r.bytes, r.alignment));
    }
    if (given.arena_bytes < result.plan.arena_bytes && VerifyPlan(requests, given).ok())
      result.plan = std::move(given);
  }
  auto done = [&] {
    result.optimal =
        result.optimal || MeetsLowerBound(requests, result.plan.arena_bytes, result.lower_bound);
    result.seconds = SecondsSince(start);
    return result;
  };
  const bool fits = options.capacity > 0 && result.plan.arena_bytes <= options.capacity;
  if (MeetsLowerBound(requests, result.plan.arena_bytes, result.lower_bound) || fits) return done();
  if (requests.size() <= kExactMaxBuffers) {
    const ExactLimits limits{
        .capacity = options.capacity,
        .max_work = static_cast<int64_t>(options.seconds * kExactWorkPerSecond),
        .seconds = std::max(
            0.0, (options.wall_seconds > 0 ? options.wall_seconds : 2 * options.seconds + 1) -
                     SecondsSince(start))};
    ExactOutcome exact = PlaceExactly(requests, limits, &result.plan);
    if (exact.declined.empty()) {
      if (exact.plan && exact.plan->arena_bytes < result.plan.arena_bytes)
        result.plan = *std::move(exact.plan);
      // Minimising, an exhausted search proves the plan optimal.
      result.optimal = exact.complete && options.capacity <= 0;
      return done();
    }
  }
  result.plan = SearchFrom(requests, std::move(result.plan), result.lower_bound);
  return done();
}

bool MeetsLowerBound(std::span<const BufferRequest> requests, int64_t arena, int64_t lower_bound) {
  int64_t shared = requests.empty() ? 1 : requests.front().alignment;
  for (const BufferRequest& r : requests) shared = r.alignment == shared ? shared : 1;
  return arena <= AlignUp(lower_bound, shared);
}

double GapToLowerBound(int64_t arena, int64_t lower_bound) {
  return lower_bound > 0
             ? static_cast<double>(arena - lower_bound) / static_cast<double>(lower_bound)
             : 0.0;
}

}  // namespace memfold
