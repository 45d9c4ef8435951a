#include "memfold/passes/split_curve.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <optional>
#include <thread>
#include <utility>

#include "memfold/ops/cost.h"
#include "memfold/ops/registry.h"
#include "memfold/plan/liveness.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {
namespace {

constexpr size_t kAxisH = 1, kAxisW = 2;  // NHWC
constexpr int32_t kMaxCols = 16;
constexpr int32_t kMaxSegmentCuts = 8;  // a segment spans at most this many cut-to-cut runs
constexpr int64_t kCutSlack = 2;
constexpr int64_t kMaxChannelGroups = 32;
// Row counts past the best one for a grid width before the width is abandoned (the stage's
// bytes fall with the tile size, then flatten or grow with the halo).
constexpr int32_t kRowPatience = 2;

// One way to run a segment: unsplit, split by `grid`, or in channel groups.
struct Option {
  std::optional<RegionSplit> grid;
  std::optional<ChannelSplit> channels;
  int64_t peak = 0;   // payload bytes live at most while the segment runs
  double flops = 0;   // extra FLOPs
  int64_t steps = 0;  // operators added
};

// Operators first..last (schedule positions) between two cuts, and its options no other beats
// in peak, extra FLOPs and operators added, peak ascending.
struct Segment {
  int32_t from = 0, to = 0;  // cut indices
  int32_t first = 0, last = 0;
  std::vector<Option> options;
};

bool InArena(const Value& value) {
  return !value.is_constant() && value.role != Role::kStreamed && value.bytes() > 0;
}

// Boundaries k (before the operator at position k; k = size is the end) that one arena value
// alone crosses, and the start and end: of those inside, the ones whose value is at most
// kCutSlack times its neighbouring cuts' (block boundaries, not the wide tensors inside a
// block; a pooled vector before a smaller classifier output).
std::vector<int32_t> Cuts(const Graph& graph) {
  const auto size = static_cast<int32_t>(graph.schedule.size());
  std::vector<int32_t> position(static_cast<size_t>(graph.num_nodes()), -1);
  for (int32_t pos = 0; pos < size; ++pos)
    position[static_cast<size_t>(graph.schedule[static_cast<size_t>(pos)])] = pos;
  std::vector<int32_t> count(static_cast<size_t>(size) + 2, 0);
  std::vector<int64_t> bytes(static_cast<size_t>(size) + 2, 0);
  const std::vector<std::vector<NodeId>> consumers = graph.Consumers();
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    const Value& value = graph.value(v);
    if (!InArena(value)) continue;
    const int32_t made =
        value.producer == kNoNode ? -1 : position[static_cast<size_t>(value.producer)];
    int32_t last_read = made;
    for (NodeId reader : consumers[static_cast<size_t>(v)])
      last_read = std::max(last_read, position[static_cast<size_t>(reader)]);
    if (std::find(graph.outputs.begin(), graph.outputs.end(), v) != graph.outputs.end())
      last_read = size;
    if (last_read <= made) continue;
    // Crosses the boundaries made+1..last_read: a difference array, summed below.
    ++count[static_cast<size_t>(made + 1)];
    --count[static_cast<size_t>(last_read + 1)];
    bytes[static_cast<size_t>(made + 1)] += value.bytes();
    bytes[static_cast<size_t>(last_read + 1)] -= value.bytes();
  }
  for (size_t k = 1; k < count.size(); ++k) {
    count[k] += count[k - 1];
    bytes[k] += bytes[k - 1];
  }
  std::vector<int32_t> single;
  for (int32_t k = 1; k < size; ++k) {
    if (count[static_cast<size_t>(k)] == 1) single.push_back(k);
  }
  std::vector<int32_t> cuts = {0};
  if (size == 0) return cuts;  // nothing to split
  for (size_t i = 0; i < single.size(); ++i) {
    const int64_t here = bytes[static_cast<size_t>(single[i])];
    const bool small_prev = i == 0 || here <= kCutSlack * bytes[static_cast<size_t>(single[i - 1])];
    const bool small_next =
        i + 1 == single.size() || here <= kCutSlack * bytes[static_cast<size_t>(single[i + 1])];
    if (small_prev && small_next) cuts.push_back(single[i]);
  }
  cuts.push_back(size);
  return cuts;
}

