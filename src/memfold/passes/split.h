// Operation splitting (patch-based execution: the DMO paper's "operation splitting", MCUNetV2's
// patch-based inference): a region of consecutive spatial ops runs tile by tile, so that only
// one tile of each intermediate tensor is live at a time, at the price of recomputing what
// neighbouring tiles share (the halo).
//
// A region is schedule positions first..last whose values stay inside it except the last op's
// output: a chain, or a whole network stage with residual adds and explicit pads. Its output is
// cut into a grid of rows x cols tiles (rows only: bands; both: 2-D patches). For each tile the
// box (rows and columns) every value of the region must hold is worked backwards through every
// op exactly (window: filter, stride, dilation, padding; pad and slice: a shift; elementwise:
// the same box), as the hull over the value's readers. The tile's copy of each op computes that
// box, with explicit padding where the box reaches past the image border and none inside, so it
// computes exactly the bytes the unsplit op computes (kernels skip out-of-bounds taps whether
// the padding is "same" or explicit; float and int8, pools included). A reader needing less
// than its input's box reads a slice of it. The tiles' outputs are concatenated (along W, then
// H) into the region's original output value. Slices and concats are views where liveness
// allows (attribute view = 1, plan/liveness.h): rows of a tile are contiguous, so row bands of
// a value are read in place and the tiles written in place into the output; a column crop is
// copied.
//
// Cached halos (RegionSplit::cache_halos): the tiles run strip by strip (column by column of
// the grid); the rows a tile shares with the tile above it are copied into a line buffer when
// that tile ends and joined with the rows the next tile computes (a copying concat, which the
// diagonal planner overlaps with the computed rows), so only column halos are recomputed.
//
// Streamed input: when the region reads a graph input whose role is kStreamed (the runtime
// fetches boxes of it from the caller, exec/executor.h), each tile's slice of it is a fetch of
// that box, and the whole image is never resident.
//
// SplitForMemory searches regions around the planned arena's peak and tile grids, plans every
// candidate (PlanGraph, default the diagonal planner, verified) and keeps the smallest arena
// whose extra work stays within the recompute budget; it repeats around the new peak while
// that helps, within a deterministic bound on the placement work it spends. It never returns a
// graph with a larger arena than its input.
//
// Preconditions: every op of a region is conv2d, depthwise_conv2d, max/avg_pool2d, an
// elementwise op (unary, or binary on two same-shaped activations), a constant pad or a slice
// along H and W, on rank-4 NHWC batch-1 tensors, with constant other inputs.
// Complexity: SplitRegion O(V + tiles * (region + values)); SplitForMemory plans
// O(rounds * regions * grids) candidate graphs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {

// One region to split: schedule positions first..last (inclusive) and the tile grid over its
// output (rows x cols).
struct RegionSplit {
  int32_t first = 0;
  int32_t last = 0;
  int32_t rows = 2;
  // The tiles are written straight into the output (view concats) or copied into it at the
  // end. Copy-free saves the copy and the concat's double footprint; copying allocates the
  // output only when the concat runs, so the output does not live beside the region's input.
  bool copy_free_concat = true;
  int32_t cols = 1;
  // The rows a tile shares with the tile above it are kept (copied out of it into a small
  // buffer, a line buffer) instead of recomputed; tiles then run strip by strip (column by
  // column of the grid), and only column halos are recomputed.
  bool cache_halos = false;
  int32_t tiles() const { return rows * cols; }
};

struct SplitStats {
  int64_t duplicated_elements = 0;  // output elements computed more than once, all region ops
  double extra_flops = 0;           // tile ops' FLOPs minus the region's
  int64_t max_tile_bytes = 0;       // largest tile of an intermediate (not the region's output)
  int64_t cache_bytes = 0;          // most bytes of cached halo rows kept between two bands
  ValueId output = kNoValue;        // the region's output: the same value id in both graphs
  int32_t first_position = 0;       // the split stage in the new schedule (inclusive)
  int32_t last_position = 0;
};

// Whether positions first..last form a splittable region (see preconditions); the error says
// why not.
Status CheckRegion(const Graph& graph, int32_t first, int32_t last);

// Rewrites one region. Errors: not a region, a grid outside 1..rows x 1..cols of the region's
// output, or tiles so small that one reads nothing but padding.
Result<Graph> SplitRegion(const Graph& graph, const RegionSplit& split,
                          SplitStats* stats = nullptr);

// Streams every rank-4 batch-1 graph input (--stream-input): the input becomes role kStreamed,
// outside the arena, and one slice fetching all of it, first in the schedule, feeds its
// readers. Unsplit, that slice holds the whole input in the arena as before; a split region
// that starts with it fetches each tile's box instead. Returns how many inputs it streamed.
// O(V + E).
int StreamInputs(Graph* graph);

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
};

struct SplitStage {
  std::vector<std::string> ops;  // names of the region's nodes, in order
  RegionSplit split;             // positions in the graph this round started from
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

}  // namespace memfold
