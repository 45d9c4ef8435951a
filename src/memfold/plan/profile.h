// The memory profiler (Echo's Figure 4): where the bytes of a planned training step go.
//
// total = arena + persistent memory. Persistent memory is split into weights (parameters and
// other state) and optimizer state. Arena bytes are attributed at the peak step: values the
// forward pass produced (graph inputs included) are feature maps, values the backward pass
// produced are gradients, kernel scratch is workspace, and the arena bytes no live buffer
// occupies at that step are fragmentation. The same bytes are also grouped by the layer type
// of the node that produced them (weights by the layer that reads them). The live-memory
// curve gives the live arena bytes at every step, in total and by kind (feature maps,
// gradients, workspace: the same rule as the breakdown). O(V + E + B log B + T).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "memfold/ir/graph.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {

struct MemoryBreakdown {
  int64_t feature_maps = 0;
  int64_t weights = 0;
  int64_t gradients = 0;
  int64_t optimizer = 0;
  int64_t workspace = 0;
  int64_t fragmentation = 0;
  int64_t total() const {
    return feature_maps + weights + gradients + optimizer + workspace + fragmentation;
  }
};

struct MemoryProfile {
  MemoryBreakdown breakdown;
  std::map<std::string, int64_t> by_layer_type;
  std::vector<int64_t> live_bytes;  // per time step: live arena bytes
  // Per time step, the live arena bytes of each kind; the three sum to live_bytes.
  std::vector<int64_t> live_feature_maps, live_gradients, live_workspace;
  int32_t peak_time = 0;
};

// `forward_nodes`: the schedule's first nodes that form the forward pass.
MemoryProfile ProfileMemory(const Graph& graph, size_t forward_nodes, const GraphPlan& plan);

// The bytes outside the arena: weights plus optimizer state (the breakdown's total minus the
// arena, for any plan of `graph`). O(V).
int64_t PersistentBytes(const Graph& graph);

}  // namespace memfold
