// Structural verifier for a Graph: every id in range, every value produced at most once,
// the schedule a permutation of the nodes in topological order, every value read either a
// graph input, a constant or produced earlier in the schedule, every graph output written by
// something, constants sized like their type, shapes non-negative. Knows nothing about
// operators (ops/ checks shapes).
//
// Complexity O(V + E). Returns the first problem found, naming the node or value.
#pragma once

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"

namespace memfold {

Status VerifyGraph(const Graph& graph);

}  // namespace memfold
