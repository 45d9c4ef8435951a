// Safe-overlap allowances on a graph's buffer requests (diagonal memory optimisation): every
// node's output may overlap each input that dies at the node by the input's safe overlap O_s
// (REFERENCE.md §1), from the op registry's memory-access models.
//
// The algorithmic models replay loop nests, O(output elements) per node; once a graph's replays
// would pass `replay_budget` elements, the remaining nodes get the analytic model (a lower
// bound, so still safe): a small file that declares enormous tensors cannot stall planning.
// Real models stay far below the default. Outputs written in rows of a concatenation get no
// allowance (O_s models contiguous writes).
#pragma once

#include <cstdint>

#include "memfold/ir/graph.h"
#include "memfold/plan/liveness.h"

namespace memfold {

// Which memory-access model supplies the safe overlaps.
enum class OverlapSource { kAlgorithmic, kAnalytic };

inline constexpr int64_t kOverlapReplayBudget = int64_t{1} << 27;

// Adds to `live`'s requests an allowance per (output, dying input) pair with O_s > 0.
void AddOverlapAllowances(const Graph& graph, OverlapSource source, Liveness* live,
                          int64_t replay_budget = kOverlapReplayBudget);

}  // namespace memfold
