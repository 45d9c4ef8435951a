#include "memfold/plan/plan_graph.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "memfold/ops/registry.h"
#include "memfold/placement/diagonal_planner.h"
#include "memfold/placement/lower_bound.h"
#include "memfold/placement/planner.h"
#include "memfold/plan/storage_planner.h"
#include "memfold/placement/verify_plan.h"

namespace memfold {
namespace {

constexpr std::string_view kBest = "best";
constexpr std::string_view kOffline = "offline";
constexpr std::string_view kDiagonal = "diagonal";
constexpr std::string_view kMxnet = "mxnet";

// Among the time steps at which the arena is full to its top, the one with the most live
// bytes: the operator whose working set sets the arena size. A sweep over time keeps the ends
// of the live buffers in a multiset: O(n log n + T).
int32_t PeakTime(const Liveness& live, const Plan& plan) {
  const auto steps = static_cast<size_t>(live.end_time) + 1;
  const std::vector<int64_t> live_bytes = LiveBytesPerStep(live);
  std::vector<std::vector<int32_t>> starting(steps), ending(steps + 1);
  for (const BufferRequest& r : live.requests) {
    starting[static_cast<size_t>(r.first)].push_back(r.id);
    ending[static_cast<size_t>(r.last) + 1].push_back(r.id);
  }
  std::multiset<int64_t> ends;
  auto end_of = [&](int32_t id) { return plan.offsets[static_cast<size_t>(id)] + live.requests[static_cast<size_t>(id)].bytes; };
  int64_t highest = -1, peak_bytes = -1;
  size_t peak = 0;
  for (size_t t = 0; t < steps; ++t) {
    const int64_t running = live_bytes[t];
    for (int32_t id : ending[t]) ends.erase(ends.find(end_of(id)));
    for (int32_t id : starting[t]) ends.insert(end_of(id));
    const int64_t top = ends.empty() ? 0 : *ends.rbegin();
    if (top > highest || (top == highest && running > peak_bytes)) {
      highest = top;
      peak_bytes = running;
      peak = t;
    }
  }
  return static_cast<int32_t>(peak);
}

Result<Plan> Verified(Plan plan, const std::vector<BufferRequest>& requests) {
  Status verified = VerifyPlan(requests, plan);
  if (!verified.ok()) {
    return Status::Error("planner '" + plan.planner + "' produced an invalid plan (a memfold bug, please report): " + verified.message());
  }
  return plan;
}

Result<Plan> PlaceVerified(const Planner& planner, const std::vector<BufferRequest>& requests) {
  return Verified(planner.Place(requests), requests);
}

// The model file's own offsets, the rest planned around them as TFLM does; verified like any
// other plan (TFLM takes offline offsets on trust, memfold does not). Overlaps are accepted
// up to the proven safe overlap, so diagonal plans memfold wrote verify when read back.
Result<Plan> PlaceOffline(const Graph& graph, const Liveness& live) {
  if (graph.offline_offsets.empty()) {
    return Status::Error("the model carries no offline plan (OfflineMemoryAllocation); choose another planner");
  }
  std::vector<BufferRequest> requests = live.requests;
  for (BufferRequest& r : requests) {
    const ValueId v = live.value_of[static_cast<size_t>(r.id)];
    if (v != kNoValue && graph.offline_offsets[static_cast<size_t>(v)] >= 0) r.fixed_offset = graph.offline_offsets[static_cast<size_t>(v)];
  }
  Plan plan = MakePlanner("greedy")->Place(requests);
  plan.planner = kOffline;
  Status verified = VerifyPlan(requests, plan);
  if (!verified.ok()) return Status::Error("the model's offline plan is unsafe: " + verified.message());
  return plan;
}

// The smallest of the diagonal placement orders. The greedy plans (which use no overlap) are
// candidates too, so diagonal planning never needs more memory than greedy.
Result<Plan> PlaceDiagonal(const std::vector<BufferRequest>& requests) {
  std::optional<Plan> best;
  auto consider = [&](const Planner& planner) -> Status {
    MF_ASSIGN_OR_RETURN(Plan plan, PlaceVerified(planner, requests));
    if (!best || plan.arena_bytes < best->arena_bytes) best = std::move(plan);
    return Status::Ok();
  };
  for (auto order : {DiagonalPlanner::Order::kLargestFirst, DiagonalPlanner::Order::kReverseExecution,
                     DiagonalPlanner::Order::kPeakFirst}) {
    MF_RETURN_IF_ERROR(consider(DiagonalPlanner(order)));
  }
  for (std::string_view name : {"greedy", "greedy_stable"}) MF_RETURN_IF_ERROR(consider(*MakePlanner(name)));
  return *best;
}

// MXNet's storage plan, its storages then placed in one arena by the greedy planner. In-place
// pairs share bytes at the step where the input dies: a full overlap, proven for the
// element-wise ops MXNet runs in place (their O_s is the whole output).
Result<Plan> PlaceMxnet(const Graph& graph, Liveness* live) {
  const StoragePlan storage = PlanStorage(graph, *live);
  std::vector<BufferRequest> blocks(storage.storage_bytes.size());
  for (size_t s = 0; s < blocks.size(); ++s) {
    blocks[s].id = static_cast<int32_t>(s);
    blocks[s].bytes = storage.storage_bytes[s];
    blocks[s].first = std::numeric_limits<int32_t>::max();
    blocks[s].last = -1;
  }
  for (const BufferRequest& r : live->requests) {
    BufferRequest& block = blocks[static_cast<size_t>(storage.storage_of[static_cast<size_t>(r.id)])];
    block.first = std::min(block.first, r.first);
    block.last = std::max(block.last, r.last);
  }
  MF_ASSIGN_OR_RETURN(Plan placed, PlaceVerified(*MakePlanner("greedy"), blocks));
  Plan plan{.planner = std::string(kMxnet), .arena_bytes = placed.arena_bytes, .offsets = {}};
  for (const BufferRequest& r : live->requests) plan.offsets.push_back(placed.offsets[static_cast<size_t>(storage.storage_of[static_cast<size_t>(r.id)])]);
  for (const auto& [out, in] : storage.in_place) {
    live->requests[static_cast<size_t>(out)].may_overlap.push_back({in, live->requests[static_cast<size_t>(out)].bytes});
  }
  return Verified(std::move(plan), live->requests);
}

}  // namespace

void AddOverlapAllowances(const Graph& graph, OverlapSource source, Liveness* live,
                          int64_t replay_budget) {
  for (size_t pos = 0; pos < graph.schedule.size(); ++pos) {
    const Node& node = graph.node(graph.schedule[pos]);
    const OpDef* def = FindOp(node.op);
    if (def == nullptr || def->alias || node.outputs.empty()) continue;
    const int32_t out = live->buffer_of[static_cast<size_t>(node.outputs[0])];
    if (out == kNoBuffer || live->requests[static_cast<size_t>(out)].first != NodeTime(pos)) continue;
    // O_s models contiguous outputs: one written in rows of a concat overlaps nothing.
    if (ViewRows(*live, node.outputs[0]).row_bytes != 0) continue;
    const int64_t elements = graph.value(node.outputs[0]).elements();
    const bool replay = source == OverlapSource::kAlgorithmic && elements <= replay_budget;
    const OverlapFn model = replay ? def->overlap_algorithmic : def->overlap_analytic;
    if (model == nullptr) continue;
    if (replay) replay_budget -= elements;
    // Per dying input buffer, the smallest O_s over the slots that read it: each slot's O_s
    // only protects that slot's reads (concat(m, m) reads m twice, at different times).
    std::map<int32_t, int64_t> allowance;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const ValueId v = node.inputs[k];
      const int32_t in = v == kNoValue ? kNoBuffer : live->buffer_of[static_cast<size_t>(v)];
      if (in == kNoBuffer || in == out || live->requests[static_cast<size_t>(in)].last != NodeTime(pos)) continue;
      const std::optional<int64_t> os = model(graph, node, static_cast<int>(k));
      const int64_t bytes = os ? std::max<int64_t>(*os, 0) : 0;
      auto [it, fresh] = allowance.emplace(in, bytes);
      if (!fresh) it->second = std::min(it->second, bytes);
    }
    for (const auto& [in, bytes] : allowance) {
      if (bytes > 0) live->requests[static_cast<size_t>(out)].may_overlap.push_back({in, bytes});
    }
  }
}

