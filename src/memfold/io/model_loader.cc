#include "memfold/io/model_loader.h"

#include <filesystem>

#include "memfold/io/tflite_reader.h"
#include "memfold/ir/verify.h"
#include "memfold/ops/registry.h"
#include "memfold/zoo/zoo.h"

namespace memfold {

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
  Status structure = VerifyGraph(tflite.graph);
  if (!structure.ok()) return Status::Error(model + ": " + structure.message());
  return std::move(tflite.graph);
}

}  // namespace memfold
