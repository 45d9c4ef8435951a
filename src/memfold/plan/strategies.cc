#include "memfold/plan/strategies.h"

#include <algorithm>
#include <limits>

#include "memfold/placement/diagonal_planner.h"
#include "memfold/placement/greedy_planner.h"
#include "memfold/placement/planner.h"
#include "memfold/placement/verify_plan.h"
#include "memfold/plan/storage_planner.h"

namespace memfold {
namespace {

Result<Plan> Verified(Plan plan, std::span<const BufferRequest> requests) {
  Status verified = VerifyPlan(requests, plan);
  if (!verified.ok()) {
    return Status::Error(
        "planner '" + plan.planner +
        "' produced an invalid plan (a memfold bug, please report): " + verified.message());
  }
  return plan;
}

// A placement-core planner over the graph's requests, without or with overlap allowances.
Result<Placement> Placed(const PlanningInput& input, bool overlapping, const Planner& planner) {
  const Liveness& live = overlapping ? input.overlapping() : input.plain();
  MF_ASSIGN_OR_RETURN(Plan plan, Verified(planner.Place(live.requests), live.requests));
  return Placement{std::move(plan), live, overlapping};
}

Result<Placement> Naive(const PlanningInput& in) { return Placed(in, false, NaivePlanner()); }
Result<Placement> Greedy(const PlanningInput& in) { return Placed(in, false, GreedyPlanner()); }
Result<Placement> GreedyStable(const PlanningInput& in) {
  return Placed(in, false, GreedyPlanner(GreedyPlanner::TieOrder::kRequest));
}
Result<Placement> DiagonalLargestFirst(const PlanningInput& in) {
  return Placed(in, true, DiagonalPlanner(DiagonalPlanner::Order::kLargestFirst));
}
Result<Placement> DiagonalReverse(const PlanningInput& in) {
  return Placed(in, true, DiagonalPlanner(DiagonalPlanner::Order::kReverseExecution));
}
Result<Placement> DiagonalPeakFirst(const PlanningInput& in) {
  return Placed(in, true, DiagonalPlanner(DiagonalPlanner::Order::kPeakFirst));
}

// The smallest verified placement of the named strategies, the earlier one on ties. Members
// marked optional may fail (an unsafe offline plan) and are then passed over.
struct Member {
  std::string_view name;
  bool optional = false;
};
Result<Placement> SmallestOf(const PlanningInput& in, std::initializer_list<Member> members) {
  std::optional<Placement> best;
  for (const Member& member : members) {
    MF_ASSIGN_OR_RETURN(const Strategy* strategy, FindStrategy(member.name));
    Result<Placement> placed = strategy->place(in);
    if (!placed.ok()) {
      if (member.optional) continue;
      return placed.status();
    }
    if (!best || placed->plan.arena_bytes < best->plan.arena_bytes)
      best = std::move(placed).value();
  }
  return std::move(best).value();
}

// The diagonal orders and, so that diagonal planning never needs more than greedy, both
// greedy plans; reported against the overlapping requests whichever wins (a plain plan is valid
// under them too).
Result<Placement> Diagonal(const PlanningInput& in) {
  MF_ASSIGN_OR_RETURN(Placement p, SmallestOf(in, {{"diagonal_greedy"},
                                                   {"diagonal_reverse"},
                                                   {"diagonal_peak"},
                                                   {"greedy"},
                                                   {"greedy_stable"}}));
  p.liveness = in.overlapping();
  p.overlapping = true;
  return p;
}

// The model file's own offsets (OfflineMemoryAllocation), the rest placed around them by TFLM's
// greedy planner, as TFLM does; verified like any other plan (TFLM takes them on trust).
// Overlaps are accepted up to the proven safe overlap, so diagonal plans memfold wrote verify
// when read back.
Result<Placement> Offline(const PlanningInput& in) {
  const Graph& graph = in.graph();
  if (graph.offline_offsets.empty()) {
    return Status::Error(
        "the model carries no offline plan (OfflineMemoryAllocation); choose another planner");
  }
  const Liveness& live = in.overlapping();
  std::vector<BufferRequest> requests = live.requests;
  for (BufferRequest& r : requests) {
    const ValueId v = live.value_of[static_cast<size_t>(r.id)];
    if (v != kNoValue && graph.offline_offsets[static_cast<size_t>(v)] >= 0) {
      r.fixed_offset = graph.offline_offsets[static_cast<size_t>(v)];
    }
  }
  Plan plan = GreedyPlanner().Place(requests);
  plan.planner = "offline";
  Status verified = VerifyPlan(requests, plan);
  if (!verified.ok())
    return Status::Error("the model's offline plan is unsafe: " + verified.message());
  return Placement{std::move(plan), live, true};
}

// MXNet's storage plan, its storages then placed in one arena by the greedy planner. In-place
// pairs share bytes at the step where the input dies: a full overlap, proven for the
// element-wise ops MXNet runs in place (their O_s is the whole output).
Result<Placement> Mxnet(const PlanningInput& in) {
  Liveness live = in.plain();
  const StoragePlan storage = PlanStorage(in.graph(), live);
  std::vector<BufferRequest> blocks(storage.storage_bytes.size());
  for (size_t s = 0; s < blocks.size(); ++s) {
    blocks[s].id = static_cast<int32_t>(s);
    blocks[s].bytes = storage.storage_bytes[s];
    blocks[s].first = std::numeric_limits<int32_t>::max();
    blocks[s].last = -1;
  }
  for (const BufferRequest& r : live.requests) {
    BufferRequest& block =
        blocks[static_cast<size_t>(storage.storage_of[static_cast<size_t>(r.id)])];
    block.first = std::min(block.first, r.first);
    block.last = std::max(block.last, r.last);
  }
  // Only the final plan of the requests is verified: it is what runs, and a storage placement
  // that broke it would fail there.
  const Plan placed = GreedyPlanner().Place(blocks);
  Plan plan{.planner = "mxnet", .arena_bytes = placed.arena_bytes, .offsets = {}};
  for (const BufferRequest& r : live.requests) {
    plan.offsets.push_back(
        placed.offsets[static_cast<size_t>(storage.storage_of[static_cast<size_t>(r.id)])]);
  }
  for (const auto& [out, input] : storage.in_place) {
    BufferRequest& request = live.requests[static_cast<size_t>(out)];
    request.may_overlap.push_back({input, request.bytes});
  }
  MF_ASSIGN_OR_RETURN(plan, Verified(std::move(plan), live.requests));
  // In-place updates share bytes: the bound of a plan that uses them is the one with overlaps.
  const bool in_place = !storage.in_place.empty();
  return Placement{std::move(plan), std::move(live), in_place};
}

Result<Placement> Smallest(const PlanningInput& in) {
  return SmallestOf(in,
                    {{"diagonal"}, {"naive"}, {"greedy"}, {"greedy_stable"}, {"offline", true}});
}

Result<Placement> MxnetOrGreedy(const PlanningInput& in) {
  return SmallestOf(in, {{"mxnet"}, {"greedy"}});
}

constexpr Strategy kStrategies[] = {
    {"naive", "every buffer its own memory", &Naive},
    {"greedy", "TensorFlow Lite Micro's greedy planner, reproduced exactly", &Greedy, false, true},
    {"greedy_stable", "the greedy planner with equal sizes in request order", &GreedyStable, false,
     true},
    {"diagonal_greedy", "diagonal overlaps, largest buffer first (TFLM's order)",
     &DiagonalLargestFirst, false, true},
    {"diagonal_reverse", "diagonal overlaps, in reverse execution order (the DMO paper's)",
     &DiagonalReverse, false, true},
    {"diagonal_peak", "diagonal overlaps, the buffers of the busiest steps first",
     &DiagonalPeakFirst, false, true},
    {"diagonal", "the smallest of the three diagonal orders and both greedy plans", &Diagonal, true,
     true},
    {"mxnet", "MXNet's PlanMemory storages, placed by greedy (Echo's baseline)", &Mxnet},
    {"offline", "the model file's own offline plan, verified", &Offline},
    {"smallest", "the smallest verified plan of diagonal, naive, both greedies and offline",
     &Smallest, true},
    {"mxnet_or_greedy", "the smaller of mxnet and greedy (training steps)", &MxnetOrGreedy},
};

}  // namespace

PlanningInput::PlanningInput(const Graph& graph, OverlapSource source)
    : graph_(graph), source_(source), plain_(ComputeLiveness(graph)) {}

const Liveness& PlanningInput::overlapping() const {
  if (!overlapping_) {
    overlapping_ = plain_;
    AddOverlapAllowances(graph_, source_, &*overlapping_);
  }
  return *overlapping_;
}

std::span<const Strategy> Strategies() { return kStrategies; }

Result<const Strategy*> FindStrategy(std::string_view name) {
  for (const Strategy& strategy : kStrategies) {
    if (strategy.name == name) return &strategy;
  }
  std::string names;
  for (const std::string& n : StrategyNames()) names += (names.empty() ? "" : ", ") + n;
  return Status::Error("unknown planner '" + std::string(name) + "'; choose one of " + names);
}

std::vector<std::string> StrategyNames() {
  std::vector<std::string> names;
  for (const Strategy& strategy : kStrategies) names.emplace_back(strategy.name);
  return names;
}

}  // namespace memfold