int64_t OverlapBytes(const GraphPlan& gp, int32_t id) {
  const BufferRequest& out = gp.liveness.requests[static_cast<size_t>(id)];
  int64_t overlap = 0;
  for (const OverlapAllowance& a : out.may_overlap) {
    const int64_t end = gp.plan.offsets[static_cast<size_t>(id)] + out.bytes;
    const int64_t start = gp.plan.offsets[static_cast<size_t>(a.input)];
    if (start >= gp.plan.offsets[static_cast<size_t>(id)] && start < end) overlap = std::max(overlap, end - start);
  }
  return overlap;
}

std::vector<std::string> GraphPlannerNames() {
  std::vector<std::string> names;
  for (std::string_view name : PlannerNames()) names.emplace_back(name);
  names.emplace_back(kMxnet);
  names.emplace_back(kDiagonal);
  names.emplace_back(kOffline);
  names.emplace_back(kBest);
  return names;
}

Status RefinePlan(const Graph& graph, GraphPlan* gp) {
  constexpr double kWork = 2e7;    // neighbour checks per refinement
  constexpr int32_t kMoves = 1000;  // enough to reach the bound on every zoo model's split graph
  const std::string& planner = gp->plan.planner;
  if (planner.rfind("greedy", 0) != 0 && planner.rfind("diagonal", 0) != 0) return Status::Ok();
  Liveness live = ComputeLiveness(graph);
  AddOverlapAllowances(graph, OverlapSource::kAlgorithmic, &live);
  const int64_t floor = AlignUp(LowerBoundWithOverlaps(live.requests), kArenaAlignment);
  const auto n = static_cast<double>(live.requests.size());
  const auto moves = static_cast<int32_t>(std::min<double>(kMoves, kWork / std::max(1.0, n * n)));
  if (gp->plan.arena_bytes <= floor || moves == 0 ||
      gp->plan.offsets.size() != live.requests.size())
    return Status::Ok();
  std::vector<int32_t> order(live.requests.size());
  std::iota(order.begin(), order.end(), 0);
  const std::vector<int64_t>& at = gp->plan.offsets;
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return at[a] < at[b]; });
  Plan searched = SearchPlacementOrder(live.requests, std::move(order), floor, moves, "diagonal_search");
  if (searched.arena_bytes >= gp->plan.arena_bytes) return Status::Ok();
  MF_ASSIGN_OR_RETURN(gp->plan, Verified(std::move(searched), live.requests));
  gp->lower_bound = LowerBoundWithOverlaps(live.requests);
  gp->liveness = std::move(live);
  gp->peak_time = PeakTime(gp->liveness, gp->plan);
  return Status::Ok();
}

