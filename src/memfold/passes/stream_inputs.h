// Streaming graph inputs (--stream-input): a streamed input is never resident in the arena;
// the runtime fetches boxes of it from the caller (exec/executor.h), and operation splitting
// (passes/split.h) makes each tile fetch only its box.
#pragma once

#include "memfold/ir/graph.h"

namespace memfold {

// Streams every rank-4 batch-1 graph input (--stream-input): the input becomes role kStreamed,
// outside the arena, and one slice fetching all of it, first in the schedule, feeds its
// readers. Unsplit, that slice holds the whole input in the arena as before; a split region
// that starts with it fetches each tile's box instead. Returns how many inputs it streamed.
// O(V + E).
int StreamInputs(Graph* graph);

}  // namespace memfold
