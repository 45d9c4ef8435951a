#include "memfold/zoo/zoo.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "memfold/passes/dead_nodes.h"
#include "memfold/passes/quantize.h"

namespace memfold {
namespace {

constexpr ZooKey kBatch{"batch", "1", KeyKind::kInt, 1, 4096, "batch size"};
constexpr ZooKey kDType{"dtype",
                        "f32",
                        KeyKind::kChoice,
                        0,
                        0,
                        "f32: the float model; i8: its full-integer post-training quantisation "
                        "(int8 activations and weights, int32 biases, as TFLite's converter makes)",
                        "f32,i8"};

constexpr ZooKey kHead{
    "head",
    "auto",
    KeyKind::kChoice,
    0,
    0,
    "what the model ends with: softmax probabilities, or the logits before "
    "them; auto: softmax for f32, logits for i8 (an int8 softmax over 1,000 "
    "near-equal logits of random weights is -128 everywhere, whatever the input)",
    "auto,softmax,logits"};

// Ends the graph at the input of its final softmax: the logits become the output.
Status EndAtLogits(Graph* graph) {
  const NodeId last =
      graph->outputs.size() == 1 ? graph->value(graph->outputs[0]).producer : kNoNode;
  if (last == kNoNode || graph->node(last).op != "softmax") {
    return Status::Error("zoo: head=logits needs a model that ends in one softmax");
  }
  const ValueId logits = graph->node(last).inputs[0];
  graph->outputs = {logits};
  graph->value(logits).role = Role::kOutput;
  EliminateDeadNodes(graph);
  return Status::Ok();
}

// An inference model with the dtype and head keys: the float model, ending at its logits when
// the head asks for them, quantised when dtype=i8 (calibrated on what it outputs, so int8
// logits span their range).
template <Result<Graph> (*Build)(const ZooArgs&)>
Result<Graph> WithDType(const ZooArgs& args) {
  MF_ASSIGN_OR_RETURN(Graph graph, Build(args));
  const bool int8 = args.Choice("dtype") == "i8";
  const std::string& head = args.Choice("head");
  if (head == "logits" || (head == "auto" && int8)) MF_RETURN_IF_ERROR(EndAtLogits(&graph));
  if (int8) return QuantizePostTraining(graph);
  return graph;
}

constexpr ZooKey kSize{
    "size",
    "full",
    KeyKind::kChoice,
    0,
    0,
    "full: the paper's shapes; tiny: the same architecture small enough to train "
    "in well under a second (keys given explicitly still apply)",
    "full,tiny"};

const std::vector<ZooModel>& Models() {
  static const std::vector<ZooModel> models = {
      {"mobilenet_v1",
       "MobileNet v1 (Howard et al. 2017), laid out like TFLite's hosted float model",
       {kBatch,
        {"alpha", "1.0", KeyKind::kFloat, 0.05, 4.0, "width multiplier"},
        {"res", "224", KeyKind::kInt, 32, 1024, "input resolution"},
        kDType,
        kHead},
       WithDType<BuildMobileNetV1>},
      {"mobilenet_v2",
       "MobileNet v2 (Sandler et al. 2018), laid out like TFLite's hosted float model",
       {kBatch,
        {"alpha", "1.0", KeyKind::kFloat, 0.05, 4.0, "width multiplier"},
        {"res", "224", KeyKind::kInt, 32, 1024, "input resolution"},
        kDType,
        kHead,
        {"pads", "same", KeyKind::kChoice, 0, 0,
         "same: TFLite's SAME padding; explicit: PyTorch's layout as converters emit it, a PAD "
         "op (one pixel each side) before every stride-2 window, which is then VALID",
         "same,explicit"}},
       WithDType<BuildMobileNetV2>},
      {"msf_mobilenet_v2",
       "MobileNet v2 as msf-CNN models and deploys it (its MBV2 points are for this network): "
       "channels int(c*alpha), an expansion convolution in the first block, no residual adds, "
       "int(1280*alpha) head channels",
       {kBatch,
        {"alpha", "0.35", KeyKind::kFloat, 0.05, 4.0, "width multiplier"},
        {"res", "144", KeyKind::kInt, 32, 1024, "input resolution"},
        kDType,
        kHead},
       WithDType<BuildMsfMobileNetV2>},
      {"mlp",
       "a small multi-layer perceptron: fully-connected + relu layers, softmax",
       {kBatch,
        {"in", "64", KeyKind::kInt, 1, 1 << 20, "input features"},
        {"hidden", "128", KeyKind::kInt, 1, 1 << 16, "hidden units"},
        {"layers", "3", KeyKind::kInt, 1, 1000, "hidden layers"},
        {"classes", "10", KeyKind::kInt, 1, 1 << 16, "output classes"},
        kDType,
        kHead},
       WithDType<BuildMlp>},
      {"cnn",
       "a small CNN with a two-branch concat block, pooling and a classifier",
       {kBatch,
        {"res", "32", KeyKind::kInt, 8, 1024, "input resolution"},
        {"channels", "16", KeyKind::kInt, 1, 4096, "channels of the first convolution"},
        {"classes", "10", KeyKind::kInt, 1, 1 << 16, "output classes"},
        kDType,
        kHead},
       WithDType<BuildSmallCnn>},
      {"squeezenet",
       "SqueezeNet 1.1 (Iandola et al. 2016; torchvision squeezenet1_1)",
       {kBatch, {"res", "224", KeyKind::kInt, 32, 1024, "input resolution"}, kDType, kHead},
       WithDType<BuildSqueezeNet>},
      {"densenet121",
       "DenseNet-121 (Huang et al. 2017; torchvision densenet121), norms as mul+add",
       {kBatch, {"res", "224", KeyKind::kInt, 32, 1024, "input resolution"}, kDType, kHead},
       WithDType<BuildDenseNet121>},
      {"inception_v3",
       "Inception v3 (Szegedy et al. 2016; Keras InceptionV3, no auxiliary head)",
       {kBatch, {"res", "299", KeyKind::kInt, 75, 1024, "input resolution"}, kDType, kHead},
       WithDType<BuildInceptionV3>},
      {"nmt",
       "Sockeye LSTM encoder-decoder with MLP attention, unrolled in time (IWSLT15 En-Vi); "
       "training loss",
       {kSize,
        {"batch", "128", KeyKind::kInt, 1, 4096, "batch size (sentences)"},
        {"seq", "100", KeyKind::kInt, 1, 1000,
         "source and target length (Sockeye's --max-seq-len bucket)"},
        {"hidden", "512", KeyKind::kInt, 2, 1 << 14,
         "LSTM units = embedding size = attention units (even)"},
        {"layers", "2", KeyKind::kInt, 1, 64,
         "encoder layers (the first bidirectional) and decoder layers"},
        {"vocab", "17191", KeyKind::kInt, 1, 1 << 20, "source vocabulary"},
        {"tvocab", "7709", KeyKind::kInt, 1, 1 << 20, "target vocabulary"},
        {"dropout", "0.2", KeyKind::kFloat, 0, 0.95, "dropout rate"}},
       BuildNmt},
      {"transformer",
       "Transformer base (Vaswani et al. 2017), shared vocabulary and tied embeddings; training "
       "loss",
       {kSize,
        {"batch", "64", KeyKind::kInt, 1, 4096, "batch size (sentences)"},
        {"seq", "50", KeyKind::kInt, 1, 4096, "source and target length"},
        {"layers", "6", KeyKind::kInt, 1, 256, "encoder layers and decoder layers"},
        {"hidden", "512", KeyKind::kInt, 1, 1 << 14, "d_model"},
        {"heads", "8", KeyKind::kInt, 1, 256, "attention heads (divide hidden)"},
        {"ffn", "2048", KeyKind::kInt, 1, 1 << 16, "feed-forward units"},
        {"vocab", "32000", KeyKind::kInt, 1, 1 << 20, "shared vocabulary"},
        {"dropout", "0.1", KeyKind::kFloat, 0, 0.95, "dropout rate"}},
       BuildTransformer},
      {"resnet",
       "ResNet (He et al. 2016) for ImageNet with batch norm; training loss",
       {kSize,
        {"depth", "50", KeyKind::kInt, 1, 1000, "18, 34, 50, 101, 152 or 200"},
        {"batch", "32", KeyKind::kInt, 1, 4096, "batch size"},
        {"res", "224", KeyKind::kInt, 8, 1024, "input resolution"},
        {"classes", "1000", KeyKind::kInt, 1, 1 << 20, "output classes"},
        {"width", "64", KeyKind::kInt, 1, 4096, "channels of the first stage"}},
       BuildResNet},
      {"deepspeech2",
       "DeepSpeech2: 2 conv + bidirectional LSTM layers, frame-wise cross entropy (no CTC); "
       "training loss",
       {kSize,
        {"batch", "32", KeyKind::kInt, 1, 4096, "batch size (utterances)"},
        {"seq", "300", KeyKind::kInt, 1, 100000, "spectrogram frames (10 ms each)"},
        {"hidden", "800", KeyKind::kInt, 1, 1 << 14, "LSTM units per direction"},
        {"layers", "5", KeyKind::kInt, 1, 64, "bidirectional LSTM layers"},
        {"freq", "161", KeyKind::kInt, 1, 4096, "frequency bins"},
        {"channels", "32", KeyKind::kInt, 1, 4096, "filters of each convolution"}},
       BuildDeepSpeech2},
  };
  return models;
}

std::string KeyList(std::span<const ZooKey> keys) {
  std::string list;
  for (const ZooKey& key : keys) list += (list.empty() ? "" : ", ") + std::string(key.name);
  return list;
}

// A key's bound for messages: integers in full ("1048576"), others as %g.
std::string NumberText(double value) {
  char text[40];
  if (value == std::floor(value) && std::fabs(value) < 1e18) {
    std::snprintf(text, sizeof(text), "%lld", static_cast<long long>(value));
  } else {
    std::snprintf(text, sizeof(text), "%g", value);
  }
  return text;
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
        << (key.kind == KeyKind::kInt ? "an integer" : "a number") << " in ["
        << NumberText(key.min_value) << ", " << NumberText(key.max_value) << "] (" << key.help
        << ")";
    return Status::Error(msg.str());
  }
  return value;
}

// A kChoice key's value: the index of `text` among the key's comma-separated choices.
Result<double> ParseChoice(const ZooKey& key, std::string_view text, const std::string& model) {
  std::string_view rest = key.choices;
  std::string listed;
  for (double index = 0; !rest.empty(); ++index) {
    const size_t comma = rest.find(',');
    const std::string_view word = rest.substr(0, comma);
    if (word == text) return index;
    listed += (listed.empty() ? "" : ", ") + std::string(word);
    rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
  }
  return Status::Error("zoo:" + model + ": " + std::string(key.name) + "=" + std::string(text) +
                       " is not one of " + listed + " (" + std::string(key.help) + ")");
}

}  // namespace

