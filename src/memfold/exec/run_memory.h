// Whether running a model fits in this machine's memory, checked before anything is allocated,
// so that a model larger than memory is an error message rather than a std::bad_alloc abort or
// a visit from the kernel's out-of-memory killer.
//
// A run (`memfold run`) holds the inputs, the arena (at most the sum of the computed values,
// scratch aside) and, for the comparison, an unplanned copy of every computed value; the bound
// counts every non-constant value twice plus the inputs. O(V).
#pragma once

#include <cstdint>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"

namespace memfold {

// An upper bound on the bytes a planned run plus an unplanned run of `graph` allocate.
int64_t RunMemoryBound(const Graph& graph);

// Physical memory of this machine in bytes.
int64_t PhysicalMemoryBytes();

// Error ("running it needs up to X but this machine has Y; ...") when the bound exceeds
// `available`.
Status CheckRunFitsInMemory(const Graph& graph, int64_t available = PhysicalMemoryBytes());

}  // namespace memfold
