#include "memfold/joint/joint_graph.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "memfold/ir/verify.h"
#include "memfold/ops/registry.h"

namespace memfold {
namespace {

using Json = nlohmann::json;

constexpr char kFormat[] = "memfold-joint-graph";
constexpr int kVersion = 2;
// Larger tensors than this are refused: element counts times 8 bytes stay far from overflow.
constexpr int64_t kMaxElements = int64_t{1} << 40;

// PyTorch's dtype names; 16- and 64-bit floats are planned by their storage size.
std::optional<DType> TorchDType(const std::string& name) {
  static const std::pair<const char*, DType> kNames[] = {
      {"float32", DType::kF32}, {"int64", DType::kI64},   {"int32", DType::kI32},
      {"int16", DType::kI16},   {"int8", DType::kI8},     {"uint8", DType::kU8},
      {"bool", DType::kBool},   {"float16", DType::kI16}, {"bfloat16", DType::kI16},
      {"float64", DType::kI64},
  };
  for (const auto& [torch_name, type] : kNames) {
    if (name == torch_name) return type;
  }
  return std::nullopt;
}

std::optional<Role> ParseRole(const std::string& name) {
  static const std::pair<const char*, Role> kNames[] = {
      {"input", Role::kInput},           {"weight", Role::kWeight},     {"state", Role::kState},
      {"activation", Role::kActivation}, {"gradient", Role::kGradient},
  };
  for (const auto& [role_name, role] : kNames) {
    if (name == role_name) return role;
  }
  return std::nullopt;
}

// Values of these roles come from outside the graph: no node writes them.
bool IsFedByTheCaller(Role role) {
  return role == Role::kInput || role == Role::kWeight || role == Role::kState;
}

std::string Where(const char* list, size_t k) {
  return std::string(list) + "[" + std::to_string(k) + "]";
}

Result<Value> ParseValue(const Json& j, size_t k) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string() || !j.contains("dtype") ||
      !j["dtype"].is_string() || !j.contains("shape") || !j["shape"].is_array() ||
      !j.contains("role") || !j["role"].is_string()) {
    return Status::Error(Where("values", k) + " needs name, dtype, shape and role");
  }
  Value v;
  v.name = j["name"].get<std::string>();
  const std::optional<DType> dtype = TorchDType(j["dtype"].get<std::string>());
  if (!dtype) {
    return Status::Error(Where("values", k) + " (" + v.name + ") has dtype '" +
                         j["dtype"].get<std::string>() + "', which memfold cannot plan");
  }
  v.dtype = *dtype;
  const std::optional<Role> role = ParseRole(j["role"].get<std::string>());
  if (!role) {
    return Status::Error(Where("values", k) + " (" + v.name + ") has role '" +
                         j["role"].get<std::string>() +
                         "'; roles are input, weight, state, activation, gradient");
  }
  v.role = *role;
  int64_t elements = 1;
  for (const Json& d : j["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > kMaxElements) {
      return Status::Error(Where("values", k) + " (" + v.name +
                           ") has a dimension that is not an integer in [0, 2^40]");
    }
    v.shape.push_back(d.get<int64_t>());
    elements = v.shape.back() == 0 ? 0 : elements * v.shape.back();
    if (elements > kMaxElements) {
      return Status::Error(Where("values", k) + " (" + v.name + ") has more than 2^40 elements");
    }
  }
  return v;
}

// A list of value ids in range (-1 allowed where `absent_ok`).
Result<std::vector<ValueId>> IdList(const Json& root, const char* key, int32_t num_values,
                                    bool absent_ok) {
  std::vector<ValueId> ids;
  if (!root.contains(key)) return ids;
  if (!root[key].is_array()) return Status::Error(std::string(key) + " must be a list");
  for (const Json& id : root[key]) {
    const bool absent = absent_ok && id.is_number_integer() && id.get<int64_t>() == -1;
    if (!absent &&
        (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= num_values)) {
      return Status::Error(std::string(key) + " names a value id outside [0, " +
                           std::to_string(num_values) + ")");
    }
    ids.push_back(absent ? kNoValue : id.get<ValueId>());
  }
  return ids;
}

// Builds the graph node by node. Reads of views of parameters are resolved to the parameters
// (the views take no arena bytes, and the parameter tells Echo which recurrent step a product
// belongs to).
class Builder {
 public:
  // Precondition: the graph holds the file's values and nothing else yet.
  explicit Builder(JointGraph* joint)
      : joint_(joint),
        file_values_(joint->graph.num_values()),
        root_(static_cast<size_t>(file_values_), kNoValue),
        written_(static_cast<size_t>(file_values_), 0) {
    for (ValueId v = 0; v < file_values_; ++v) root_[static_cast<size_t>(v)] = v;
  }

