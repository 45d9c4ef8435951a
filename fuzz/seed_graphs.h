// Seeds for the TFLite fuzzer: small models written by memfold's own TFLite writer
// (io/tflite_graph_writer.h), so the checked-in corpus holds no copy of the shared models.
//
// MixedFloatGraph and QuantizedGraph are hand-built graphs that reach the operators and
// options the zoo's small models do not (depthwise, pad, transpose, reshape, element-wise,
// int8 kernels with per-channel quantisation); SeedFiles assembles every seed: those two, two
// tiny zoo models, offline-plan variants made by io/tflite_writer.h, the mixed graph with names
// that are markup and not UTF-8 (every printer must survive them), and short prefixes of two
// shared models (rejected as truncated: they exercise the verifier). O(seed bytes).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"

namespace memfold::fuzz {

Result<Graph> MixedFloatGraph();
Result<Graph> QuantizedGraph();

// (file name, bytes) for every seed; `shared_dir` is ../shared (the models' prefixes).
Result<std::vector<std::pair<std::string, Bytes>>> SeedFiles(const std::string& shared_dir);

}  // namespace memfold::fuzz
