// Loads a model named the way the CLI names it: "zoo:NAME[,key=value...]" builds a reference
// model, a path ending in .onnx is read as an ONNX model, anything else as a .tflite file. The
// result is verified (structure and, for every op memfold knows, shapes). O(model size).
//
// Every error is one line that starts with the model's name or path. A model whose weights do
// not fit in this machine's memory is an error too ("needs more memory than ..."), not a crash.
#pragma once

#include <string>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"

namespace memfold {

Result<Graph> LoadModel(const std::string& model);

// How a loaded model takes its image inputs: as the file declares them, or NHWC (an ONNX
// model's NCHW inputs made channels-last, passes/input_layout.h: the caller then gives HWC
// images, as cameras and decoders deliver them).
enum class InputLayout { kAsDeclared, kNhwc };

// The layout a user names: "model" (as declared) or "nhwc"; an error lists both.
Result<InputLayout> ParseInputLayout(const std::string& name);

// `graph`'s image inputs in `layout` (`label`, the model's name, starts any error).
Result<Graph> WithInputLayout(Graph graph, InputLayout layout, const std::string& label);

// LoadModel, then WithInputLayout.
Result<Graph> LoadModel(const std::string& model, InputLayout layout);

// The file part of LoadModel for bytes already in memory (`label` names them in messages):
// ONNX when the bytes start as ONNX files do and carry no TFL3 identifier, else TFLite; then
// the same shape and structure checks.
Result<Graph> LoadTflite(Bytes file, const std::string& label);

}  // namespace memfold
