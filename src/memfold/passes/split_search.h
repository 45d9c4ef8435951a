// The search of operation splitting (passes/split.h): SplitForMemory searches regions around the
// planned arena's peak and tile grids, plans every candidate (PlanGraph, default the diagonal
// planner, verified) and keeps the smallest arena whose extra work stays within the recompute
// budget; it repeats around the new peak while that helps, within a deterministic bound on the
// placement work it spends. It never returns a graph with a larger arena than its input.
// Complexity: O(rounds * regions * grids) candidate graphs planned.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"
#include "memfold/passes/split.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {

struct SplitOptions {
  double max_recompute = 0.10;  // extra FLOPs allowed, as a fraction of the model's
  int32_t min_tiles = 2;
  int32_t max_tiles = 16;  // rows (and columns) of the grid
  int32_t max_cols = 4;    // 1: row bands only
  int32_t max_region_ops = 64;
  int32_t max_rounds = 4;            // splits applied one after another around the moving peak
  std::string planner = "diagonal";  // each round's finalists, refined
  // Candidates are ranked by this planner's arenas (or bounds): one placement heuristic, as a
  // candidate graph of a tiled stage has thousands of buffers and each placement costs O(n^2).
  std::string search_planner = "smallest";
  // Work the whole search may spend ranking candidates: placement work, as the sum over the
  // candidates it plans of their buffer count squared (a placement's cost), and a number of
  // candidates; candidates past either are not planned. Deterministic, unlike a time limit;
  // the defaults keep `best` within about 10 s on the zoo's MobileNets on a 2-core machine.
  double max_search_work = 6e8;
  int32_t max_candidates = 1500;
  // Safe overlaps used while ranking candidates (the closed form is much cheaper than replaying
  // loop nests); each round's winner is re-planned with exact (algorithmic) overlaps and kept
  // only if that plan is smaller too.
  OverlapSource search_overlaps = OverlapSource::kAnalytic;
  // The rounds' cached grids copy the rows each tile keeps at the tile's end (the plans pack
  // well) or after their last use (fewer bytes, and a much quicker search on large streamed
  // graphs); the winner is rebuilt the other way and the smaller kept.
  bool caches_at_tile_end = true;
  // The segment search (passes/split_curve.h): when positive, its plans have at most this many
  // operators (a compiled program's tables take flash for each).
  int64_t max_steps = 0;
};

struct SplitStage {
  std::vector<std::string> ops;  // names of the region's nodes, in order
  RegionSplit split;             // positions in the graph this round started from
  // Set instead when the stage runs in channel groups (its positions are split's first, last).
  std::optional<ChannelSplit> channels;
  SplitStats stats;
  int64_t arena_bytes = 0;  // arena after this round
};

struct SplitResult {
  Graph graph;  // the input graph when no split helps
  // The split graph's refined plan with options.planner (verified); null when nothing helped.
  std::shared_ptr<const GraphPlan> plan;
  std::vector<SplitStage> stages;  // empty when nothing helped
  int64_t arena_before = 0;
  int64_t arena_after = 0;
  double total_flops = 0;  // of the input graph
  double extra_flops = 0;
  int64_t duplicated_elements = 0;
  int32_t candidates_planned = 0;
  double search_ms = 0;
  double recompute_fraction() const { return total_flops > 0 ? extra_flops / total_flops : 0; }
};

// Errors: unknown planner, or a plan that fails verification.
Result<SplitResult> SplitForMemory(const Graph& graph, const SplitOptions& options = {});

// `result` (splits of `graph`, its stages applied first to last, or last to first) rebuilt
// with each cached stage's rows copied at the other time (RegionSplit::caches_at_tile_end):
// the same work and operators, a different placement problem; kept when it plans smaller
// with options.planner. Left as it is when the stages no longer match the rebuilt graph.
Status TryOtherCacheTiming(const Graph& graph, const SplitOptions& options, bool last_stage_first,
                           SplitResult* result);

}  // namespace memfold
