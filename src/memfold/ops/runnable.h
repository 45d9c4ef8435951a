// Whether the executor and the device runtime can run a graph: every operator known, with a
// kernel for its element type, reading only tensors something writes, and inputs of the right
// sizes; and the contract's default inputs. Asks the op registry only, so the code generator
// checks a model without linking the executor. O(nodes) each.
#pragma once

#include <string>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"

namespace memfold {

// An operator the executor cannot run, and why (unknown to memfold, no kernel for its element
// type, or it reads a tensor nothing writes).
struct OperatorGap {
  size_t position;  // in the schedule
  std::string reason;
};
// Every such operator of the schedule, in order. O(nodes).
std::vector<OperatorGap> OperatorsThatCannotRun(const Graph& graph);

// Checks that every node has a kernel for its types and the inputs have the right sizes.
Status CheckRunnable(const Graph& graph, const std::vector<Bytes>& inputs);

// The contract's default input for every graph input (CONTRACT.md "Default input").
std::vector<Bytes> DefaultInputs(const Graph& graph);

}  // namespace memfold
