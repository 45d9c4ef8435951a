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
// Segments that bound the curve's floor are widened up to this many columns (WidenGrids), at most
// kMaxWidenRounds times.
constexpr int32_t kMaxWidenCols = 32;
constexpr int32_t kMaxWidenRounds = 8;
constexpr int32_t kMaxSegmentCuts = 8;  // a segment spans at most this many cut-to-cut runs
constexpr int64_t kCutSlack = 2;
constexpr int64_t kMaxChannelGroups = 32;
// Row counts past the best one for a grid width before the width is abandoned (the stage's
// bytes fall with the tile size, then flatten or grow with the halo).
constexpr int32_t kRowPatience = 2;
// Widening stops once the stage is within 1/kNearFloor of the bytes it holds whatever its grid
// (HeldFloor): more columns could save little and add halos and operators.
constexpr int64_t kNearFloor = 32;

// One way to run a segment: unsplit, split by `grid`, or in channel groups.
struct Option {
  std::optional<RegionSplit> grid;
  std::optional<ChannelSplit> channels;
  int64_t peak = 0;   // payload bytes live at most while the segment runs
  double flops = 0;   // extra FLOPs
  int64_t steps = 0;  // operators added
};

constexpr int64_t kNone = std::numeric_limits<int64_t>::max();

// How far the grids of one mode (cached or recomputed halos) of a segment were searched: the
// widest column count measured, the least bytes found, and whether a width was over the budget
// from its first row count (so every wider one is).
struct WidthSearch {
  int32_t widest = 0;
  int64_t best = kNone;
  bool over_budget = false;
};

// Operators first..last (schedule positions) between two cuts, and its options no other beats
// in peak, extra FLOPs and operators added, peak ascending.
struct Segment {
  int32_t from = 0, to = 0;  // cut indices
  int32_t first = 0, last = 0;
  std::vector<Option> options;
  bool splittable = false;
  WidthSearch widths[2];  // recomputed, cached halos
  bool widened = false;   // WidenGrids ran
};

bool InArena(const Value& value) {
  return !value.is_constant() && value.role != Role::kStreamed && value.bytes() > 0;
}

// Boundaries k (before the operator at position k; k = size is the end) that one arena value
// alone crosses, and the start and end: of those inside, the ones whose value is at most
// kCutSlack times its neighbouring cuts' (block boundaries, not the wide tensors inside a
// block; a pooled vector before a smaller classifier output), and in the network's shrinking
// tail the ones kCutSlack times below the one before (a head's pooled vector before its
// quantize and classifier).
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
  // The most bytes any later single boundary carries: a boundary at least that large ends a
  // wide stage in the network's shrinking tail (a head's pooled vector, then the classifier's).
  std::vector<int64_t> later_most(single.size() + 1, 0);
  for (size_t i = single.size(); i-- > 0;)
    later_most[i] = std::max(later_most[i + 1], bytes[static_cast<size_t>(single[i])]);
  for (size_t i = 0; i < single.size(); ++i) {
    const int64_t here = bytes[static_cast<size_t>(single[i])];
    const int64_t prev = i == 0 ? here : bytes[static_cast<size_t>(single[i - 1])];
    const bool small_prev = here <= kCutSlack * prev;
    const bool small_next =
        i + 1 == single.size() || here <= kCutSlack * bytes[static_cast<size_t>(single[i + 1])];
    const bool tail_drop = kCutSlack * here <= prev && here >= later_most[i + 1];
    if (small_prev && (small_next || tail_drop)) cuts.push_back(single[i]);
  }
  // Where operators no region may hold begin and end, whatever crosses: no stage runs through
  // them, and what they read or write is whole anyway (a squeeze-and-excitation's mean and
  // channel scale). Not between two of them: a transformer or an LSTM would get a cut at
  // every operator.
  const RegionChecker regions(graph);
  std::vector<char> splittable(static_cast<size_t>(size));
  for (int32_t pos = 0; pos < size; ++pos)
    splittable[static_cast<size_t>(pos)] = regions.Op(pos).ok();
  for (int32_t k = 1; k < size; ++k) {
    if (splittable[static_cast<size_t>(k - 1)] != splittable[static_cast<size_t>(k)])
      cuts.push_back(k);
  }
  cuts.push_back(size);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
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

// Tile counts along an axis of `length` a grid tries, in increasing order: for each tile size
// the fewest tiles that reach it (ceil(length / count) distinct), so that no two counts tried
// give the same largest tile; O(sqrt(length)) of them.
std::vector<int32_t> TileCounts(int64_t length) {
  std::vector<int32_t> counts;
  for (int64_t tile = length; tile >= 1; --tile) {
    const auto count = static_cast<int32_t>((length + tile - 1) / tile);
    if (counts.empty() || count > counts.back()) counts.push_back(count);
  }
  return counts;
}