int64_t ZooArgs::Int(std::string_view key) const {
  return static_cast<int64_t>(values_.find(key)->second);
}
double ZooArgs::Float(std::string_view key) const { return values_.find(key)->second; }
const std::string& ZooArgs::Choice(std::string_view key) const {
  return choices_.find(key)->second;
}

Result<ZooArgs> ParseZooArgs(std::span<const ZooKey> keys, const std::string& model,
                             std::string_view assignments) {
  ZooArgs args;
  auto set = [&](const ZooKey& key, std::string_view text) -> Status {
    const bool choice = key.kind == KeyKind::kChoice;
    MF_ASSIGN_OR_RETURN(args.values_[std::string(key.name)],
                        choice ? ParseChoice(key, text, model) : ParseNumber(key, text, model));
    if (choice) args.choices_[std::string(key.name)] = std::string(text);
    return Status::Ok();
  };
  for (const ZooKey& key : keys) MF_RETURN_IF_ERROR(set(key, key.default_value));
  while (!assignments.empty()) {
    const size_t comma = assignments.find(',');
    const std::string_view item = assignments.substr(0, comma);
    assignments = comma == std::string_view::npos ? "" : assignments.substr(comma + 1);
    const size_t eq = item.find('=');
    const std::string_view name = item.substr(0, eq);
    const ZooKey* key = nullptr;
    for (const ZooKey& k : keys) key = k.name == name ? &k : key;
    if (eq == std::string_view::npos || key == nullptr) {
      return Status::Error("zoo:" + model + ": unknown key '" + std::string(item) + "'; keys are " +
                           KeyList(keys) + " (see `memfold zoo`)");
    }
    MF_RETURN_IF_ERROR(set(*key, item.substr(eq + 1)));
    args.given_.insert(std::string(name));
  }
  return args;
}

std::span<const ZooModel> ZooModels() { return Models(); }

Result<Graph> BuildZooModel(std::string_view spec) {
  const size_t comma = spec.find(',');
  const std::string name(spec.substr(0, comma));
  for (const ZooModel& model : Models()) {
    if (model.name != name) continue;
    MF_ASSIGN_OR_RETURN(
        ZooArgs args, ParseZooArgs(model.keys, name,
                                   comma == std::string_view::npos ? "" : spec.substr(comma + 1)));
    Result<Graph> graph = model.build(args);
    if (!graph.ok()) return Status::Error("zoo:" + name + ": " + graph.status().message());
    return graph;
  }
  std::string names;
  for (const ZooModel& model : Models())
    names += (names.empty() ? "" : ", ") + std::string(model.name);
  return Status::Error("unknown zoo model '" + name + "'; choose one of " + names +
                       " (see `memfold zoo`)");
}

}  // namespace memfold
