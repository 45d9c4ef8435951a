// Where a planned run keeps each value, and which arena bytes its checking mode poisons when:
// the layout the host executor runs in and the one `memfold compile` writes into device tables,
// computed once so the two cannot disagree.
//
// A value lives in the arena (its buffer's offset plus its view offset), in its constant data,
// in persistent storage (TFLite variable tensors, state updated in place), or nowhere; a value
// sharing another's bytes (an alias, an in-place update) lives where that one does.
// PlannedHomes is O(values); PoisonRanges is O(B log B) for B buffers.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "memfold/ir/graph.h"
#include "memfold/placement/buffer.h"
#include "memfold/plan/liveness.h"
#include "memfold/plan/shared_storage.h"

namespace memfold {

enum class Home : uint8_t { kNowhere, kArena, kConstant, kPersistent };

struct ValueHome {
  Home home = Home::kNowhere;
  int64_t offset = 0;        // kArena: byte offset in the arena
  ValueId owner = kNoValue;  // kConstant, kPersistent: the value whose bytes these are
};

// Storage sharing comes from `live` (Liveness::shared).
std::vector<ValueHome> PlannedHomes(const Graph& graph, const Liveness& live, const Plan& plan);

// The bytes a persistent value starts with: a constant's data; TFLite state as TFLM's
// ResetVariableTensors leaves it (int8 filled with its zero point); anything else zero.
Bytes PersistentInitialBytes(const Value& value);

// The arena byte ranges [begin, end) whose buffers' lifetimes start at `time`, less the bytes
// of buffers that still hold live data then (an input a diagonal output overlaps, say): what
// checking mode inverts at that time, in buffer order.
std::vector<std::pair<int64_t, int64_t>> PoisonRanges(const Liveness& live, const Plan& plan,
                                                      int32_t time);

}  // namespace memfold