// The most bytes live at node times of positions first..last.
int64_t PeakOver(const std::vector<int64_t>& live, int32_t first, int32_t last) {
  int64_t peak = 0;
  for (int32_t pos = first; pos <= last; ++pos)
    peak = std::max(peak, live[static_cast<size_t>(NodeTime(static_cast<size_t>(pos)))]);
  return peak;
}

// Keeps the options no other beats in peak, extra FLOPs and operators added, peak ascending.
std::vector<Option> ParetoOptions(std::vector<Option> options) {
  std::sort(options.begin(), options.end(), [](const Option& a, const Option& b) {
    if (a.peak != b.peak) return a.peak < b.peak;
    return a.flops != b.flops ? a.flops < b.flops : a.steps < b.steps;
  });
  std::vector<Option> kept;
  for (Option& option : options) {
    const bool beaten = std::any_of(kept.begin(), kept.end(), [&](const Option& k) {
      return k.flops <= option.flops && k.steps <= option.steps;  // and k.peak <= option.peak
    });
    if (!beaten) kept.push_back(std::move(option));
  }
  return kept;
}

// Row counts a grid of `cols` columns tries, in increasing order: with cached halos 1..4
// output rows per tile (thinner first, as they cost no recomputation); with recomputed halos
// every count.
std::vector<int32_t> RowCounts(bool cache_halos, int32_t cols, int64_t height) {
  std::vector<int32_t> counts;
  if (cache_halos) {
    for (int64_t per_tile = 1; per_tile <= 4; ++per_tile) {
      const auto rows = static_cast<int32_t>((height + per_tile - 1) / per_tile);
      if (rows >= 2 && (counts.empty() || rows < counts.back())) counts.push_back(rows);
    }
    std::reverse(counts.begin(), counts.end());
    return counts;
  }
  for (int32_t rows = cols > 1 ? 1 : 2; rows <= height; ++rows) counts.push_back(rows);
  return counts;
}

// Measures the grids of one splittable segment within `budget` extra FLOPs.
void MeasureGrids(const Graph& graph, Segment* segment, double budget) {
  const Shape& out =
      graph.value(graph.node(graph.schedule[static_cast<size_t>(segment->last)]).outputs[0]).shape;
  const int64_t height = out[kAxisH], width = out[kAxisW];
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  for (const bool cache : {true, false}) {
    int64_t mode_best = kNone;
    int32_t cols_stalled = 0;
    for (int32_t cols = 1; cols <= std::min<int64_t>(kMaxCols, width); ++cols) {
      int64_t best = kNone;
      int32_t since_best = 0;
      for (int32_t rows : RowCounts(cache, cols, height)) {
        int64_t rows_best = kNone;
        bool over_budget = false;
        for (const bool in_place : {false, true}) {
          if (in_place && !cache) break;
          RegionSplit grid{segment->first, segment->last, rows, true, cols, cache};
          grid.strips_in_place = in_place;
          grid.warm_ups = cache;
          grid.caches_at_tile_end = false;
          SplitStats stats;
          Result<Graph> split = SplitRegion(graph, grid, &stats);
          if (!split.ok()) break;  // e.g. tiles reading nothing but padding
          if (stats.extra_flops > budget) {
            over_budget = true;  // more rows add more
            break;
          }
          const int64_t peak = PeakOver(LiveBytesPerStep(ComputeLiveness(*split)),
                                        stats.first_position, stats.last_position);
          const auto steps = static_cast<int64_t>(split->schedule.size() - graph.schedule.size());
          segment->options.push_back({grid, std::nullopt, peak, stats.extra_flops, steps});
          rows_best = std::min(rows_best, peak);
        }
        if (over_budget) break;
        if (rows_best == kNone) continue;
        since_best = rows_best < best ? 0 : since_best + 1;
        best = std::min(best, rows_best);
        if (since_best >= kRowPatience) break;
      }
      // Wider grids add column halos: stop when one is over the budget from its first row
      // count, or kRowPatience widths in a row bring the stage no lower.
      if (best == kNone) break;
      cols_stalled = best < mode_best ? 0 : cols_stalled + 1;
      mode_best = std::min(mode_best, best);
      if (cols_stalled >= kRowPatience) break;
    }
  }
}

