// MXNet's PlanMemory, the baseline Echo is measured against (REFERENCE.md §4): storage ids are
// handed out walking the schedule. Every buffer is reference-counted (its consumers, plus one
// if it holds a graph output); an output takes its input's storage in place when the op allows
// it, the input dies at this node and sizes match; other outputs, largest first, take the
// best-fitting free storage within a match range (sizes in [s / range, s * range], the
// smallest that is large enough, else the largest smaller one, which grows); a buffer's
// storage returns to the free list when its count drops to zero. The smallest total over the
// match ranges 1, 2, 4, 8, 16 is kept.
//
// MXNet allocates every storage separately; memfold then places the storages in one arena
// with an offset planner (PlanGraph's "mxnet" planner). O(n log n) per match range.
#pragma once

#include <vector>

#include "memfold/ir/graph.h"
#include "memfold/plan/liveness.h"

namespace memfold {

struct StoragePlan {
  std::vector<int32_t> storage_of;                    // per liveness request: its storage id
  std::vector<int64_t> storage_bytes;                 // per storage id: the largest buffer it holds
  std::vector<std::pair<int32_t, int32_t>> in_place;  // (output request, input request) pairs
  int64_t total_bytes = 0;  // sum of storage sizes: what MXNet would allocate
  int match_range = 0;
};

StoragePlan PlanStorage(const Graph& graph, const Liveness& liveness);

}  // namespace memfold