  Status Add(const Json& j, size_t k) {
    if (!j.is_object() || !j.contains("target") || !j["target"].is_string() ||
        !j.contains("inputs") || !j["inputs"].is_array() || !j.contains("outputs") ||
        !j["outputs"].is_array()) {
      return Status::Error(Where("nodes", k) + " needs target, inputs and outputs");
    }
    Node node;
    node.name = j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>()
                                                            : Where("node", k);
    const bool forward = Flag(j, "forward", false);
    if (forward && seen_backward_) {
      return Status::Error(Where("nodes", k) + " (" + node.name +
                           ") is a forward node after a backward one; forward nodes come first");
    }
    seen_backward_ = seen_backward_ || !forward;
    MF_RETURN_IF_ERROR(ReadInputs(j["inputs"], node.name, &node.inputs));
    MF_RETURN_IF_ERROR(ClaimOutputs(j, Where("nodes", k) + " (" + node.name + ")", &node.outputs));
    const std::string target = j["target"].get<std::string>();
    if (Flag(j, "view", false)) {
      MF_RETURN_IF_ERROR(MakeView(target, Where("nodes", k) + " (" + node.name + ")", &node));
    } else if (Flag(j, "recompute", true)) {
      node.op = "traced_op";
      node.attrs = Attrs{{"target", target}, {"flops", Flops(j)}};
    } else {  // random draws, in-place updates: kept as they are, never recomputed
      node.op = target;
      node.attrs = Attrs{{"recompute", std::string("never")}};
      if (forward) ++joint_->kept_forward[target];
    }
    node.layer = "aten";
    if (const OpDef* def = FindOp(node.op)) MF_RETURN_IF_ERROR(CheckAndFillAttrs(*def, &node));
    for (ValueId& in : node.inputs) in = Resolved(in);
    joint_->graph.AddNode(std::move(node));
    if (forward) ++joint_->training.forward_nodes;
    return Status::Ok();
  }

 private:
  static bool Flag(const Json& j, const char* key, bool absent) {
    return j.contains(key) && j[key].is_boolean() ? j[key].get<bool>() : absent;
  }

  static double Flops(const Json& j) {
    if (!j.contains("flops") || !j["flops"].is_number()) return 0.0;
    const double flops = j["flops"].get<double>();
    return std::isfinite(flops) && flops > 0 ? flops : 0.0;
  }

  // Checks each input id and records it; every input must be fed or written before.
  Status ReadInputs(const Json& ids, const std::string& name, std::vector<ValueId>* inputs) const {
    for (const Json& id : ids) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= file_values_) {
        return Status::Error(name + ": an input names a value id outside [0, " +
                             std::to_string(file_values_) + ")");
      }
      const auto v = id.get<ValueId>();
      if (!written_[static_cast<size_t>(v)] && !IsFedByTheCaller(joint_->graph.value(v).role)) {
        return Status::Error(name + " reads " + joint_->graph.value(v).name +
                             " before any node writes it");
      }
      inputs->push_back(v);
    }
    return Status::Ok();
  }

  Status ClaimOutputs(const Json& j, const std::string& where, std::vector<ValueId>* outputs) {
    MF_ASSIGN_OR_RETURN(*outputs, IdList(j, "outputs", file_values_, false));
    for (ValueId out : *outputs) {
      const Value& value = joint_->graph.value(out);
      if (written_[static_cast<size_t>(out)] || IsFedByTheCaller(value.role)) {
        return Status::Error(where + " writes " + value.name +
                             ", an input or a value written before");
      }
      written_[static_cast<size_t>(out)] = 1;
    }
    return Status::Ok();
  }

  // A view: one output sharing the storage of input 0. A view of a parameter is the parameter.
  Status MakeView(const std::string& target, const std::string& where, Node* node) {
    if (node->inputs.empty() || node->outputs.size() != 1) {
      return Status::Error(where + " is a view: it needs an input and exactly one output");
    }
    node->inputs = {node->inputs.front()};
    node->op = "traced_view";
    node->attrs = Attrs{{"target", target}};
    Graph& g = joint_->graph;
    const ValueId base = Resolved(node->inputs[0]);
    if (g.value(base).role == Role::kWeight) {
      g.value(node->outputs[0]).role = Role::kWeight;
      root_[static_cast<size_t>(node->outputs[0])] = base;
    }
    return Status::Ok();
  }

  // The parameter a view of a parameter resolves to; other values are themselves.
  ValueId Resolved(ValueId v) const { return root_[static_cast<size_t>(v)]; }

  JointGraph* joint_;
  int32_t file_values_;
  std::vector<ValueId> root_;  // the parameter a view of a parameter resolves to
  std::vector<char> written_;
  bool seen_backward_ = false;
};

