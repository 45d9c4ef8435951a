// The model zoo: reference networks built in C++ with the layer shapes the papers used.
//
// A model is named by a spec "NAME[,key=value...]" (the CLI's "zoo:" prefix removed). Every
// model declares its keys with defaults; an unknown model or key, or a value of the wrong kind
// or out of range, is an error that lists what is accepted. Building is O(model size).
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memfold/ir/graph.h"
#include "memfold/ir/status.h"

namespace memfold {

enum class KeyKind { kInt, kFloat };

struct ZooKey {
  std::string_view name;
  std::string_view default_value;
  KeyKind kind;
  double min_value;
  double max_value;
  std::string_view help;
};

// Parsed, validated key values of one spec (defaults filled in).
class ZooArgs {
 public:
  int64_t Int(std::string_view key) const;
  double Float(std::string_view key) const;

 private:
  friend Result<ZooArgs> ParseZooArgs(std::span<const ZooKey>, const std::string&, std::string_view);
  std::map<std::string, double, std::less<>> values_;
};

struct ZooModel {
  std::string_view name;
  std::string_view summary;
  std::vector<ZooKey> keys;
  Result<Graph> (*build)(const ZooArgs& args);
};

std::span<const ZooModel> ZooModels();
Result<Graph> BuildZooModel(std::string_view spec);

// Builders (zoo/mobilenet.cc, zoo/small_models.cc).
Result<Graph> BuildMobileNetV1(const ZooArgs& args);
Result<Graph> BuildMobileNetV2(const ZooArgs& args);
Result<Graph> BuildMlp(const ZooArgs& args);
Result<Graph> BuildSmallCnn(const ZooArgs& args);

}  // namespace memfold
