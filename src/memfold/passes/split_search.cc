#include "memfold/passes/split_search.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "memfold/ops/cost.h"
#include "memfold/ops/registry.h"

namespace memfold {
namespace {

constexpr size_t kAxisH = 1;  // NHWC

// Regions up to `max_ops` operators long that contain a position next to the peak operator, in
// the order the search tries them (its work is bounded): long ones that run from a low point of
// the activations before the peak to a low point after it, where a tiled stage saves the most,
// then every short one (up to kShortRegion operators: chains around the peak). Long ones: the ends
// are the outputs that are smaller than every output between the peak and them (the nearest
// kLowPoints), the starts likewise for the first operator's input going backwards (a streamed input
// counts as nothing).
constexpr int32_t kShortRegion = 4;
constexpr size_t kLowPoints = 4;

// Positions from `from` walking by `step` (within [0, size) and `reach` steps) whose bytes are
// below every earlier one's: the nearest `count` of them.
std::vector<int32_t> LowPoints(int32_t from, int32_t step, int32_t reach, int32_t size,
                               const std::function<int64_t(int32_t)>& bytes) {
  std::vector<int32_t> lows;
  int64_t lowest = std::numeric_limits<int64_t>::max();
  for (int32_t pos = from, k = 0; pos >= 0 && pos < size && k < reach && lows.size() < kLowPoints;
       pos += step, ++k) {
    if (bytes(pos) < lowest) {
      lowest = bytes(pos);
      lows.push_back(pos);
    }
  }
  return lows;
}

std::vector<std::pair<int32_t, int32_t>> RegionsNearPeak(const Graph& graph, int32_t peak_position,
                                                         int32_t max_ops) {
  const auto size = static_cast<int32_t>(graph.schedule.size());
  const RegionChecker regions_of(graph);
  auto node_at = [&](int32_t pos) -> const Node& {
    return graph.node(graph.schedule[static_cast<size_t>(pos)]);
  };
  std::vector<char> op_ok(static_cast<size_t>(size), 0);
  for (int32_t pos = std::max(0, peak_position - max_ops);
       pos <= std::min(size - 1, peak_position + max_ops); ++pos)
    op_ok[static_cast<size_t>(pos)] = regions_of.Op(pos).ok();
  auto valid = [&](int32_t first, int32_t last) {
    return first >= 0 && last < size && first <= last &&
           std::all_of(op_ok.begin() + first, op_ok.begin() + last + 1,
                       [](char ok) { return ok; }) &&
           regions_of.Bounds(first, last).ok();
  };
  std::vector<std::pair<int32_t, int32_t>> regions;
  const int32_t peak = std::min(peak_position, size - 1);
  const std::vector<int32_t> ends = LowPoints(peak, 1, max_ops, size, [&](int32_t pos) {
    return op_ok[static_cast<size_t>(pos)] ? graph.value(node_at(pos).outputs[0]).bytes()
                                           : std::numeric_limits<int64_t>::max();
  });
  const std::vector<int32_t> starts = LowPoints(peak, -1, max_ops, size, [&](int32_t pos) {
    const Value& in = graph.value(node_at(pos).inputs[0]);
    return !op_ok[static_cast<size_t>(pos)] ? std::numeric_limits<int64_t>::max()
           : in.role == Role::kStreamed     ? int64_t{0}
                                            : in.bytes();
  });
  for (int32_t first : starts) {
    for (int32_t last : ends) {
      if (last - first >= kShortRegion && last - first < max_ops && valid(first, last))
        regions.emplace_back(first, last);
    }
  }
  for (int32_t first = std::max(0, peak_position - kShortRegion); first <= peak_position + 1;
       ++first) {
    for (int32_t last = std::max(first, peak_position - 1);
         last - first < kShortRegion && last < size; ++last) {
      if (valid(first, last)) regions.emplace_back(first, last);
    }
  }
  return regions;
}

struct Candidate {
  Graph graph;
  SplitStage stage;
  int64_t search_arena = 0;  // planned with the search's overlap source
  int64_t stage_peak = 0;    // most payload bytes live while the split stage runs
};

// The most payload bytes live at any time of the split stage (positions of `stats`).
int64_t StagePeak(const GraphPlan& plan, const SplitStats& stats) {
  const std::vector<int64_t> live = LiveBytesPerStep(plan.liveness);
  int64_t peak = 0;
  for (int32_t pos = stats.first_position; pos <= stats.last_position; ++pos) {
    peak = std::max(peak, live[static_cast<size_t>(NodeTime(static_cast<size_t>(pos)))]);
  }
  return peak;
}

// Row counts past the best one for a grid width that may still improve on it before the width
// is abandoned (the arena falls with the tile size, then flattens or grows with the halo).
constexpr int32_t kTilePatience = 3;

// Candidates of one round kept for re-planning with exact overlaps: the search ranks by the
// cheaper closed-form overlaps, which may order close candidates differently.
constexpr size_t kFinalists = 4;

// Smaller arena first; among equal arenas (the peak now lies elsewhere) the split that leaves
// its own stage lowest, so that a later round, lowering that other peak, does not find this
// stage in the way; then fewer extra FLOPs.
// How a round ranks candidate splits: by the arena of the placement heuristics, or by the
// overlap-aware lower bound. The heuristics scatter around the bound on split graphs (which the
// refined plan of a winner then reaches or nears), so a split the heuristics place badly may
// still be the one to take; neither ranking finds the better sequence of rounds every time.
enum class SplitRanking { kArena, kLowerBound };

// Where a round looks for chains: around the peak of the heuristics' plan, or of the refined
// exact plan (the heuristics' peak may be a placement accident).
enum class PeakSource { kHeuristic, kRefined };

int64_t SearchKey(const GraphPlan& plan, SplitRanking ranking) {
  return ranking == SplitRanking::kArena ? plan.plan.arena_bytes : plan.lower_bound;
}

bool Ranks(const Candidate& a, const Candidate& b) {
  if (a.search_arena != b.search_arena) return a.search_arena < b.search_arena;
  if (a.stage_peak != b.stage_peak) return a.stage_peak < b.stage_peak;
  return a.stage.stats.extra_flops < b.stage.stats.extra_flops;
}

// Keeps `candidate` if it ranks among the best kFinalists, best first.
void Offer(Candidate candidate, std::vector<Candidate>* best) {
  if (best->size() == kFinalists && !Ranks(candidate, best->back())) return;
  if (best->size() == kFinalists) best->pop_back();
  const auto at = std::upper_bound(best->begin(), best->end(), candidate, Ranks);
  best->insert(at, std::move(candidate));
}

// What planning one candidate found, kept so that the search's strategies, which often walk
// the same rounds, plan each candidate once. Keyed by the splits applied before and this one.
struct Planned {
  bool ok = false;  // SplitRegion accepted it, within the budget
  double extra_flops = 0;
  int64_t arena = 0, lower_bound = 0, stage_peak = 0;
  int32_t peak_time = 0;
  std::shared_ptr<const GraphPlan> exact;  // a finalist's refined plan
};
// Every candidate planned so far, by search key, and what planning them cost.
struct PlanMemo {
  std::map<std::string, Planned> by_key;
  double work = 0;      // placement work spent on candidates: the sum of their buffers squared
  int32_t planned = 0;  // candidates planned
};

std::string SplitKey(const RegionSplit& split) {
  return std::to_string(split.first) + "-" + std::to_string(split.last) + ":" +
         std::to_string(split.rows) + "x" + std::to_string(split.cols) +
         (split.cache_halos ? "c" : "") + (split.strips_in_place ? "p" : "") +
         (split.copy_free_concat ? "v;" : ";");
}

// Plans one candidate split (or recalls it) and offers it when it ranks below `bar`; returns
// its search key, or nothing when the split is refused or over the recompute budget.
Result<std::optional<int64_t>> TryRegionSplit(const Graph& graph, const std::string& history,
                                              const RegionSplit& split, int64_t bar,
                                              double flops_left, const SplitOptions& options,
                                              SplitRanking ranking, PlanMemo* memo,
                                              int32_t* planned, std::vector<Candidate>* best) {
  const std::string key = history + SplitKey(split);
  auto known = memo->by_key.find(key);
  std::optional<Graph> graph_split;
  SplitStats stats;
  if (known == memo->by_key.end()) {
    if (memo->work >= options.max_search_work || memo->planned >= options.max_candidates)
      return std::optional<int64_t>{};
    // The same splits before leave the same budget: over it is remembered as refused.
    Planned found;
    Result<Graph> rewritten = SplitRegion(graph, split, &stats);
    found.ok = rewritten.ok() && stats.extra_flops <= flops_left;
    found.extra_flops = stats.extra_flops;
    if (found.ok) {
      MF_ASSIGN_OR_RETURN(GraphPlan plan, PlanGraph(*rewritten, options.search_planner,
                                                    {.overlaps = options.search_overlaps}));
      ++*planned;
      const auto buffers = static_cast<double>(plan.liveness.requests.size());
      memo->work += buffers * buffers;
      ++memo->planned;
      found.arena = plan.plan.arena_bytes;
      found.lower_bound = plan.lower_bound;
      found.stage_peak = StagePeak(plan, stats);
      found.peak_time = plan.peak_time;
      graph_split = std::move(*rewritten);
    }
    known = memo->by_key.emplace(key, found).first;
  }
  const Planned& found = known->second;
  if (!found.ok || found.extra_flops > flops_left) return std::optional<int64_t>{};
  const int64_t arena = ranking == SplitRanking::kArena ? found.arena : found.lower_bound;
  if (arena < bar) {
    if (!graph_split) {
      MF_ASSIGN_OR_RETURN(Graph rewritten, SplitRegion(graph, split, &stats));
      graph_split = std::move(rewritten);
    }
    SplitStage stage{.split = split, .stats = stats};
    for (int32_t pos = split.first; pos <= split.last; ++pos)
      stage.ops.push_back(graph.node(graph.schedule[static_cast<size_t>(pos)]).name);
    Offer(Candidate{std::move(*graph_split), std::move(stage), arena, found.stage_peak}, best);
  }
  return std::optional<int64_t>{arena};
}

// Row counts a grid tries, in the order tried: every count up to max_tiles in increasing order
// when halos are recomputed (the recompute grows with the count); with cached halos, which cost
// no recomputation and shrink with thinner tiles, one output row per tile first, then 2, 3
// and 4.
std::vector<int32_t> RowCounts(const SplitOptions& options, bool cache_halos, int64_t height) {
  std::vector<int32_t> counts;
  if (!cache_halos) {
    for (int32_t rows = options.min_tiles; rows <= options.max_tiles; ++rows)
      counts.push_back(rows);
    return counts;
  }
  for (int64_t per_tile = 1; per_tile <= 4; ++per_tile) {
    const auto rows = static_cast<int32_t>((height + per_tile - 1) / per_tile);
    if (rows >= options.min_tiles && (counts.empty() || rows < counts.back()))
      counts.push_back(rows);
  }
  return counts;
}

// The best splits of one round by the search's arenas, best first: those below `bar`. For each
// region, with halo rows cached and with halos recomputed: grids of 1..max_cols columns while
// wider grids improve; for each, row counts in increasing order (with a copy-free and a copying
// concat) until the budget is exceeded or kTilePatience counts in a row fail to improve on
// that grid's best.
Result<std::vector<Candidate>> BestSplits(const Graph& graph, const std::string& history,
                                          int32_t peak_position, int64_t bar, double flops_left,
                                          const SplitOptions& options, SplitRanking ranking,
                                          PlanMemo* memo, int32_t* planned) {
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  std::vector<Candidate> best;
  for (const auto& [first, last] : RegionsNearPeak(graph, peak_position, options.max_region_ops)) {
    const int64_t height =
        graph.value(graph.node(graph.schedule[static_cast<size_t>(last)]).outputs[0]).shape[kAxisH];
    for (const bool cache : {true, false}) {
      // Short regions keep little in line buffers; whole stages are where caching pays.
      if (cache && last - first < kShortRegion) continue;
      int64_t mode_best = kNone;
      for (int32_t cols = 1; cols <= options.max_cols; ++cols) {
        int64_t cols_best = kNone;
        int32_t since_best = 0;
        for (int32_t rows : RowCounts(options, cache, height)) {
          if (since_best >= (cache ? 1 : kTilePatience)) break;
          int64_t rows_best = kNone;
          for (const bool copy_free : {true, false}) {
            // A copying concat matters where the region's output is large next to its input:
            // short chains in bands; whole stages end small.
            if (!copy_free && (last - first >= kShortRegion || cols > 1)) break;
            RegionSplit split{first, last, rows, copy_free, cols, cache};
            split.caches_at_tile_end = options.caches_at_tile_end;
            MF_ASSIGN_OR_RETURN(std::optional<int64_t> arena,
                                TryRegionSplit(graph, history, split, bar, flops_left, options,
                                               ranking, memo, planned, &best));
            if (!arena) break;
            rows_best = std::min(rows_best, *arena);
          }
          if (rows_best == kNone) break;  // over budget: more rows too
          since_best = rows_best < cols_best ? 0 : since_best + 1;
          cols_best = std::min(cols_best, rows_best);
        }
        if (cols_best >= mode_best) break;  // wider grids stopped helping
        mode_best = cols_best;
      }
    }
  }
  return best;
}

// Rounds of splitting around the moving peak, candidates ranked by `ranking`; `plan` is the
// input graph's refined plan.
Result<SplitResult> SplitRounds(const Graph& graph, const GraphPlan& plan,
                                const SplitOptions& options, SplitRanking ranking, PeakSource peaks,
                                PlanMemo* memo) {
  MF_ASSIGN_OR_RETURN(GraphPlan search_plan, PlanGraph(graph, options.search_planner,
                                                       {.overlaps = options.search_overlaps}));
  SplitResult result;
  result.graph = graph;
  result.arena_before = result.arena_after = plan.plan.arena_bytes;
  result.total_flops = TotalFlops(graph);
  const double budget = options.max_recompute * result.total_flops;
  int64_t bar = SearchKey(search_plan, ranking);
  const bool refined_peaks = peaks == PeakSource::kRefined;
  int32_t peak_position = std::max(0, (refined_peaks ? plan : search_plan).peak_time - 1);
  std::string history;
  for (int32_t round = 0; round < options.max_rounds; ++round) {
    MF_ASSIGN_OR_RETURN(
        std::vector<Candidate> finalists,
        BestSplits(result.graph, history, peak_position, bar, budget - result.extra_flops, options,
                   ranking, memo, &result.candidates_planned));
    // The first finalist whose refined plan with exact overlaps is smaller too wins the round.
    std::optional<Candidate> best;
    for (Candidate& candidate : finalists) {
      const std::string key = history + SplitKey(candidate.stage.split) + "exact";
      auto exact = memo->by_key.find(key);
      if (exact == memo->by_key.end()) {
        MF_ASSIGN_OR_RETURN(GraphPlan refined,
                            PlanGraph(candidate.graph, options.planner, {.refine = true}));
        Planned planned{.ok = true, .arena = refined.plan.arena_bytes};
        planned.exact = std::make_shared<const GraphPlan>(std::move(refined));
        exact = memo->by_key.emplace(key, std::move(planned)).first;
      }
      if (exact->second.arena < result.arena_after) {
        candidate.stage.arena_bytes = exact->second.arena;
        result.plan = exact->second.exact;
        best = std::move(candidate);
        break;
      }
    }
    if (!best) break;
    const Planned& searched = memo->by_key.at(history + SplitKey(best->stage.split));
    result.arena_after = best->stage.arena_bytes;
    bar = ranking == SplitRanking::kArena ? searched.arena : searched.lower_bound;
    peak_position = std::max(0, (refined_peaks ? result.plan->peak_time : searched.peak_time) - 1);
    result.extra_flops += best->stage.stats.extra_flops;
    result.duplicated_elements += best->stage.stats.duplicated_elements;
    history += SplitKey(best->stage.split);
    result.stages.push_back(std::move(best->stage));
    result.graph = std::move(best->graph);
  }
  return result;
}

// Whether `stage`'s positions in `graph` hold the operators it split.
bool SameOperators(const Graph& graph, const SplitStage& stage) {
  const auto count = static_cast<size_t>(stage.split.last - stage.split.first + 1);
  if (stage.split.first < 0 || stage.ops.size() != count ||
      static_cast<size_t>(stage.split.last) >= graph.schedule.size())
    return false;
  for (size_t k = 0; k < count; ++k) {
    const NodeId id = graph.schedule[static_cast<size_t>(stage.split.first) + k];
    if (graph.node(id).name != stage.ops[k]) return false;
  }
  return true;
}

}  // namespace

Status TryOtherCacheTiming(const Graph& graph, const SplitOptions& options, bool last_stage_first,
                           SplitResult* result) {
  const bool cached = std::any_of(result->stages.begin(), result->stages.end(),
                                  [](const SplitStage& stage) { return stage.split.cache_halos; });
  if (!cached) return Status::Ok();
  std::vector<SplitStage> stages = result->stages;
  if (last_stage_first) std::reverse(stages.begin(), stages.end());
  Graph rebuilt = graph;
  for (SplitStage& stage : stages) {  // in the order they were applied
    // A later round may have split operators inside an earlier stage, whose order the other
    // timing changes: then the variant is not the same split, and is not tried.
    if (!SameOperators(rebuilt, stage)) return Status::Ok();
    stage.split.caches_at_tile_end = !stage.split.caches_at_tile_end;
    Result<Graph> split = stage.channels ? SplitChannels(rebuilt, *stage.channels, &stage.stats)
                                         : SplitRegion(rebuilt, stage.split, &stage.stats);
    if (!split.ok()) return Status::Ok();
    rebuilt = std::move(split).value();
  }
  MF_ASSIGN_OR_RETURN(GraphPlan plan, PlanGraph(rebuilt, options.planner, {.refine = true}));
  if (plan.plan.arena_bytes >= result->arena_after) return Status::Ok();
  if (last_stage_first) std::reverse(stages.begin(), stages.end());
  result->graph = std::move(rebuilt);
  result->arena_after = plan.plan.arena_bytes;
  for (SplitStage& stage : stages) stage.arena_bytes = result->arena_after;
  result->stages = std::move(stages);
  result->plan = std::make_shared<const GraphPlan>(std::move(plan));
  return Status::Ok();
}

Result<SplitResult> SplitForMemory(const Graph& graph, const SplitOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  MF_ASSIGN_OR_RETURN(GraphPlan plan, PlanGraph(graph, options.planner, {.refine = true}));
  // A small portfolio of round strategies; none finds the better sequence of splits every
  // time, the smallest result (then the fewest extra FLOPs) is kept.
  std::optional<SplitResult> best;
  int32_t planned = 0;
  PlanMemo memo;
  for (const auto& [ranking, peaks] :
       {std::pair{SplitRanking::kArena, PeakSource::kHeuristic},
        std::pair{SplitRanking::kLowerBound, PeakSource::kHeuristic},
        std::pair{SplitRanking::kLowerBound, PeakSource::kRefined}}) {
    MF_ASSIGN_OR_RETURN(SplitResult tried,
                        SplitRounds(graph, plan, options, ranking, peaks, &memo));
    planned += tried.candidates_planned;
    if (!best || tried.arena_after < best->arena_after ||
        (tried.arena_after == best->arena_after && tried.extra_flops < best->extra_flops))
      best = std::move(tried);
  }
  SplitResult result = std::move(*best);
  // The rounds rank candidates one way of copying cached rows; the winner is tried the other.
  MF_RETURN_IF_ERROR(TryOtherCacheTiming(graph, options, false, &result));
  result.candidates_planned = planned;
  result.search_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace memfold
