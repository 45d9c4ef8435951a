// The memory-budget choice: the recomputation set whose kept bytes (passes/stash_model.h) fit
// a budget with the fewest recomputed FLOPs. It starts from Echo's choice (cheap
// recomputations that do not raise the footprint). While the kept bytes exceed the budget it
// adds the move that frees the most kept bytes per FLOP recomputed — compute-heavy nodes
// (matrix products, convolutions) included, but only as the budget demands; while they fit
// with room, it drops recomputations that cost the most FLOPs per byte they save, as long as
// the set still fits. A node moves together with the forward views of its outputs (a view
// kept would keep the bytes), and a move may reach back through the producers of inputs it
// would newly keep (a chain of equal-sized results frees bytes only as a whole). Nodes that
// must not run twice never enter. When no set fits, the smallest one found is returned.
// Lazy greedy, in passes until one moves nothing: a move's gain is re-evaluated when popped,
// exactly, over its nodes' inputs and outputs (StashModel counts shared storages whole).
// O(passes * units * move depth * local evaluation).
#pragma once

#include <cstdint>
#include <vector>

#include "memfold/ir/graph.h"
#include "memfold/passes/gradient.h"

namespace memfold {

// The recomputation choice for `budget` bytes kept, indexed by node id.
std::vector<char> BudgetChoice(const Graph& graph, const TrainingGraph& training, int64_t budget);

}  // namespace memfold