Status CheckHeader(const Json& root) {
  if (!root.is_object() || !root.contains("format") || root["format"] != kFormat) {
    return Status::Error(std::string("not a joint graph: the \"format\" key must be \"") + kFormat +
                         "\"");
  }
  if (!root.contains("version") || root["version"] != kVersion) {
    return Status::Error("joint graph version must be " + std::to_string(kVersion));
  }
  for (const char* key : {"values", "nodes", "forward_outputs"}) {
    if (!root.contains(key) || !root[key].is_array()) {
      return Status::Error(std::string("joint graph needs a list \"") + key + "\"");
    }
  }
  if (root["forward_outputs"].empty()) return Status::Error("joint graph has no forward output");
  if (root["values"].size() > static_cast<size_t>(std::numeric_limits<int32_t>::max() / 2) ||
      root["nodes"].size() > static_cast<size_t>(std::numeric_limits<int32_t>::max() / 2)) {
    return Status::Error("joint graph is too large");
  }
  return Status::Ok();
}

Status ReadOutputs(const Json& root, int32_t file_values, JointGraph* joint) {
  Graph& g = joint->graph;
  TrainingGraph& t = joint->training;
  MF_ASSIGN_OR_RETURN(t.forward_outputs, IdList(root, "forward_outputs", file_values, false));
  MF_ASSIGN_OR_RETURN(t.params, IdList(root, "params", file_values, false));
  MF_ASSIGN_OR_RETURN(t.grads, IdList(root, "grads", file_values, true));
  if (t.params.size() != t.grads.size()) {
    return Status::Error("params and grads must have the same length");
  }
  t.loss = t.forward_outputs.front();
  t.caller_holds_inputs = true;  // the framework's tensors: alive for the whole step anyway
  g.outputs = t.forward_outputs;
  for (ValueId grad : t.grads) {
    if (grad != kNoValue) g.outputs.push_back(grad);
  }
  for (ValueId v = 0; v < g.num_values(); ++v) {
    const Value& value = g.value(v);
    if (value.producer == kNoNode && !value.is_constant() && IsFedByTheCaller(value.role)) {
      g.inputs.push_back(v);
    }
  }
  return Status::Ok();
}

}  // namespace

bool IsJointGraphText(std::string_view text) {
  return text.find(std::string("\"") + kFormat + "\"") != std::string_view::npos;
}

Result<JointGraph> ReadJointGraph(std::string_view json_text) {
  const Json root = Json::parse(json_text.begin(), json_text.end(), nullptr, false);
  if (root.is_discarded()) return Status::Error("joint graph is not valid JSON");
  MF_RETURN_IF_ERROR(CheckHeader(root));
  JointGraph joint;
  joint.graph.name = root.contains("name") && root["name"].is_string()
                         ? root["name"].get<std::string>()
                         : std::string("joint graph");
  for (size_t k = 0; k < root["values"].size(); ++k) {
    MF_ASSIGN_OR_RETURN(Value v, ParseValue(root["values"][k], k));
    joint.graph.AddValue(std::move(v));
  }
  const int32_t file_values = joint.graph.num_values();
  Builder builder(&joint);
  for (size_t k = 0; k < root["nodes"].size(); ++k) {
    MF_RETURN_IF_ERROR(builder.Add(root["nodes"][k], k));
  }
  MF_RETURN_IF_ERROR(ReadOutputs(root, file_values, &joint));
  for (ValueId v = 0; v < file_values; ++v) {
    const Value& value = joint.graph.value(v);
    if (value.producer == kNoNode && !joint.graph.value(v).is_constant() &&
        (value.role == Role::kActivation || value.role == Role::kGradient)) {
      return Status::Error("value " + value.name + " is an " + std::string(RoleName(value.role)) +
                           " that no node writes");
    }
  }
  MF_RETURN_IF_ERROR(VerifyGraph(joint.graph));
  return joint;
}

Result<PlannedTraining> PlanJointGraph(JointGraph joint, const std::string& strategy,
                                       const std::string& planner) {
  return PlanTrainingStep(std::move(joint.graph), joint.training, strategy, planner);
}

}  // namespace memfold
