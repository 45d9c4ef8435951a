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
// used. Copy-free views (opt-in with the attribute view = 1): a concat holds its inputs inside
// its own buffer, which then lives from the first input's production — along its outermost
// non-unit axis back to back, along an inner axis in rows (RowLayout: each input's share of
// every output row; the producing kernel writes them there through its strided Out view) —
// and a slice of one contiguous byte range reads its input's buffer at an offset; the planned
// executor runs neither. A concat input qualifies only if it is read once (by that concat), is
// no graph input or output, and is the only output of a node that writes it (no alias, view
// slice or in-place update; a nested view concat is fine; one that lies in rows itself places
// its inputs in the same rows when it joins whole rows along its outermost axis — a strip of
// tiles inside a band of columns — and otherwise copies into its rows); the concat's output must be
// no graph output and read by no in-place update. Inputs that do not qualify are copied by the
// concat as usual (the others are already in place). A view slice qualifies only if its input is in
// the arena and its output is no graph output. Values in rows get no diagonal overlap (O_s models
// contiguous outputs). Requests are created in value-id order (TFLM adds them in tensor-index
// order), then the kernels' scratch buffers in schedule order, each live only at its node's time.
//
// Complexity O(V + E).
#pragma once

#include <vector>

#include "memfold/ir/graph.h"
#include "memfold/placement/buffer.h"
#include "memfold/plan/shared_storage.h"

namespace memfold {

// How a value written in place into a concatenation along an inner axis lies in its buffer:
// rows of `row_bytes`, one every `stride_bytes`, the first at its view offset. Zero: contiguous.
struct RowLayout {
  int64_t row_bytes = 0;
  int64_t stride_bytes = 0;
};

struct Liveness {
  std::vector<BufferRequest> requests;
  std::vector<int32_t> buffer_of;  // per value: its request index, or -1 (not in the arena)
  std::vector<ValueId> value_of;   // per request: the value that owns it (kNoValue: scratch)
  std::vector<std::vector<int32_t>> scratch_of;  // per node: its scratch buffers' requests
  // per value: byte offset of its data inside its buffer (non-zero only for views); empty
  // means all zero.
  std::vector<int64_t> view_offset;
  std::vector<RowLayout> view_rows;  // per value; empty means all contiguous
  std::vector<char> copy_free;       // per node: a view concat/slice the planned executor skips
  int32_t end_time = 0;              // when the caller reads the outputs: number of nodes + 1
  // Which values share bytes (aliases, in-place updates) and which outlive a run: derived once
  // here, read by the planners, the executor and the code generator.
  SharedStorage shared;
};

inline constexpr int32_t kNoBuffer = -1;
inline constexpr int64_t kArenaAlignment = 16;

Liveness ComputeLiveness(const Graph& graph);

// Byte offset of a value's data inside its buffer (0 when `liveness` has no views).
inline int64_t ViewOffset(const Liveness& liveness, ValueId v) {
  return liveness.view_offset.empty() ? 0 : liveness.view_offset[static_cast<size_t>(v)];
}

// The row layout of a value inside its buffer (contiguous when `liveness` has no views).
inline RowLayout ViewRows(const Liveness& liveness, ValueId v) {
  return liveness.view_rows.empty() ? RowLayout{} : liveness.view_rows[static_cast<size_t>(v)];
}

// Payload bytes live at each time step 0..end_time (a difference array and its prefix sums).
// O(requests + end_time).
std::vector<int64_t> LiveBytesPerStep(const Liveness& liveness);

// Time at which the node at schedule position `position` runs.
inline int32_t NodeTime(size_t position) { return static_cast<int32_t>(position) + 1; }

}  // namespace memfold
