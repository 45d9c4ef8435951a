// Reads TensorFlow Lite flatbuffers into a memfold Graph.
//
// The Debian flatbuffers Verifier checks the whole file against memfold's schema subset
// (tflite_schema.h) before anything is read; then every index (tensor, buffer, opcode) is
// range-checked and every constant's size is compared with its type, so a truncated,
// corrupted or hostile file produces an error naming the problem, never a crash.
//
// Subgraph 0 becomes the Graph; value id == tensor index, node order == operator order.
// Operator codes map to registry ops through one table (tflite_ops.cc). An operator memfold has
// no registry op for (e.g. the Ethos-U custom op) still loads as an opaque node named
// "tflite:CODE" whose output shapes come from the file: it can be inspected and planned, not
// run. Shapes are fixed: a dimension that `shape_signature` marks dynamic (-1) takes the size
// `shape` gives it (usually batch 1), as TFLM does; -1 in `shape` itself is an error.
// Complexity O(file size).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"

namespace memfold {

struct TfliteModel {
  Graph graph;
  Bytes file;                 // the file as read, for writers that patch it
  int32_t total_tensors = 0;  // over all subgraphs (offline plans list them all)
  int32_t subgraphs = 0;
  // Offsets from an existing OfflineMemoryAllocation entry (one per tensor of all subgraphs,
  // -1 = plan online), if the file has one.
  std::optional<std::vector<int32_t>> offline_offsets;
};

Result<TfliteModel> ReadTfliteFile(const std::string& path);
// `label` names the source in messages (usually the path).
Result<TfliteModel> ParseTflite(Bytes file, const std::string& label);

}  // namespace memfold