// Row counts a grid of `cols` columns tries, in increasing order: with cached halos 1..4
// output rows per tile (thinner first, as they cost no recomputation); with recomputed halos
// every count, or when `distinct` one per tile height (TileCounts).
std::vector<int32_t> RowCounts(bool cache_halos, int32_t cols, int64_t height, bool distinct) {
  std::vector<int32_t> counts;
  if (cache_halos) {
    for (int64_t per_tile = 1; per_tile <= 4; ++per_tile) {
      const auto rows = static_cast<int32_t>((height + per_tile - 1) / per_tile);
      if (rows >= 2 && (counts.empty() || rows < counts.back())) counts.push_back(rows);
    }
    std::reverse(counts.begin(), counts.end());
    return counts;
  }
  const int32_t fewest = cols > 1 ? 1 : 2;
  if (!distinct) {
    for (int32_t rows = fewest; rows <= height; ++rows) counts.push_back(rows);
    return counts;
  }
  for (int32_t rows : TileCounts(height)) {
    if (rows >= fewest) counts.push_back(rows);
  }
  return counts;
}

// The value positions first..last of a segment produce for the operators after it.
const Value& SegmentOutput(const Graph& graph, int32_t last) {
  return graph.value(graph.node(graph.schedule[static_cast<size_t>(last)]).outputs[0]);
}

// The bytes a stage holds whatever its grid: the largest of the arena values it reads from
// before it and of its output (each is whole at some time while it runs).
int64_t HeldFloor(const Graph& graph, int32_t first, int32_t last) {
  const auto begin = graph.schedule.begin() + first, end = graph.schedule.begin() + last + 1;
  int64_t floor = 0;
  for (auto it = begin; it != end; ++it) {
    for (ValueId v : graph.node(*it).inputs) {
      if (v == kNoValue || !InArena(graph.value(v))) continue;
      const NodeId producer = graph.value(v).producer;
      if (producer == kNoNode || std::find(begin, end, producer) == end)
        floor = std::max(floor, graph.value(v).bytes());
    }
  }
  return std::max(floor, SegmentOutput(graph, last).bytes());
}

// Measures the grids of one width and mode of a segment, row counts ascending until one is over
// `budget` or kRowPatience counts in a row bring the stage no lower: the least bytes found, or
// kNone when the first count is over the budget or none splits.
int64_t MeasureWidth(const Graph& graph, Segment* segment, bool cache, int32_t cols,
                     bool distinct_rows, double budget) {
  const Shape& out = SegmentOutput(graph, segment->last).shape;
  int64_t best = kNone;
  int32_t since_best = 0;
  for (int32_t rows : RowCounts(cache, cols, out[kAxisH], distinct_rows)) {
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
      const int64_t peak = PeakOver(LiveBytesPerStep(ComputeLiveness(*split)), stats.first_position,
                                    stats.last_position);
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
  return best;
}

// Measures the widths `counts` (ascending) of one mode of a segment past the widest it has
// measured, until kRowPatience of them in a row bring the stage no lower, one is over the budget
// from its first row count (wider grids add column halos), or the stage is within 1/kNearFloor
// of `floor`.
void SearchWidths(const Graph& graph, Segment* segment, bool cache,
                  const std::vector<int32_t>& counts, bool distinct_rows, int64_t floor,
                  double budget) {
  WidthSearch& search = segment->widths[cache ? 1 : 0];
  int32_t stalled = 0;
  for (int32_t cols : counts) {
    if (search.over_budget || stalled >= kRowPatience) break;
    if (search.best != kNone && (search.best - floor) * kNearFloor <= search.best) break;
    if (cols <= search.widest) continue;
    const int64_t best = MeasureWidth(graph, segment, cache, cols, distinct_rows, budget);
    search.widest = cols;
    if (best == kNone) {
      search.over_budget = true;
      break;
    }
    stalled = best < search.best ? 0 : stalled + 1;
    search.best = std::min(search.best, best);
  }
}

// Measures the grids of one splittable segment within `budget` extra FLOPs, in both modes: every
// column count up to kMaxCols, every row count with recomputed halos.
void MeasureGrids(const Graph& graph, Segment* segment, double budget) {
  std::vector<int32_t> counts;
  const int64_t width = SegmentOutput(graph, segment->last).shape[kAxisW];
  for (int32_t cols = 1; cols <= std::min<int64_t>(kMaxCols, width); ++cols) counts.push_back(cols);
  for (const bool cache : {true, false})
    SearchWidths(graph, segment, cache, counts, false, 0, budget);
}

// Widens a segment that bounds the curve's floor past where MeasureGrids stopped: one column
// count per tile width (TileCounts) up to kMaxWidenCols, one row count per tile height, the
// stage's floor the bytes it holds whatever its grid (HeldFloor).
void WidenGrids(const Graph& graph, Segment* segment, double budget) {
  std::vector<int32_t> counts = TileCounts(SegmentOutput(graph, segment->last).shape[kAxisW]);
  std::erase_if(counts, [](int32_t cols) { return cols > kMaxWidenCols; });
  const int64_t floor = HeldFloor(graph, segment->first, segment->last);
  for (const bool cache : {true, false})
    SearchWidths(graph, segment, cache, counts, true, floor, budget);
  segment->widened = true;
}

// Measures a segment that runs in channel groups (passes/split.h ChannelSplit): 2, 4, 8, ...
// up to kMaxChannelGroups groups while the stage's bytes fall (more groups save ever less and
// cost a kernel call each).
void MeasureChannelGroups(const Graph& graph, Segment* segment) {
  const int64_t channels = SegmentOutput(graph, segment->last).shape.back();
  int64_t best = kNone;
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

// Runs work(k) for k = 0..count-1 on every core (each call on its own, so the results do not
// depend on the threads' timing).
template <typename Work>
void OnEveryCore(size_t count, const Work& work) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t k = next++; k < count; k = next++) work(k);
  };
  std::vector<std::thread> helpers;
  const size_t threads = std::max(1u, std::thread::hardware_concurrency());
  for (size_t t = 1; t < std::min(threads, count); ++t) helpers.emplace_back(worker);
  worker();
  for (std::thread& helper : helpers) helper.join();
}

