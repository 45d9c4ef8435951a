// The memory / extra-work curve of operation splitting (passes/split.h) by fused segments, the
// shape of msf-CNN's search: the schedule is cut where one value alone is held between two
// operators (a block boundary), each run of operators between two cuts is a candidate segment,
// and every segment is tried unsplit and, where it is a splittable region, in grids of up to
// kMaxCols columns and as many rows as its output has (halos recomputed or cached). A grid is
// measured by the payload bytes live while its stage runs (liveness only, no placement), and
// its extra FLOPs. For a bound T on the bytes of every stage, a shortest path over the cuts gives
// the least extra work whose segments all stay within T; sweeping T over the measured values
// gives the curve. The segments that hold up its lowest point are then widened (more columns,
// one count per tile width, up to kMaxWidenCols) and the curve recomputed, a few rounds. Chosen
// points are then built (every segment split, last first, so earlier positions hold), planned
// with a verified placement and refined: their arenas are real. Two more points start from the
// lowest: the same path with every stage at its lowest option of no more extra work (finer
// grids, more channel groups), and a descent on the real plan: the estimates leave out the
// operators' overlaps and the placement's gaps, so the stage that holds the built plan's peak
// is lowered to its next option (widened first if patience stopped it), replanned, and so on
// while the arena does not grow and the budget allows.
//
// Complexity: O(segments * grids) rewrites and liveness passes of the whole graph, segments
// bounded by max_region_ops operators and kMaxSegmentCuts cuts, grids by patience, the budget
// and kMaxCols (kMaxWidenCols for at most kMaxWidenRounds rounds of floor segments, and for
// the segments the descent lowers); the shortest path is O(T values * segment options); the
// descent at most kMaxDescents unrefined plans. Preconditions: SplitRegion's.
#pragma once

#include <cstdint>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"
#include "memfold/passes/split_search.h"

namespace memfold {

// Which points of the estimated curve are built and planned: `spread` of them evenly along it
// and the `smallest` ones (the lowest estimates, whose real arenas may come out in another
// order).
struct CurvePoints {
  int32_t spread = 0;
  int32_t smallest = 2;
};

// The verified plans of the chosen points within options.max_recompute, in order of estimate
// (largest first), then the lowest's finer variant and its descent where they differ: each has
// the extra work and the arena of its refined plan, and every stage the grid of one segment.
// Points that split nothing are left out.
Result<std::vector<SplitResult>> SplitSegmentsCurve(const Graph& graph, const SplitOptions& options,
                                                    CurvePoints points = {});

}  // namespace memfold
