// Dead-node elimination: removes nodes none of whose outputs is read by a kept node or is a
// graph output, unless the node updates state in place (optimizer steps). Value ids are kept
// (values of removed nodes become unreferenced); node ids are renumbered in schedule order.
// O(V + E).
#pragma once

#include "memfold/ir/graph.h"

namespace memfold {

// Returns the number of nodes removed.
int EliminateDeadNodes(Graph* graph);

}  // namespace memfold
