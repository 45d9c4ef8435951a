// Planner and verifier throughput on model-like random buffer sets.
//
// Buffer i lives from step i/2 for 0..4 more steps (a schedule where most activations die soon
// after they are made); one buffer in 1,000 lives to the end (model inputs, outputs, long skip
// connections). Sizes are 16 B..256 KiB, alignment 16. Items are buffers.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "memfold/placement/diagonal_planner.h"
#include "memfold/placement/greedy_planner.h"
#include "memfold/placement/planner.h"
#include "memfold/placement/verify_plan.h"

namespace memfold {
namespace {

std::vector<BufferRequest> ModelLikeRequests(int32_t count) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int64_t> bytes(16, 256 * 1024);
  std::uniform_int_distribution<int32_t> span(0, 4);
  std::uniform_int_distribution<int32_t> long_lived(0, 999);
  const int32_t end = count / 2 + 4;
  std::vector<BufferRequest> requests;
  requests.reserve(count);
  for (int32_t id = 0; id < count; ++id) {
    const int32_t first = id / 2;
    const int32_t last = long_lived(rng) == 0 ? end : first + span(rng);
    requests.push_back({.id = id,
                        .bytes = bytes(rng),
                        .alignment = 16,
                        .first = first,
                        .last = last,
                        .may_overlap = {}});
  }
  return requests;
}

void PlanBenchmark(benchmark::State& state, const Planner& planner) {
  const std::vector<BufferRequest> requests =
      ModelLikeRequests(static_cast<int32_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(planner.Place(requests));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_Greedy(benchmark::State& state) { PlanBenchmark(state, GreedyPlanner()); }
void BM_Naive(benchmark::State& state) { PlanBenchmark(state, NaivePlanner()); }

void BM_VerifyGreedyPlan(benchmark::State& state) {
  const std::vector<BufferRequest> requests =
      ModelLikeRequests(static_cast<int32_t>(state.range(0)));
  const Plan plan = GreedyPlanner().Place(requests);
  for (auto _ : state) {
    const Status status = VerifyPlan(requests, plan);
    if (!status.ok()) state.SkipWithError(status.message().c_str());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

// The placement-order search RefinePlan runs (its budget: 1000 moves or 3e7 neighbour checks),
// from the greedy plan's offset order; the label says how far it brought the arena down.
void BM_SearchPlacementOrder(benchmark::State& state) {
  const std::vector<BufferRequest> requests =
      ModelLikeRequests(static_cast<int32_t>(state.range(0)));
  const Plan greedy = GreedyPlanner().Place(requests);
  std::vector<int32_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return greedy.offsets[a] < greedy.offsets[b]; });
  int64_t arena = 0;
  for (auto _ : state) {
    const std::optional<Plan> found = SearchPlacementOrder(
        requests, order, 0, {.moves = 1000, .neighbour_checks = 30'000'000}, "search");
    if (!found) state.SkipWithError("too many overlapping pairs to search");
    arena = found ? found->arena_bytes : 0;
  }
  state.SetLabel(std::to_string(greedy.arena_bytes) + " B -> " + std::to_string(arena) + " B");
}

BENCHMARK(BM_Greedy)->RangeMultiplier(10)->Range(1000, 100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Naive)->RangeMultiplier(10)->Range(1000, 100000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_VerifyGreedyPlan)
    ->RangeMultiplier(10)
    ->Range(1000, 100000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SearchPlacementOrder)
    ->RangeMultiplier(10)
    ->Range(1000, 100000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace memfold
