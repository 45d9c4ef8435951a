// Loads a model named the way the CLI names it: "zoo:NAME[,key=value...]" builds a reference
// model, anything else is read as a .tflite file. The result is verified (structure and,
// for every op memfold knows, shapes). O(model size).
#pragma once

#include <string>

#include "memfold/ir/graph.h"
#include "memfold/ir/status.h"

namespace memfold {

Result<Graph> LoadModel(const std::string& model);

}  // namespace memfold
