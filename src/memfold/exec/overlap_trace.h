// The trace method of safe-overlap analysis (the paper's bottom-up method): runs a node's
// real kernel, instantiated with the recording access policy, on private buffers, and derives
// O_s of output 0 over one input from the recorded reads and writes. Exact for the kernel as
// it runs; costs one execution of the kernel (O(MACs)).
#pragma once

#include <optional>
#include <vector>

#include "memfold/ir/graph.h"

namespace memfold {

// nullopt when the node's op has no traced kernel for its types.
std::optional<int64_t> SafeOverlapByTrace(const Graph& graph, const Node& node, int input);

// O_s of every node by all three methods, for the input a diagonal plan would overlap: the
// first input that is not a constant. Methods without a model report nullopt.
struct NodeOverlap {
  size_t position;  // in the schedule
  NodeId node;
  int input;  // -1 when the node has no computed input (or is an alias)
  int64_t output_bytes;
  std::optional<int64_t> analytic, algorithmic, trace;
};
struct OverlapReport {
  std::vector<NodeOverlap> nodes;
  double analytic_ms = 0, algorithmic_ms = 0, trace_ms = 0;  // total time per method
};
OverlapReport AnalyseOverlaps(const Graph& graph, bool with_trace = true);

}  // namespace memfold
