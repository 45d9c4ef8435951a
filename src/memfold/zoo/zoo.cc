#include "memfold/zoo/zoo.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace memfold {
namespace {

constexpr ZooKey kBatch{"batch", "1", KeyKind::kInt, 1, 4096, "batch size"};

const std::vector<ZooModel>& Models() {
  static const std::vector<ZooModel> models = {
      {"mobilenet_v1", "MobileNet v1 (Howard et al. 2017), laid out like TFLite's hosted float model",
       {kBatch,
        {"alpha", "1.0", KeyKind::kFloat, 0.05, 4.0, "width multiplier"},
        {"res", "224", KeyKind::kInt, 32, 1024, "input resolution"}},
       BuildMobileNetV1},
      {"mobilenet_v2", "MobileNet v2 (Sandler et al. 2018), laid out like TFLite's hosted float model",
       {kBatch,
        {"alpha", "1.0", KeyKind::kFloat, 0.05, 4.0, "width multiplier"},
        {"res", "224", KeyKind::kInt, 32, 1024, "input resolution"}},
       BuildMobileNetV2},
      {"mlp", "a small multi-layer perceptron: fully-connected + relu layers, softmax",
       {kBatch,
        {"in", "64", KeyKind::kInt, 1, 1 << 20, "input features"},
        {"hidden", "128", KeyKind::kInt, 1, 1 << 16, "hidden units"},
        {"layers", "3", KeyKind::kInt, 1, 1000, "hidden layers"},
        {"classes", "10", KeyKind::kInt, 1, 1 << 16, "output classes"}},
       BuildMlp},
      {"cnn", "a small CNN with a two-branch concat block, pooling and a classifier",
       {kBatch,
        {"res", "32", KeyKind::kInt, 8, 1024, "input resolution"},
        {"channels", "16", KeyKind::kInt, 1, 4096, "channels of the first convolution"},
        {"classes", "10", KeyKind::kInt, 1, 1 << 16, "output classes"}},
       BuildSmallCnn},
  };
  return models;
}

std::string KeyList(std::span<const ZooKey> keys) {
  std::string list;
  for (const ZooKey& key : keys) list += (list.empty() ? "" : ", ") + std::string(key.name);
  return list;
}

Result<double> ParseNumber(const ZooKey& key, std::string_view text, const std::string& model) {
  const std::string s(text);
  char* end = nullptr;
  const double value = std::strtod(s.c_str(), &end);
  const bool integral = key.kind != KeyKind::kInt || value == std::floor(value);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(value) || !integral ||
      value < key.min_value || value > key.max_value) {
    std::ostringstream msg;
    msg << "zoo:" << model << ": " << key.name << "=" << text << " is not "
        << (key.kind == KeyKind::kInt ? "an integer" : "a number") << " in [" << key.min_value
        << ", " << key.max_value << "] (" << key.help << ")";
    return Status::Error(msg.str());
  }
  return value;
}

}  // namespace

int64_t ZooArgs::Int(std::string_view key) const {
  return static_cast<int64_t>(values_.find(key)->second);
}
double ZooArgs::Float(std::string_view key) const { return values_.find(key)->second; }

Result<ZooArgs> ParseZooArgs(std::span<const ZooKey> keys, const std::string& model,
                             std::string_view assignments) {
  ZooArgs args;
  for (const ZooKey& key : keys) {
    MF_ASSIGN_OR_RETURN(args.values_[std::string(key.name)], ParseNumber(key, key.default_value, model));
  }
  while (!assignments.empty()) {
    const size_t comma = assignments.find(',');
    const std::string_view item = assignments.substr(0, comma);
    assignments = comma == std::string_view::npos ? "" : assignments.substr(comma + 1);
    const size_t eq = item.find('=');
    const std::string_view name = item.substr(0, eq);
    const ZooKey* key = nullptr;
    for (const ZooKey& k : keys) key = k.name == name ? &k : key;
    if (eq == std::string_view::npos || key == nullptr) {
      return Status::Error("zoo:" + model + ": unknown key '" + std::string(item) +
                           "'; keys are " + KeyList(keys) + " (see `memfold zoo`)");
    }
    MF_ASSIGN_OR_RETURN(args.values_[std::string(name)], ParseNumber(*key, item.substr(eq + 1), model));
  }
  return args;
}

std::span<const ZooModel> ZooModels() { return Models(); }

Result<Graph> BuildZooModel(std::string_view spec) {
  const size_t comma = spec.find(',');
  const std::string name(spec.substr(0, comma));
  for (const ZooModel& model : Models()) {
    if (model.name != name) continue;
    MF_ASSIGN_OR_RETURN(ZooArgs args, ParseZooArgs(model.keys, name, comma == std::string_view::npos ? "" : spec.substr(comma + 1)));
    Result<Graph> graph = model.build(args);
    if (!graph.ok()) return Status::Error("zoo:" + name + ": " + graph.status().message());
    return graph;
  }
  std::string names;
  for (const ZooModel& model : Models()) names += (names.empty() ? "" : ", ") + std::string(model.name);
  return Status::Error("unknown zoo model '" + name + "'; choose one of " + names + " (see `memfold zoo`)");
}

}  // namespace memfold