// Every segment between cuts, with its options within `budget`, measured on every core.
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
  OnEveryCore(segments.size(), [&](size_t k) {
    Segment* segment = &segments[k];
    segment->splittable =
        std::all_of(op_ok.begin() + segment->first, op_ok.begin() + segment->last + 1,
                    [](char ok) { return ok; }) &&
        regions.Bounds(segment->first, segment->last).ok();
    if (segment->splittable) MeasureGrids(graph, segment, budget);
    if (regions.Channels(segment->first, segment->last).ok()) MeasureChannelGroups(graph, segment);
    segment->options = ParetoOptions(std::move(segment->options));
  });
  std::erase_if(segments, [](const Segment& s) { return s.options.empty(); });
  return segments;
}

// The segments and options a shortest path chose (options copied: widening a segment
// reorders its options).
using Choice = std::vector<std::pair<const Segment*, Option>>;

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
    choice.emplace_back(via[static_cast<size_t>(at)].first, *via[static_cast<size_t>(at)].second);
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

// The estimate of following `choice`: its highest stage, its extra FLOPs and operators.
Estimate Totalled(Choice choice) {
  Estimate estimate{0, 0, 0, std::move(choice)};
  for (const auto& [segment, option] : estimate.choice) {
    estimate.peak = std::max(estimate.peak, option.peak);
    estimate.flops += option.flops;
    estimate.steps += option.steps;
  }
  return estimate;
}

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
    const Estimate estimate = Totalled(std::move(*choice));
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

// `estimate` with every segment's option replaced by its lowest-peak option of no more extra
// FLOPs (finer tiles or more channel groups: more operators, no more work), or nothing when no
// segment has one or the operators would not fit `max_steps`. The path kept the stages below its
// bound coarse; their real arenas, unlike the estimates, can still be the plan's peak.
std::optional<Estimate> FinerAtEqualWork(const Estimate& estimate, int64_t max_steps) {
  Choice choice;
  bool changed = false;
  for (const auto& [segment, chosen] : estimate.choice) {
    const Option* best = &chosen;
    for (const Option& other : segment->options) {
      if (other.flops <= chosen.flops && other.peak < best->peak) best = &other;
    }
    changed |= best != &chosen;
    choice.emplace_back(segment, *best);
  }
  Estimate finer = Totalled(std::move(choice));
  if (!changed || (max_steps > 0 && finer.steps > max_steps)) return std::nullopt;
  return finer;
}

