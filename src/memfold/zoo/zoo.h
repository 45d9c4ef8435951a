// The model zoo: reference networks built in C++ with the layer shapes the papers used.
//
// A model is named by a spec "NAME[,key=value...]" (the CLI's "zoo:" prefix removed). Every
// model declares its keys with defaults; an unknown model or key, or a value of the wrong kind
// or out of range (or, for a choice key, not one of its choices), is an error that lists what
// is accepted. Building is O(model size).
#pragma once

#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"

namespace memfold {

// kChoice: a word from a fixed list (e.g. size=full|tiny); min_value and max_value are unused.
enum class KeyKind { kInt, kFloat, kChoice };

struct ZooKey {
  std::string_view name;
  std::string_view default_value;
  KeyKind kind;
  double min_value;
  double max_value;
  std::string_view help;
  std::string_view choices = {};  // kChoice only: the accepted words, comma-separated
};

// Parsed, validated key values of one spec (defaults filled in).
class ZooArgs {
 public:
  int64_t Int(std::string_view key) const;
  double Float(std::string_view key) const;
  const std::string& Choice(std::string_view key) const;  // a kChoice key's word
  // Whether the spec set the key (rather than leaving its default), so that a preset such as
  // size=tiny can supply its own value for keys the spec leaves alone.
  bool Given(std::string_view key) const { return given_.contains(key); }

 private:
  friend Result<ZooArgs> ParseZooArgs(std::span<const ZooKey>, const std::string&,
                                      std::string_view);
  std::map<std::string, double, std::less<>> values_;
  std::map<std::string, std::string, std::less<>> choices_;
  std::set<std::string, std::less<>> given_;
};

struct ZooModel {
  std::string_view name;
  std::string_view summary;
  std::vector<ZooKey> keys;
  Result<Graph> (*build)(const ZooArgs& args);
};

std::span<const ZooModel> ZooModels();
Result<Graph> BuildZooModel(std::string_view spec);

// Inference builders (zoo/mobilenet.cc, zoo/small_models.cc, zoo/branched_models.cc): float32
// graphs; the registry's dtype=i8 key quantises them (passes/quantize.h).
Result<Graph> BuildMobileNetV1(const ZooArgs& args);
Result<Graph> BuildMobileNetV2(const ZooArgs& args);
Result<Graph> BuildMsfMobileNetV2(const ZooArgs& args);
Result<Graph> BuildMlp(const ZooArgs& args);
Result<Graph> BuildSmallCnn(const ZooArgs& args);
Result<Graph> BuildSqueezeNet(const ZooArgs& args);
Result<Graph> BuildDenseNet121(const ZooArgs& args);
Result<Graph> BuildInceptionV3(const ZooArgs& args);

// Training models (zoo/training_models.cc): forward graphs whose first output is the float32
// scalar loss, every node tagged with its layer type; the gradient pass adds the backward.
Result<Graph> BuildNmt(const ZooArgs& args);
Result<Graph> BuildTransformer(const ZooArgs& args);
Result<Graph> BuildResNet(const ZooArgs& args);
Result<Graph> BuildDeepSpeech2(const ZooArgs& args);

}  // namespace memfold
