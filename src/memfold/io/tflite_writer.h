// Writes TFLite models that carry a memfold plan as TFLM's offline plan: metadata entry
// "OfflineMemoryAllocation" whose buffer holds little-endian int32
// [version 0, subgraphs, N, offset_0 ... offset_{N-1}] for all N tensors of all subgraphs,
// -1 meaning "plan this one at runtime" (REFERENCE.md §2). An existing entry is replaced.
//
// The original file is kept byte for byte; a new root Model table, buffer and metadata
// vectors, the plan buffer and its metadata entry are placed in front of it (flatbuffer
// offsets only point forward, so every old table stays valid where it is). The prefix is a
// multiple of 16 bytes so every old buffer keeps its alignment. O(file size).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/io/tflite_reader.h"

namespace memfold {

// `offsets` has one entry per tensor of all subgraphs.
Result<Bytes> WithOfflinePlan(const TfliteModel& model, const std::vector<int32_t>& offsets);

}  // namespace memfold
