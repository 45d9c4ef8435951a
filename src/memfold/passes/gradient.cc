#include "memfold/passes/gradient.h"

#include <cstring>
#include <memory>

#include "memfold/ops/gradient.h"
#include "memfold/ops/registry.h"
#include "memfold/passes/dead_nodes.h"
#include "memfold/passes/update_schedule.h"

namespace memfold {
namespace {

ValueId AddConstant(Graph* g, const std::string& name, Shape shape, Role role, float fill) {
  Value v;
  v.name = name;
  v.shape = std::move(shape);
  v.role = role;
  auto data = std::make_shared<Bytes>(static_cast<size_t>(NumElements(v.shape)) * 4);
  for (size_t k = 0; k < data->size() / 4; ++k) std::memcpy(data->data() + 4 * k, &fill, 4);
  v.data = std::move(data);
  return g->AddValue(std::move(v));
}

// Optimizer state carries no contents in the graph: the runtime starts it at zero (as it does
// every state tensor), so planning never touches the gigabytes a large model's state needs.
ValueId AddOptimizerState(Graph* g, const std::string& name, Shape shape) {
  Value v;
  v.name = name;
  v.shape = std::move(shape);
  v.role = Role::kOptimizerState;
  return g->AddValue(std::move(v));
}

// Values that depend on a trainable parameter (and the parameters themselves).
std::vector<char> RequiresGrad(const Graph& g, const std::vector<ValueId>& params) {
  std::vector<char> needs_grad(static_cast<size_t>(g.num_values()), 0);
  for (ValueId p : params) needs_grad[static_cast<size_t>(p)] = 1;
  for (NodeId id : g.schedule) {
    const Node& n = g.node(id);
    bool any = false;
    for (ValueId in : n.inputs)
      any = any || (in != kNoValue && needs_grad[static_cast<size_t>(in)]);
    for (ValueId out : n.outputs) needs_grad[static_cast<size_t>(out)] = any;
  }
  return needs_grad;
}

std::vector<ValueId> TrainableParams(const Graph& g) {
  std::vector<char> read(static_cast<size_t>(g.num_values()), 0);
  for (NodeId id : g.schedule) {
    for (ValueId in : g.node(id).inputs) {
      if (in != kNoValue) read[static_cast<size_t>(in)] = 1;
    }
  }
  std::vector<ValueId> params;
  for (ValueId v = 0; v < g.num_values(); ++v) {
    const Value& value = g.value(v);
    if (value.role == Role::kWeight && value.dtype == DType::kF32 && read[static_cast<size_t>(v)] &&
        !value.shape.empty()) {
      params.push_back(v);
    }
  }
  return params;
}

Status AppendBackward(Graph* g, ValueId loss, const std::vector<char>& needs_grad,
                      std::vector<ValueId>* grad) {
  (*grad)[static_cast<size_t>(loss)] = AddConstant(g, "loss/grad_seed", {}, Role::kWeight, 1.0f);
  const std::vector<NodeId> forward = g->schedule;
  for (size_t pos = forward.size(); pos-- > 0;) {
    const Node node = g->node(forward[pos]);  // a copy: emitting nodes may move the node table
    std::vector<ValueId> dy;
    bool any_dy = false, any_input = false;
    for (ValueId out : node.outputs) {
      dy.push_back((*grad)[static_cast<size_t>(out)]);
      any_dy = any_dy || dy.back() != kNoValue;
    }
    for (ValueId in : node.inputs)
      any_input = any_input || (in != kNoValue && needs_grad[static_cast<size_t>(in)]);
    if (!any_dy || !any_input) continue;
    const OpDef* def = OpOf(node);
    if (def == nullptr || def->gradient == nullptr) {
      return Status::Error(
          "node '" + node.name + "' (" + node.op +
          ") has no gradient; training needs one for every op between the weights and the loss");
    }
    GradEmitter emit(g, node);
    std::vector<ValueId> dx;
    MF_RETURN_IF_ERROR(def->gradient(emit, node, dy, &dx));
    for (size_t k = 0; k < node.inputs.size() && k < dx.size(); ++k) {
      const ValueId in = node.inputs[k];
      if (in == kNoValue || dx[k] == kNoValue || !needs_grad[static_cast<size_t>(in)]) continue;
      ValueId& sum = (*grad)[static_cast<size_t>(in)];
      sum = sum == kNoValue ? dx[k] : emit.Op("add", {sum, dx[k]});  // fan-out: gradients add up
    }
    MF_RETURN_IF_ERROR(emit.status());
  }
  return Status::Ok();
}

Status AppendUpdates(Graph* g, const TrainingConfig& config, TrainingGraph* t) {
  for (size_t k = 0; k < t->params.size(); ++k) {
    const ValueId p = t->params[k], dp = t->grads[k];
    const Value param = g->value(p);
    std::vector<ValueId> inputs = {p, dp};
    Attrs attrs;
    attrs.Set("lr", config.learning_rate);
    const int states = config.optimizer == "adam" ? 2 : 1;
    for (int s = 0; s < states; ++s) {
      inputs.push_back(AddOptimizerState(g, param.name + (s == 0 ? "/m" : "/v"), param.shape));
    }
    Result<std::vector<ValueId>> out =
        AddOp(g, config.optimizer, inputs, attrs, param.name + "/update");
    if (!out.ok()) return out.status();
    g->node(g->num_nodes() - 1).layer = "optimizer";
    for (size_t o = 0; o < out->size(); ++o)
      g->value((*out)[o]).role = g->value(inputs[o == 0 ? 0 : o + 1]).role;
  }
  return Status::Ok();
}

// A training step's float convolutions and fully connected layers run as BLAS products (ops
// conv2d_gemm and fully_connected_gemm: same shapes, attributes, gradients and memory), and its
// tanh and sigmoid as vectorised kernels (tanh_train, sigmoid_train), as training frameworks
// run them; inference graphs keep TFLM's reference arithmetic.
void LowerForTraining(Graph* g) {
  static const std::pair<std::string_view, std::string_view> kLowered[] = {
      {"conv2d", "conv2d_gemm"},
      {"fully_connected", "fully_connected_gemm"},
      {"tanh", "tanh_train"},
      {"sigmoid", "sigmoid_train"}};
  for (NodeId id : g->schedule) {
    Node& node = g->node(id);
    if (g->value(node.inputs[0]).dtype != DType::kF32) continue;
    for (const auto& [op, blas] : kLowered) {
      if (node.op != op) continue;
      node.op = std::string(blas);
      node.op_row = -1;  // OpOf finds the new row by name
    }
  }
}

}  // namespace

Result<TrainingGraph> BuildTrainingGraph(Graph* g, const TrainingConfig& config) {
  if (config.optimizer != "sgd_momentum" && config.optimizer != "adam") {
    return Status::Error("optimizer must be sgd_momentum or adam, not '" + config.optimizer + "'");
  }
  if (g->outputs.empty() || g->value(g->outputs[0]).elements() != 1 ||
      g->value(g->outputs[0]).dtype != DType::kF32) {
    return Status::Error("training needs a graph whose first output is a float32 scalar loss");
  }
  TrainingGraph t;
  t.loss = g->outputs[0];
  t.forward_nodes = g->schedule.size();
  t.params = TrainableParams(*g);
  // The backward pass emits about three nodes and values per forward one.
  g->Reserve(4 * g->num_values(), 4 * g->num_nodes());
  std::vector<ValueId> grad(static_cast<size_t>(g->num_values()), kNoValue);
  MF_RETURN_IF_ERROR(AppendBackward(g, t.loss, RequiresGrad(*g, t.params), &grad));
  std::vector<ValueId> used;
  for (ValueId p : t.params) {
    if (grad[static_cast<size_t>(p)] == kNoValue) continue;  // the loss does not depend on it
    used.push_back(p);
    t.grads.push_back(grad[static_cast<size_t>(p)]);
  }
  t.params = used;
  MF_RETURN_IF_ERROR(AppendUpdates(g, config, &t));
  LowerForTraining(g);
  EliminateDeadNodes(g);
  ScheduleUpdatesEarly(g);
  return t;
}

}  // namespace memfold
