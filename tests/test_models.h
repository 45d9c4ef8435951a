// The models the integration tests run over: every .tflite file under ../shared/models (real
// converter output), and the zoo's inference models at sizes that execute in well under a
// second, each in float and int8. Header-only, for test targets. O(files).
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace memfold::testing {

// Paths of every shared .tflite file, sorted.
inline std::vector<std::string> SharedModelFiles() {
  std::vector<std::string> files;
  const std::filesystem::path root = std::filesystem::path(MEMFOLD_SHARED_DIR) / "models";
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.path().extension() == ".tflite") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// zoo:NAME specs of the inference models at test sizes: each in float, then in int8.
inline std::vector<std::string> SmallZooModels() {
  std::vector<std::string> models;
  for (const char* zoo :
       {"mobilenet_v1,alpha=0.25,res=64", "mobilenet_v2,alpha=0.35,res=64", "mlp", "cnn",
        "squeezenet,res=48", "densenet121,res=32", "inception_v3,res=75"}) {
    models.push_back(std::string("zoo:") + zoo);
    models.push_back(std::string("zoo:") + zoo + ",dtype=i8");
  }
  return models;
}

}  // namespace memfold::testing
