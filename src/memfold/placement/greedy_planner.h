// The greedy planner: a result-identical reproduction of TensorFlow Lite Micro's
// GreedyMemoryPlanner (tensorflow/lite/micro/memory_planner/greedy_memory_planner.cc).
//
// Algorithm (TFLM's): occupied sizes are the request sizes rounded up to their alignment. The
// placement order is the requests in reverse order, stably sorted by size, largest first (TFLM
// fills its sort array from the end and bubble-sorts it), so equal sizes go in reverse request
// order. Each buffer then walks the already-placed buffers whose lifetimes intersect its own,
// in increasing offset order (equal offsets: in placement order), keeping a candidate offset
// that starts at 0 and becomes the highest end seen so far; it takes the first gap between the
// candidate and the next buffer that is large enough, else the end. Arena = max(offset + size).
//
// Extension: after each step the candidate is rounded up to the buffer's alignment. With one
// alignment for all requests (TFLM's case: 16) this never changes a result.
//
// Complexity: TFLM's bubble sort and linked-list walk are O(n^2). Here the sort is O(n log n),
// and a buffer live together with k of the p buffers placed so far finds them through a
// segment tree over time steps and sorts them, O(log n + k log k); when k log k > p it instead
// walks all placed buffers in offset order, O(p), like TFLM. Schedules of short-lived buffers
// thus plan in about O(n log n); each buffer live for most of the schedule adds O(n), and so
// does its presence among the k of every later buffer.
// Overlap allowances (may_overlap) are ignored, as TFLM has none. Requests with a fixed
// offset (an offline plan) are placed first, in request order, at their offsets, and the rest
// around them, as TFLM does with OfflineMemoryAllocation.
//
// Variant `greedy_stable` places equal sizes in request order instead of reverse request
// order. TFLM's reverse order is an accident of how it fills its sort array; on some models
// (vww_96_int8) it costs memory, on others it saves some, so `best` tries both.
#pragma once

#include "memfold/placement/planner.h"

namespace memfold {

class GreedyPlanner final : public Planner {
 public:
  enum class TieOrder { kReverseRequest, kRequest };
  explicit GreedyPlanner(TieOrder ties = TieOrder::kReverseRequest) : ties_(ties) {}
  std::string_view name() const override {
    return ties_ == TieOrder::kReverseRequest ? "greedy" : "greedy_stable";
  }
  Plan Place(std::span<const BufferRequest> requests) const override;

 private:
  TieOrder ties_;
};

}  // namespace memfold
