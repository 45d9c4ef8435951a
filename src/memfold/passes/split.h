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
// the grid); the rows a tile shares with the tile above it are copied into a line buffer (after
// their last reader in the tile, or at its end) and joined with the rows the next tile computes
// (a copying concat, which the diagonal planner overlaps with the computed rows), so only column
// halos are recomputed. A strip may start with warm-up tiles (RegionSplit::warm_ups): bands of
// virtual output rows above the image, each computing the rows of every value those rows would
// read, so that the pipeline fills a few rows at a time and the strip's first tile computes no
// more than the others.
//
// Streamed input: when the region reads a graph input whose role is kStreamed (the runtime
// fetches boxes of it from the caller, exec/executor.h), each tile's slice of it is a fetch of
// that box, and the whole image is never resident.
//
// Preconditions: every op of a region is conv2d, depthwise_conv2d, max/avg_pool2d, an
// elementwise op (unary, or binary on two same-shaped activations), a constant pad or a slice
// along H and W, on rank-4 NHWC batch-1 tensors, with constant other inputs.
// Streaming the graph input is passes/stream_inputs.h; the search over regions and grids is
// passes/split_search.h. Complexity: SplitRegion O(V + tiles * (region + values)).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"

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
  // With cached halos: each strip's tiles are written straight into the output (live from
  // the first tile on), or copied into it when the strip is done (the output is allocated
  // only after the first strip; the tiles of a strip live apart until then). Which is smaller
  // depends on the stage, so the segment search measures both.
  bool strips_in_place = false;
  // With cached halos: the rows the next tile keeps of a value are copied out right after
  // the value's last reader in the tile (it dies early), or all at the end of the tile. The
  // first holds fewer bytes; the second can pack better with the diagonal overlaps of the
  // copies, so the searches plan their chosen splits both ways (TryOtherCacheTiming).
  bool caches_at_tile_end = true;
  // With cached halos: each strip starts with warm-up tiles (above), so that its first tile
  // is no heavier than the others, at the price of more operators. Deep stages need them;
  // the rounds' search of short stages does without.
  bool warm_ups = false;
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

// Channel splitting: a conv2d followed by ops that compute each channel from the same channel
// alone (pools, means over H and W, depthwise convolutions of multiplier 1, unary elementwise
// ops, such as an ONNX export's dequantize before its global average) runs in groups
// of output channels. Each group's convolution has that group's filters (weights, bias and
// per-channel quantisation sliced into new constants), its per-channel ops follow, and a
// copying concat along channels (the last axis) joins the groups into the region's output value.
// The same arithmetic for every output element, so no extra work and the same bytes; only one group
// of the wide intermediates is live at a time (MobileNet v2's head, a 1x1 convolution to 1280
// channels before a global average pool, needs a fraction of its 32 kB).
struct ChannelSplit {
  int32_t first = 0;
  int32_t last = 0;
  int32_t groups = 2;
};

// Whether first..last can be split by channel; the error says why not.
Status CheckChannelRegion(const Graph& graph, int32_t first, int32_t last);

// Errors: not such a region, or groups outside 2..the output's channels.
Result<Graph> SplitChannels(const Graph& graph, const ChannelSplit& split,
                            SplitStats* stats = nullptr);

// The region checks of CheckRegion, with the graph's readers and schedule positions computed
// once, for a search that checks many regions of one graph.
class RegionChecker {
 public:
  explicit RegionChecker(const Graph& graph);
  // Whether the op at `position` may be in a region (the preconditions above).
  Status Op(int32_t position) const;
  // Whether first..last, whose ops passed Op, form a region: it does not end with a slice and
  // no value but the last op's is read outside it.
  Status Bounds(int32_t first, int32_t last) const;
  Status Check(int32_t first, int32_t last) const;     // everything CheckRegion checks
  Status Channels(int32_t first, int32_t last) const;  // everything CheckChannelRegion checks

 private:
  const Graph& graph_;
  std::vector<std::vector<NodeId>> consumers_;
  std::vector<int32_t> position_;  // per node id: its schedule position
};

}  // namespace memfold