// Measures a segment that runs in channel groups (passes/split.h ChannelSplit): 2, 4, 8, ...
// up to kMaxChannelGroups groups while the stage's bytes fall (more groups save ever less and
// cost a kernel call each).
void MeasureChannelGroups(const Graph& graph, Segment* segment) {
  const int64_t channels =
      graph.value(graph.node(graph.schedule[static_cast<size_t>(segment->last)]).outputs[0])
          .shape[3];
  int64_t best = std::numeric_limits<int64_t>::max();
  for (int64_t groups = 2; groups <= std::min<int64_t>(channels, kMaxChannelGroups); groups *= 2) {
    const ChannelSplit split{segment->first, segment->last, static_cast<int32_t>(groups)};
    SplitStats stats;
    Result<Graph> grouped = SplitChannels(graph, split, &stats);
    if (!grouped.ok()) return;
    const int64_t peak = PeakOver(LiveBytesPerStep(ComputeLiveness(*grouped)), stats.first_position,
                                  stats.last_position);
    if (peak >= best) return;
    best = peak;
    segment->options.push_back(
        {std::nullopt, split, peak, std::max(0.0, stats.extra_flops),
         static_cast<int64_t>(grouped->schedule.size() - graph.schedule.size())});
  }
}

// Every segment between cuts, with its options within `budget`. Segments are measured on
// every core (each on its own; the result does not depend on the threads' timing).
std::vector<Segment> MeasureSegments(const Graph& graph, const std::vector<int32_t>& cuts,
                                     const SplitOptions& options, double budget) {
  const std::vector<int64_t> live = LiveBytesPerStep(ComputeLiveness(graph));
  const RegionChecker regions(graph);
  std::vector<char> op_ok(graph.schedule.size());
  for (size_t pos = 0; pos < op_ok.size(); ++pos)
    op_ok[pos] = regions.Op(static_cast<int32_t>(pos)).ok();
  std::vector<Segment> segments;
  const auto cut_count = static_cast<int32_t>(cuts.size());
  for (int32_t i = 0; i + 1 < cut_count; ++i) {
    for (int32_t j = i + 1; j < cut_count && j - i <= kMaxSegmentCuts; ++j) {
      Segment segment{i, j, cuts[static_cast<size_t>(i)], cuts[static_cast<size_t>(j)] - 1, {}};
      if (segment.last - segment.first >= options.max_region_ops) break;
      if (j == i + 1)
        segment.options.push_back(
            {std::nullopt, std::nullopt, PeakOver(live, segment.first, segment.last), 0});
      segments.push_back(std::move(segment));
    }
  }
  auto measure = [&](Segment* segment) {
    const bool splittable =
        std::all_of(op_ok.begin() + segment->first, op_ok.begin() + segment->last + 1,
                    [](char ok) { return ok; }) &&
        regions.Bounds(segment->first, segment->last).ok();
    if (splittable) MeasureGrids(graph, segment, budget);
    if (CheckChannelRegion(graph, segment->first, segment->last).ok())
      MeasureChannelGroups(graph, segment);
    segment->options = ParetoOptions(std::move(segment->options));
  };
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t k = next++; k < segments.size(); k = next++) measure(&segments[k]);
  };
  std::vector<std::thread> helpers;
  for (unsigned t = 1; t < std::max(1u, std::thread::hardware_concurrency()); ++t)
    helpers.emplace_back(worker);
  worker();
  for (std::thread& helper : helpers) helper.join();
  std::erase_if(segments, [](const Segment& s) { return s.options.empty(); });
  return segments;
}

