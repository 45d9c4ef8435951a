#include "memfold/ops/registry.h"

#include <algorithm>

#include "memfold/ops/cost.h"
#include "memfold/ops/op_table.h"

namespace memfold {
namespace {

const std::vector<OpDef>& Table() {
  static const std::vector<OpDef> table = [] {
    std::vector<OpDef> rows = BuildOpTable();
    std::sort(rows.begin(), rows.end(),
              [](const OpDef& a, const OpDef& b) { return a.name < b.name; });
    return rows;
  }();
  return table;
}

std::string NodeLabel(const Node& node) { return "node '" + node.name + "' (" + node.op + ")"; }

// A traced operator's outputs keep the types the framework recorded.
std::vector<TensorType> TracedTypes(const Graph& graph, const Node& node) {
  std::vector<TensorType> types;
  for (ValueId out : node.outputs)
    types.push_back({graph.value(out).dtype, graph.value(out).shape});
  return types;
}

bool SameAlternative(const AttrValue& a, const AttrValue& b) { return a.index() == b.index(); }

}  // namespace

const KernelEntry* OpDef::FindKernelEntry(DType dtype) const {
  for (const KernelEntry& entry : kernels) {
    if (entry.dtype == dtype) return &entry;
  }
  return nullptr;
}

KernelFn OpDef::FindKernel(DType dtype) const {
  const KernelEntry* entry = FindKernelEntry(dtype);
  return entry ? entry->run : nullptr;
}

std::span<const OpDef> AllOps() { return Table(); }

const OpDef* FindOp(std::string_view name) {
  const auto& table = Table();
  auto it = std::lower_bound(table.begin(), table.end(), name,
                             [](const OpDef& def, std::string_view key) { return def.name < key; });
  if (it == table.end() || it->name != name) return nullptr;
  return &*it;
}

const OpDef* OpOf(const Node& node) {
  const auto& table = Table();
  if (node.op_row >= 0 && static_cast<size_t>(node.op_row) < table.size() &&
      table[static_cast<size_t>(node.op_row)].name == node.op) {
    return &table[static_cast<size_t>(node.op_row)];
  }
  return FindOp(node.op);
}

const OpDef& RulesOf(const Node& node) {
  static const OpDef kUnknown{.name = ""};
  const OpDef* def = OpOf(node);
  return def != nullptr ? *def : kUnknown;
}

Status CheckAndFillAttrs(const OpDef& def, Node* node) {
  node->op_row = static_cast<int32_t>(&def - Table().data());
  const int arity = static_cast<int>(node->inputs.size());
  if (arity < def.min_inputs || arity > def.max_inputs) {
    return Status::Error(
        NodeLabel(*node) + " has " + std::to_string(arity) + " inputs; the op takes " +
        std::to_string(def.min_inputs) +
        (def.max_inputs == kVariadic ? " or more" : " to " + std::to_string(def.max_inputs)));
  }
  for (const auto& [name, value] : node->attrs.items()) {
    auto spec = std::find_if(def.attrs.begin(), def.attrs.end(),
                             [&attr = name](const AttrSpec& s) { return s.name == attr; });
    if (spec == def.attrs.end()) {
      return Status::Error(NodeLabel(*node) + " has unknown attribute '" + name + "'");
    }
    if (!SameAlternative(spec->default_value, value)) {
      return Status::Error(NodeLabel(*node) + " attribute '" + name + "' has the wrong type");
    }
  }
  for (const AttrSpec& spec : def.attrs) {
    if (node->attrs.Has(spec.name)) continue;
    if (spec.required) {
      return Status::Error(NodeLabel(*node) + " needs attribute '" + std::string(spec.name) + "'");
    }
    node->attrs.Set(std::string(spec.name), spec.default_value);
  }
  return Status::Ok();
}

Result<std::vector<TensorType>> InferNode(const Graph& graph, const Node& node) {
  const OpDef* def = OpOf(node);
  if (def == nullptr) return Status::Error(NodeLabel(node) + ": unknown op");
  if (def->traced) return TracedTypes(graph, node);
  InferContext ctx{node, {}};
  for (ValueId in : node.inputs) ctx.inputs.push_back(in == kNoValue ? nullptr : &graph.value(in));
  auto too_many_dimensions = [&](const Shape& shape) {
    return Status::Error(NodeLabel(node) + " has a tensor of rank " + std::to_string(shape.size()) +
                         "; memfold's kernels take at most " + std::to_string(kMaxRank));
  };
  for (const Value* in : ctx.inputs) {
    if (in != nullptr && in->shape.size() > kMaxRank) return too_many_dimensions(in->shape);
  }
  for (int k = 0; k < std::min<int>(def->min_inputs, static_cast<int>(ctx.inputs.size())); ++k) {
    if (ctx.inputs[static_cast<size_t>(k)] == nullptr) {
      return Status::Error(NodeLabel(node) + " is missing required input " + std::to_string(k));
    }
  }
  std::vector<TensorType> outputs;
  Status status = def->infer(ctx, &outputs);
  if (!status.ok()) return Status::Error(NodeLabel(node) + ": " + status.message());
  for (const TensorType& type : outputs) {
    if (type.shape.size() > kMaxRank) return too_many_dimensions(type.shape);
    for (int64_t dim : type.shape) {
      if (dim < 0) return Status::Error(NodeLabel(node) + " would produce a negative dimension");
    }
  }
  return outputs;
}

Result<std::vector<ValueId>> AddOp(Graph* graph, std::string_view op, std::vector<ValueId> inputs,
                                   Attrs attrs, std::string name) {
  const OpDef* def = FindOp(op);
  if (def == nullptr) return Status::Error("unknown op '" + std::string(op) + "'");
  Node node;
  node.op = std::string(op);
  node.name = name.empty() ? node.op + "_" + std::to_string(graph->num_nodes()) : std::move(name);
  node.inputs = std::move(inputs);
  node.attrs = std::move(attrs);
  MF_RETURN_IF_ERROR(CheckAndFillAttrs(*def, &node));
  MF_ASSIGN_OR_RETURN(std::vector<TensorType> types, InferNode(*graph, node));
  std::vector<ValueId> outputs;
  for (size_t k = 0; k < types.size(); ++k) {
    Value value;
    value.name = types.size() == 1 ? node.name : node.name + ":" + std::to_string(k);
    value.dtype = types[k].dtype;
    value.shape = types[k].shape;
    outputs.push_back(graph->AddValue(std::move(value)));
  }
  node.outputs = outputs;
  graph->AddNode(std::move(node));
  return outputs;
}

Status CheckShapes(const Graph& graph) {
  for (NodeId id : graph.schedule) {
    const Node& node = graph.node(id);
    if (OpOf(node) == nullptr) continue;  // opaque imported op: the file's shapes stand
    MF_ASSIGN_OR_RETURN(std::vector<TensorType> types, InferNode(graph, node));
    if (types.size() != node.outputs.size()) {
      return Status::Error(NodeLabel(node) + " has " + std::to_string(node.outputs.size()) +
                           " outputs; the op produces " + std::to_string(types.size()));
    }
    for (size_t k = 0; k < types.size(); ++k) {
      const Value& out = graph.value(node.outputs[k]);
      if (out.dtype != types[k].dtype || out.shape != types[k].shape) {
        return Status::Error(NodeLabel(node) + " output '" + out.name + "' is " +
                             std::string(DTypeName(out.dtype)) + " " + ShapeString(out.shape) +
                             " but the op produces " + std::string(DTypeName(types[k].dtype)) +
                             " " + ShapeString(types[k].shape));
      }
    }
  }
  return Status::Ok();
}

Cost NodeCost(const Graph& graph, const Node& node) {
  const OpDef* def = OpOf(node);
  if (def != nullptr && def->cost != nullptr) return def->cost(graph, node);
  Cost cost = Traffic(graph, node);
  for (ValueId out : node.outputs) cost.flops += static_cast<double>(graph.value(out).elements());
  return cost;
}

}  // namespace memfold