Result<GraphPlan> PlanGraph(const Graph& graph, std::string_view planner, OverlapSource source,
                            bool refine) {
  const bool best = planner == kBest, diagonal = planner == kDiagonal;
  if (!best && !diagonal && planner != kOffline && planner != kMxnet && MakePlanner(planner) == nullptr) {
    std::string names;
    for (const std::string& n : GraphPlannerNames()) names += (names.empty() ? "" : ", ") + n;
    return Status::Error("unknown planner '" + std::string(planner) + "'; choose one of " + names);
  }
  GraphPlan result;
  result.liveness = ComputeLiveness(graph);
  const std::vector<BufferRequest> plain = result.liveness.requests;
  result.lower_bound = LowerBound(plain);
  if (planner == kOffline) {
    AddOverlapAllowances(graph, source, &result.liveness);
    MF_ASSIGN_OR_RETURN(result.plan, PlaceOffline(graph, result.liveness));
  } else if (planner == kMxnet) {
    MF_ASSIGN_OR_RETURN(result.plan, PlaceMxnet(graph, &result.liveness));
  } else if (!best && !diagonal) {
    MF_ASSIGN_OR_RETURN(result.plan, PlaceVerified(*MakePlanner(planner), plain));
  } else {
    Liveness with_overlaps = result.liveness;
    AddOverlapAllowances(graph, source, &with_overlaps);
    MF_ASSIGN_OR_RETURN(result.plan, PlaceDiagonal(with_overlaps.requests));
    bool overlapping = true;
    if (best) {
      for (std::string_view name : PlannerNames()) {
        MF_ASSIGN_OR_RETURN(Plan plan, PlaceVerified(*MakePlanner(name), plain));
        if (plan.arena_bytes < result.plan.arena_bytes) {
          result.plan = std::move(plan);
          overlapping = false;
        }
      }
      if (!graph.offline_offsets.empty()) {
        Result<Plan> offline = PlaceOffline(graph, with_overlaps);
        if (offline.ok() && offline->arena_bytes < result.plan.arena_bytes) {
          result.plan = std::move(offline).value();
          overlapping = true;
        }
      }
    }
    if (overlapping) {
      result.liveness = std::move(with_overlaps);
      result.lower_bound = LowerBoundWithOverlaps(result.liveness.requests);
    }
  }
  result.peak_time = PeakTime(result.liveness, result.plan);
  if (refine && (best || diagonal)) MF_RETURN_IF_ERROR(RefinePlan(graph, &result));
  return result;
}

}  // namespace memfold