// The segments and options a shortest path chose.
using Choice = std::vector<std::pair<const Segment*, const Option*>>;

// The path that keeps every segment's peak within `bound` at the least extra FLOPs plus
// `step_flops` per operator added, or nothing.
std::optional<Choice> CheapestWithin(const std::vector<Segment>& segments, int32_t cut_count,
                                     int64_t bound, double step_flops) {
  constexpr double kNever = std::numeric_limits<double>::infinity();
  std::vector<double> cost(static_cast<size_t>(cut_count), kNever);
  std::vector<std::pair<const Segment*, const Option*>> via(static_cast<size_t>(cut_count));
  cost[0] = 0;
  for (const Segment& segment : segments) {  // in order of `from`: every path is relaxed in turn
    if (cost[static_cast<size_t>(segment.from)] == kNever) continue;
    for (const Option& option : segment.options) {
      if (option.peak > bound) break;  // peak ascending
      const double total = cost[static_cast<size_t>(segment.from)] + option.flops +
                           step_flops * static_cast<double>(option.steps);
      if (total < cost[static_cast<size_t>(segment.to)]) {
        cost[static_cast<size_t>(segment.to)] = total;
        via[static_cast<size_t>(segment.to)] = {&segment, &option};
      }
    }
  }
  if (cost.back() == kNever) return std::nullopt;
  Choice choice;
  for (int32_t at = cut_count - 1; at > 0;) {
    choice.push_back(via[static_cast<size_t>(at)]);
    at = via[static_cast<size_t>(at)].first->from;
  }
  return choice;
}

struct Estimate {
  int64_t peak = 0;
  double flops = 0;
  int64_t steps = 0;
  Choice choice;
};

// The prices of an added operator, in FLOPs, the shortest path tries until the operators fit
// (SplitOptions::max_steps): first a token one (of two plans equal otherwise, the one of fewer
// kernel calls), then ever dearer.
constexpr double kStepPrices[] = {1e-3, 1e3, 1e4, 1e5, 1e6, 1e7, 1e9};

// The cheapest path within `bound` whose operators fit `max_steps` (0: any), or nothing.
std::optional<Estimate> EstimateWithin(const std::vector<Segment>& segments, int32_t cut_count,
                                       int64_t bound, int64_t max_steps) {
  for (double price : kStepPrices) {
    std::optional<Choice> choice = CheapestWithin(segments, cut_count, bound, price);
    if (!choice) return std::nullopt;  // no path at all
    Estimate estimate{0, 0, 0, std::move(*choice)};
    for (const auto& [segment, option] : estimate.choice) {
      estimate.peak = std::max(estimate.peak, option->peak);
      estimate.flops += option->flops;
      estimate.steps += option->steps;
    }
    if (max_steps <= 0 || estimate.steps <= max_steps) return estimate;
  }
  return std::nullopt;
}

// The curve of shortest paths over every bound the segments' options give, peak descending,
// within `budget` extra FLOPs in all.
std::vector<Estimate> EstimatedCurve(const std::vector<Segment>& segments, int32_t cut_count,
                                     double budget, int64_t max_steps) {
  std::vector<int64_t> bounds;
  for (const Segment& segment : segments) {
    for (const Option& option : segment.options) bounds.push_back(option.peak);
  }
  std::sort(bounds.begin(), bounds.end(), std::greater<>());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  std::vector<Estimate> curve;
  for (int64_t bound : bounds) {
    std::optional<Estimate> estimate = EstimateWithin(segments, cut_count, bound, max_steps);
    if (!estimate) break;                    // no path within this bound: none within lower ones
    if (estimate->flops > budget) continue;  // a dearer operator price may have raised it
    if (!curve.empty() && estimate->peak >= curve.back().peak) continue;
    curve.push_back(std::move(*estimate));
  }
  return curve;
}

