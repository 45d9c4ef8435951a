#include "memfold/pipeline/model_loader.h"

#include <cstring>
#include <filesystem>
#include <new>

#include "memfold/io/tflite_reader.h"
#include "memfold/ir/verify.h"
#include "memfold/onnx/onnx_reader.h"
#include "memfold/ops/registry.h"
#include "memfold/passes/input_layout.h"
#include "memfold/zoo/zoo.h"

namespace memfold {
namespace {

// Shapes first (they name the operator and the tensor), then the structure.
Result<Graph> Checked(Graph graph, const std::string& label) {
  Status shapes = CheckShapes(graph);
  if (!shapes.ok()) return Status::Error(label + ": " + shapes.message());
  Status structure = VerifyGraph(graph);
  if (!structure.ok()) return Status::Error(label + ": " + structure.message());
  return graph;
}

// Zoo keys are range-checked, but their product can still ask for more weight memory than the
// machine has (zoo:mlp,in=1048576,hidden=65536 is 256 GiB of weights).
Result<Graph> BuildZoo(const std::string& model, std::string_view spec) {
  try {
    return BuildZooModel(spec);
  } catch (const std::bad_alloc&) {
    return Status::Error(model +
                         ": its weights need more memory than this machine has; choose smaller "
                         "keys (see `memfold zoo`)");
  }
}

}  // namespace

Result<Graph> LoadTflite(Bytes file, const std::string& label) {
  const bool tflite_identifier = file.size() >= 8 && std::memcmp(file.data() + 4, "TFL3", 4) == 0;
  // A TFLite file may lack its identifier (TFLM reads those) and still start with 0x08: what
  // is not an ONNX model is read as TFLite, and the ONNX reader's message kept if that fails.
  if (!tflite_identifier && LooksLikeOnnx(file)) {
    Result<Graph> onnx = ParseOnnx(file, label);
    if (onnx.ok()) return Checked(std::move(onnx).value(), label);
    Result<TfliteModel> tflite = ParseTflite(file, label);
    if (!tflite.ok()) return onnx.status();
    return Checked(std::move(tflite->graph), label);
  }
  MF_ASSIGN_OR_RETURN(TfliteModel tflite, ParseTflite(std::move(file), label));
  return Checked(std::move(tflite.graph), label);
}

Result<Graph> LoadModel(const std::string& model) {
  constexpr std::string_view kZoo = "zoo:";
  if (model.rfind(kZoo, 0) == 0)
    return BuildZoo(model, std::string_view(model).substr(kZoo.size()));
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(model, error);
  if (!std::filesystem::exists(status)) {
    return Status::Error(
        model + ": no such file; give a .tflite or .onnx path, or zoo:NAME (see `memfold zoo`)");
  }
  if (std::filesystem::is_directory(status)) {
    return Status::Error(model + ": is a directory; give a .tflite file in it, or zoo:NAME");
  }
  if (!std::filesystem::is_regular_file(status)) {
    return Status::Error(model +
                         ": is not a regular file (a device, pipe or socket); give a "
                         ".tflite file, or zoo:NAME");
  }
  if (IsOnnxPath(model)) {
    MF_ASSIGN_OR_RETURN(Graph graph, ReadOnnxFile(model));
    return Checked(std::move(graph), model);
  }
  MF_ASSIGN_OR_RETURN(TfliteModel tflite, ReadTfliteFile(model));
  return Checked(std::move(tflite.graph), model);
}

Result<InputLayout> ParseInputLayout(const std::string& name) {
  if (name == "model") return InputLayout::kAsDeclared;
  if (name == "nhwc") return InputLayout::kNhwc;
  return Status::Error("input layout '" + name + "': choose model or nhwc");
}

Result<Graph> WithInputLayout(Graph graph, InputLayout layout, const std::string& label) {
  if (layout == InputLayout::kNhwc) {
    if (Result<int> changed = MakeInputsChannelsLast(&graph); !changed.ok())
      return Status::Error(label + ": " + changed.status().message());
  }
  return graph;
}

Result<Graph> LoadModel(const std::string& model, InputLayout layout) {
  MF_ASSIGN_OR_RETURN(Graph graph, LoadModel(model));
  return WithInputLayout(std::move(graph), layout, model);
}

}  // namespace memfold