// The segments of the curve's lowest point whose stage is its peak and that WidenGrids has not
// widened yet: what holds the floor up.
std::vector<Segment*> FloorSegments(const Estimate& lowest, std::vector<Segment>* segments) {
  std::vector<Segment*> floor;
  for (const auto& [segment, option] : lowest.choice) {
    Segment& held = (*segments)[static_cast<size_t>(segment - segments->data())];
    if (option.peak == lowest.peak && held.splittable && !held.widened) floor.push_back(&held);
  }
  return floor;
}

// What building the points of one search shares.
struct PointContext {
  const Graph& graph;
  const SplitOptions& options;
  int64_t arena_before = 0;  // the unsplit graph's plan
  double total_flops = 0;
  double budget = 0;      // extra FLOPs
  int64_t max_steps = 0;  // operators that may be added (0: any)
};

// Builds and plans one point: every chosen grid applied, the last segment first (so earlier
// positions hold), and tried with cached rows copied at the other time (TryOtherCacheTiming):
// which packs better is seen only once planned. `quick`: planned without refinement or the
// other cache timing, to compare candidates.
Result<SplitResult> BuildPoint(const PointContext& context, const Estimate& estimate,
                               bool quick = false) {
  const Graph& graph = context.graph;
  const SplitOptions& options = context.options;
  SplitResult result;
  result.graph = graph;
  result.arena_before = context.arena_before;
  result.total_flops = context.total_flops;
  for (const auto& [segment, option] : estimate.choice) {  // last segment first
    if (!option.grid && !option.channels) continue;
    SplitStage stage;
    for (int32_t pos = segment->first; pos <= segment->last; ++pos)
      stage.ops.push_back(graph.node(graph.schedule[static_cast<size_t>(pos)]).name);
    if (option.grid) {
      stage.split = *option.grid;
      MF_ASSIGN_OR_RETURN(result.graph, SplitRegion(result.graph, stage.split, &stage.stats));
    } else {
      stage.split = {.first = segment->first, .last = segment->last, .rows = 1};
      stage.channels = option.channels;
      MF_ASSIGN_OR_RETURN(result.graph,
                          SplitChannels(result.graph, *option.channels, &stage.stats));
    }
    result.extra_flops += stage.stats.extra_flops;
    result.duplicated_elements += stage.stats.duplicated_elements;
    result.stages.insert(result.stages.begin(), std::move(stage));
  }
  MF_ASSIGN_OR_RETURN(GraphPlan plan, PlanGraph(result.graph, options.planner, {.refine = !quick}));
  result.arena_after = plan.plan.arena_bytes;
  for (SplitStage& stage : result.stages) stage.arena_bytes = result.arena_after;
  result.plan = std::make_shared<const GraphPlan>(std::move(plan));
  if (!quick) MF_RETURN_IF_ERROR(TryOtherCacheTiming(graph, options, true, &result));
  return result;
}

// The index in `estimate.choice` of the segment whose operators include schedule position
// `position` of the built graph (each segment's option adds option.steps operators), or nothing.
std::optional<size_t> SegmentAt(const Estimate& estimate, int32_t position) {
  int64_t shift = 0;
  for (size_t k = estimate.choice.size(); k-- > 0;) {  // the choice is last segment first
    const auto& [segment, option] = estimate.choice[k];
    const int64_t first = segment->first + shift;
    shift += option.steps;
    if (position >= first && position <= segment->last + shift) return k;
  }
  return std::nullopt;
}

// `estimate` with segment `k` run the cheapest way that holds less than it does now, if that
// stays within `budget` extra FLOPs and `max_steps` operators (0: any).
std::optional<Estimate> LowerAt(const PointContext& context, const Estimate& estimate, size_t k) {
  const auto& [segment, chosen] = estimate.choice[k];
  const Option* lower = nullptr;
  for (const Option& other : segment->options) {
    if (other.peak < chosen.peak && (!lower || other.flops < lower->flops)) lower = &other;
  }
  if (!lower) return std::nullopt;
  Choice choice = estimate.choice;
  choice[k].second = *lower;
  Estimate lowered = Totalled(std::move(choice));
  if (lowered.flops > context.budget ||
      (context.max_steps > 0 && lowered.steps > context.max_steps)) {
    return std::nullopt;
  }
  return lowered;
}

