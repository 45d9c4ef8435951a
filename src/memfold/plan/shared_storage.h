// Which values share bytes, derived once per graph from the graph and the op registry: liveness
// keeps it (Liveness::shared), which the planners, the executor's planned runs, checked runs,
// the scheduler and the code generator read; an unplanned Session derives its own.
//
//   root[v]        the value whose bytes v is: v itself, or the input an alias op (reshape) or
//                  an in-place update (an optimizer step; OpDef::updates_input) passes through,
//                  chains resolved to the first value;
//   persistent[v]  v's bytes outlive a run and may be written in place: TFLite variable tensors
//                  (role kState) and the storage in-place updates write (weights, optimizer
//                  state), marked on every value that shares them.
//
// Copy-free views (concatenations written in place, slices read in place) are a planning choice
// on top of this and live in Liveness. O(V + E).
#pragma once

#include <vector>

#include "memfold/ir/graph.h"

namespace memfold {

struct SharedStorage {
  std::vector<ValueId> root;
  std::vector<char> persistent;
};

SharedStorage ComputeSharedStorage(const Graph& graph);

}  // namespace memfold