// Builds and plans one point: every chosen grid applied, the last segment first (so earlier
// positions hold), and tried with cached rows copied at the other time (TryOtherCacheTiming):
// which packs better is seen only once planned.
Result<SplitResult> BuildPoint(const Graph& graph, const Estimate& estimate,
                               const SplitOptions& options, int64_t arena_before,
                               double total_flops) {
  SplitResult result;
  result.graph = graph;
  result.arena_before = arena_before;
  result.total_flops = total_flops;
  for (const auto& [segment, option] : estimate.choice) {  // last segment first
    if (!option->grid && !option->channels) continue;
    SplitStage stage;
    for (int32_t pos = segment->first; pos <= segment->last; ++pos)
      stage.ops.push_back(graph.node(graph.schedule[static_cast<size_t>(pos)]).name);
    if (option->grid) {
      stage.split = *option->grid;
      MF_ASSIGN_OR_RETURN(result.graph, SplitRegion(result.graph, stage.split, &stage.stats));
    } else {
      stage.split = {.first = segment->first, .last = segment->last, .rows = 1};
      stage.channels = option->channels;
      MF_ASSIGN_OR_RETURN(result.graph,
                          SplitChannels(result.graph, *option->channels, &stage.stats));
    }
    result.extra_flops += stage.stats.extra_flops;
    result.duplicated_elements += stage.stats.duplicated_elements;
    result.stages.insert(result.stages.begin(), std::move(stage));
  }
  MF_ASSIGN_OR_RETURN(GraphPlan plan, PlanGraph(result.graph, options.planner, {.refine = true}));
  result.arena_after = plan.plan.arena_bytes;
  for (SplitStage& stage : result.stages) stage.arena_bytes = result.arena_after;
  result.plan = std::make_shared<const GraphPlan>(std::move(plan));
  MF_RETURN_IF_ERROR(TryOtherCacheTiming(graph, options, true, &result));
  return result;
}

// The indices of `size` estimates that `points` asks for, ascending.
std::vector<size_t> Picked(size_t size, const CurvePoints& points) {
  std::vector<size_t> picked;
  if (size == 0) return picked;
  const auto spread = std::min(size, static_cast<size_t>(std::max(points.spread, 0)));
  for (size_t k = 0; k < spread; ++k)
    picked.push_back(spread == 1 ? size - 1 : k * (size - 1) / (spread - 1));
  const auto smallest = std::min(size, static_cast<size_t>(std::max(points.smallest, 0)));
  for (size_t k = size - smallest; k < size; ++k) picked.push_back(k);
  std::sort(picked.begin(), picked.end());
  picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
  return picked;
}

}  // namespace

Result<std::vector<SplitResult>> SplitSegmentsCurve(const Graph& graph, const SplitOptions& options,
                                                    CurvePoints points) {
  const auto start = std::chrono::steady_clock::now();
  const double total_flops = TotalFlops(graph);
  const std::vector<int32_t> cuts = Cuts(graph);
  const double budget = options.max_recompute * total_flops;
  const std::vector<Segment> segments = MeasureSegments(graph, cuts, options, budget);
  const std::vector<Estimate> curve = EstimatedCurve(
      segments, static_cast<int32_t>(cuts.size()), budget,
      options.max_steps > 0
          ? std::max<int64_t>(0, options.max_steps - static_cast<int64_t>(graph.schedule.size()))
          : 0);
  MF_ASSIGN_OR_RETURN(GraphPlan unsplit, PlanGraph(graph, options.planner, {.refine = true}));
  std::vector<SplitResult> built;
  for (size_t index : Picked(curve.size(), points)) {
    MF_ASSIGN_OR_RETURN(SplitResult point, BuildPoint(graph, curve[index], options,
                                                      unsplit.plan.arena_bytes, total_flops));
    if (!point.stages.empty()) built.push_back(std::move(point));
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  for (SplitResult& point : built) point.search_ms = ms;
  return built;
}

}  // namespace memfold
