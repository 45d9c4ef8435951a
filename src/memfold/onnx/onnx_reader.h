// Reads ONNX models (a ModelProto, protobuf; what torch.onnx.export writes) into a memfold Graph.
//
// The file is parsed by protobuf (Debian's libprotobuf with ONNX's own message classes from
// libonnx), then checked as memfold reads it: the default domain's opset must lie in 11-23
// (converters follow each operator's changes across those versions; 13-21 are tested), every
// initializer's data must match its type and dimensions, every name a node reads must be
// defined before it. Initializers become constants (external data is read from files beside the
// model, never outside its directory); a symbolic input dimension ("batch") takes
// size 1, as TFLM takes -1. Each node is converted through one table (onnx_ops.cc) into
// registry ops, NHWC where memfold's window kernels want it (onnx_importer.h explains the layout
// and constant folding). An operator without a converter, or of another domain, loads as an
// opaque node "onnx:TYPE" of the shapes the file states for its outputs (run
// onnx.shape_inference first if it states none): it can be inspected and planned, not run.
// The graph's inputs and outputs keep ONNX's order and layout, so a caller feeds and reads the
// same bytes as ONNX Runtime.
//
// Complexity O(file size) plus folding constant subgraphs. Hostile files give errors, never
// crashes: protobuf checks the wire format, this reader every index, size and type.
#pragma once

#include <span>
#include <string>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"

namespace memfold {

// `label` names the source in messages (usually the path). Weights kept as external data are
// read from files in `directory` (the model's own; empty: bytes without a directory, whose
// external data is an error).
Result<Graph> ParseOnnx(std::span<const std::byte> file, const std::string& label,
                        const std::string& directory = "");
Result<Graph> ReadOnnxFile(const std::string& path);

// Whether `path` names an ONNX file (".onnx", any case).
bool IsOnnxPath(const std::string& path);
// Whether bytes that are not a TFLite flatbuffer start as ONNX files do (field 1, ir_version).
bool LooksLikeOnnx(std::span<const std::byte> file);

}  // namespace memfold