// The estimates leave out the operators' overlaps and the placement's gaps, so the real peak of
// a built point can be a stage the estimate did not bound. Lowers that stage (LowerAt) and
// replans quickly, at most kMaxDescents times, while the quick arena does not grow and the
// budget allows (two stages may hold the same peak); the smallest estimate seen is built in full,
// and is a new point if its arena is below `to_beat`.
constexpr int32_t kMaxDescents = 16;
Result<std::optional<SplitResult>> DescendRealPeak(const PointContext& context,
                                                   std::vector<Segment>* segments,
                                                   Estimate estimate, int64_t to_beat) {
  MF_ASSIGN_OR_RETURN(SplitResult current, BuildPoint(context, estimate, true));
  int64_t smallest = current.arena_after;
  std::optional<Estimate> best;
  for (int32_t round = 0; round < kMaxDescents; ++round) {
    const std::optional<size_t> at = SegmentAt(estimate, current.plan->peak_time - 1);
    if (!at) break;
    std::optional<Estimate> lowered = LowerAt(context, estimate, *at);
    Segment& held = (*segments)[static_cast<size_t>(estimate.choice[*at].first - segments->data())];
    if (!lowered && held.splittable && !held.widened) {  // patience may have stopped short
      WidenGrids(context.graph, &held, context.budget);
      held.options = ParetoOptions(std::move(held.options));
      lowered = LowerAt(context, estimate, *at);
    }
    if (!lowered) break;
    MF_ASSIGN_OR_RETURN(current, BuildPoint(context, *lowered, true));
    if (current.arena_after > smallest) break;
    if (current.arena_after < smallest) {
      smallest = current.arena_after;
      best = *lowered;
    }
    estimate = std::move(*lowered);
  }
  if (!best) return std::optional<SplitResult>();
  MF_ASSIGN_OR_RETURN(SplitResult built, BuildPoint(context, *best));
  if (built.arena_after >= to_beat) return std::optional<SplitResult>();
  return std::optional<SplitResult>(std::move(built));
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
  std::vector<Segment> segments = MeasureSegments(graph, cuts, options, budget);
  const int64_t max_steps =
      options.max_steps > 0
          ? std::max<int64_t>(0, options.max_steps - static_cast<int64_t>(graph.schedule.size()))
          : 0;
  std::vector<Estimate> curve =
      EstimatedCurve(segments, static_cast<int32_t>(cuts.size()), budget, max_steps);
  for (int32_t round = 0; round < kMaxWidenRounds && !curve.empty(); ++round) {
    const std::vector<Segment*> floor = FloorSegments(curve.back(), &segments);
    if (floor.empty()) break;
    OnEveryCore(floor.size(), [&](size_t k) {
      WidenGrids(graph, floor[k], budget);
      floor[k]->options = ParetoOptions(std::move(floor[k]->options));
    });
    curve = EstimatedCurve(segments, static_cast<int32_t>(cuts.size()), budget, max_steps);
  }
  MF_ASSIGN_OR_RETURN(GraphPlan unsplit, PlanGraph(graph, options.planner, {.refine = true}));
  const PointContext context{graph,       options, unsplit.plan.arena_bytes,
                             total_flops, budget,  max_steps};
  const std::vector<size_t> picked = Picked(curve.size(), points);
  // The picked estimates and the lowest one's finer variant, built on every core; then the
  // smaller of those two descended (DescendRealPeak). Each is a point.
  std::vector<Estimate> to_build;
  for (size_t index : picked) to_build.push_back(curve[index]);
  if (!picked.empty()) {
    if (std::optional<Estimate> finer = FinerAtEqualWork(curve[picked.back()], max_steps))
      to_build.push_back(std::move(*finer));
  }
  std::vector<std::optional<Result<SplitResult>>> points_built(to_build.size());
  OnEveryCore(to_build.size(),
              [&](size_t k) { points_built[k] = BuildPoint(context, to_build[k]); });
  std::vector<SplitResult> built;
  size_t lowest = to_build.size();  // the index of the smallest of the last two, if split
  for (size_t k = 0; k < to_build.size(); ++k) {
    MF_RETURN_IF_ERROR(points_built[k]->status());
    SplitResult& point = **points_built[k];
    if (point.stages.empty()) continue;
    if (k + 1 >= picked.size() &&
        (lowest == to_build.size() || point.arena_after < (*points_built[lowest])->arena_after))
      lowest = k;
  }
  std::optional<SplitResult> descended;
  if (lowest < to_build.size()) {
    MF_ASSIGN_OR_RETURN(descended, DescendRealPeak(context, &segments, to_build[lowest],
                                                   (*points_built[lowest])->arena_after));
  }
  for (std::optional<Result<SplitResult>>& point : points_built) {
    if (!(*point)->stages.empty()) built.push_back(std::move(**point));
  }
  if (descended) built.push_back(std::move(*descended));
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  for (SplitResult& point : built) point.search_ms = ms;
  return built;
}

}  // namespace memfold
