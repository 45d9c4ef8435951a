// Liveness: turns a scheduled Graph into the buffer requests the planners place.
//
// Lifetimes follow TensorFlow Lite Micro (REFERENCE.md §2): graph inputs are live from time 0,
// the node at schedule position i runs at time i + 1, its outputs are first live then, every
// value a node reads is live at least until that node's time, and graph outputs stay live to
// the end: the step after the last node, when the caller reads them. (TFLM ends them at the
// last node; no other buffer is live after it, so plans are the same, but no planner may
// mistake an output read by the last node for a value that dies there.) An operator's inputs
// and outputs are therefore always live together.
//
// Values that need no arena memory get no request: constants, weights, zero-sized values.
// Alias ops (reshape) share their input's buffer, which then lives as long as any alias is
// used. Requests are created in value-id order (TFLM adds them in tensor-index order), then
// the kernels' scratch buffers in schedule order, each live only at its node's time.
//
// Complexity O(V + E).
#pragma once

#include <vector>

#include "memfold/ir/graph.h"
#include "memfold/plan/buffer.h"

namespace memfold {

struct Liveness {
  std::vector<BufferRequest> requests;
  std::vector<int32_t> buffer_of;  // per value: its request index, or -1 (not in the arena)
  std::vector<ValueId> value_of;   // per request: the value that owns it (kNoValue: scratch)
  std::vector<std::vector<int32_t>> scratch_of;  // per node: its scratch buffers' requests
  int32_t end_time = 0;            // when the caller reads the outputs: number of nodes + 1
};

inline constexpr int32_t kNoBuffer = -1;
inline constexpr int64_t kArenaAlignment = 16;

Liveness ComputeLiveness(const Graph& graph);

// Payload bytes live at each time step 0..end_time (a difference array and its prefix sums).
// O(requests + end_time).
std::vector<int64_t> LiveBytesPerStep(const Liveness& liveness);

// Time at which the node at schedule position `position` runs.
inline int32_t NodeTime(size_t position) { return static_cast<int32_t>(position) + 1; }

}  // namespace memfold
