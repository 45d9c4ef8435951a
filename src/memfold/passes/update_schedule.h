// Optimizer updates as early as they may run. The gradient pass appends one in-place update per
// parameter after the whole backward pass, so every parameter gradient would live until the end
// of the step. This pass moves each update node (a registry row with updates_input) to just after
// the last node it must follow: the producers of its inputs and every other reader of a value it
// overwrites (a reader after the update would see the new bytes). A gradient then dies as soon as
// its update has read it, as in frameworks that apply updates when a gradient is ready. Other
// nodes keep their order; updates that become ready at the same node keep theirs. O(V + E).
#pragma once

#include <string>

#include "memfold/ir/graph.h"

namespace memfold {

// Precondition: graph->schedule is a valid topological order.
void ScheduleUpdatesEarly(Graph* graph);

// The first node (by name) that reads a value after an earlier node overwrote it in place, or
// "" when none does: a schedule for which this is non-empty computes with stale bytes.
std::string FirstReadAfterUpdate(const Graph& graph);

}  // namespace memfold
