// The memory-budget choice: the recomputation set whose kept bytes (passes/stash_model.h) fit
// a budget with the fewest recomputed FLOPs. It starts from Echo's choice (cheap
// recomputations that do not raise the footprint). While the kept bytes exceed the budget it
// adds the forward node that frees the most kept bytes per FLOP recomputed — compute-heavy ones
// (matrix products, convolutions) included, but only as the budget demands; while they fit
// with room, it drops recomputations that cost the most FLOPs per byte they save, as long as
// the set still fits. A node moves together with the forward views of its outputs (a view
// kept would keep the bytes). Nodes that must not run twice never enter. When no set fits,
// the smallest one found is returned. Lazy greedy: gains are re-evaluated when popped, each
// over the node's inputs and outputs; the total is re-counted exactly after each pass.
#pragma once

#include <cstdint>
#include <vector>

#include "memfold/ir/graph.h"
#include "memfold/passes/gradient.h"

namespace memfold {

// The recomputation choice for `budget` bytes kept, indexed by node id.
std::vector<char> BudgetChoice(const Graph& graph, const TrainingGraph& training, int64_t budget);

}  // namespace memfold
