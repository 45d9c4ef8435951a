// Operation splitting (patch-based execution, DMO paper "operation splitting"): a chain of
// consecutive spatial ops runs band by band along H, so that only one band of each
// intermediate tensor is live at a time, at the price of recomputing the rows that
// neighbouring bands share (the halo).
//
// SplitChain rewrites one chain: for each of `tiles` row bands of the chain's last output it
// slices the rows of the chain's input that band needs (exact halo, computed backwards through
// every op's window: filter, stride, dilation, padding), runs copies of the chain's ops on the
// band with explicit padding (the original padding where the band touches the image border,
// none inside), and concatenates the bands along H into the chain's original output value.
// Kernels skip out-of-bounds taps in the same way whether the padding is "same" or explicit,
// so every band computes exactly the bytes the unsplit op computes (float and int8, pools
// included). The slices and the concat are copy-free views (attribute view = 1,
// plan/liveness.h): a band reads its rows inside the input's buffer and writes its rows
// inside the output's buffer.
//
// SplitForMemory searches chains around the planned arena's peak and tile counts, plans every
// candidate (PlanGraph, default the diagonal planner, verified) and keeps the smallest arena
// whose extra work stays within the recompute budget; it repeats around the new peak while
// that helps. It never returns a graph with a larger arena than its input. For each chain the
// tile counts are tried in increasing order, each with a copy-free and a copying concat, until
// the budget is exceeded or three counts in a row fail to improve on that chain's best.
//
// Preconditions: a chain is 1..n consecutive nodes in schedule order, each reading the
// previous node's only output (read by nothing else and not a graph output) as its input 0;
// every op is conv2d, depthwise_conv2d, max/avg_pool2d or a unary elementwise op, on rank-4
// NHWC batch-1 tensors, with constant other inputs.
// Complexity: SplitChain O(V + E + tiles * chain); SplitForMemory plans
// O(rounds * chains * tiles) candidate graphs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {

// One chain to split: schedule positions first..last (inclusive) and the number of row bands.
struct ChainSplit {
  int32_t first = 0;
  int32_t last = 0;
  int32_t tiles = 2;
  // The bands are written straight into the output (a view concat) or copied into it at the
  // end. Copy-free saves the copy and the concat's double footprint; copying allocates the
  // output only when the concat runs, so the output does not live beside the chain's input.
  bool copy_free_concat = true;
};

struct SplitStats {
  int64_t duplicated_elements = 0;  // output elements computed more than once, all chain ops
  double extra_flops = 0;           // band ops' FLOPs minus the chain's
  int64_t max_tile_bytes = 0;       // largest band of an intermediate (not the chain's output)
  ValueId output = kNoValue;        // the chain's output: the same value id in both graphs
  int32_t first_position = 0;       // the split stage in the new schedule (inclusive)
  int32_t last_position = 0;
};

// Whether positions first..last form a splittable chain (see preconditions); the error says why
// not.
Status CheckChain(const Graph& graph, int32_t first, int32_t last);

// Rewrites one chain. Errors: not a chain, or tiles outside 1..rows of the chain's output.
Result<Graph> SplitChain(const Graph& graph, const ChainSplit& split, SplitStats* stats = nullptr);

struct SplitOptions {
  double max_recompute = 0.10;  // extra FLOPs allowed, as a fraction of the model's
  int32_t min_tiles = 2;
  int32_t max_tiles = 16;
  int32_t max_chain_ops = 4;
  int32_t max_rounds = 4;  // splits applied one after another around the moving peak
  std::string planner = "diagonal";
  // Safe overlaps used while ranking candidates (the closed form is much cheaper than replaying
  // loop nests); each round's winner is re-planned with exact (algorithmic) overlaps and kept
  // only if that plan is smaller too.
  OverlapSource search_overlaps = OverlapSource::kAnalytic;
};

struct SplitStage {
  std::vector<std::string> ops;  // names of the chain's nodes, in order
  ChainSplit split;              // positions in the graph this round started from
  SplitStats stats;
  int64_t arena_bytes = 0;  // arena after this round
};

struct SplitResult {
  Graph graph;                     // the input graph when no split helps
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
