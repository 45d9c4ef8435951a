// Model loading for the CLI: zoo specs and model files.
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "memfold/io/tflite_reader.h"
#include "memfold/ir/verify.h"
#include "memfold/ops/registry.h"
#include "memfold/zoo/zoo.h"

namespace memfold::cli {

int Fail(const std::string& message, int code) {
  std::cerr << "memfold: " << message << "\n";
  return code;
}

Result<Graph> LoadModel(const std::string& model) {
  constexpr std::string_view kZoo = "zoo:";
  if (model.rfind(kZoo, 0) == 0) return BuildZooModel(std::string_view(model).substr(kZoo.size()));
  std::error_code error;
  if (!std::filesystem::is_regular_file(model, error)) {
    return Status::Error(model + ": no such file; give a .tflite path or zoo:NAME (see `memfold zoo`)");
  }
  MF_ASSIGN_OR_RETURN(TfliteModel tflite, ReadTfliteFile(model));
  Status shapes = CheckShapes(tflite.graph);
  if (!shapes.ok()) return Status::Error(model + ": " + shapes.message());
  MF_RETURN_IF_ERROR(VerifyGraph(tflite.graph));
  return std::move(tflite.graph);
}

}  // namespace memfold::cli
