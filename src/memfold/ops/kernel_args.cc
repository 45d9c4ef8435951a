#include "memfold/ops/kernel_args.h"

#include <utility>
#include <variant>

#include "memfold/ops/registry.h"

namespace memfold {

TensorArg TensorArgOf(const Value& value, std::byte* data) {
  TensorArg arg;
  arg.present = true;
  arg.dtype = value.dtype;
  arg.shape = value.shape;
  if (value.quant) {
    arg.quant =
        QuantArg{value.quant->scale, value.quant->zero_point, value.quant->scale.size() > 1};
  }
  arg.data = data;
  arg.read_only = value.is_constant() && value.role != Role::kState;
  return arg;
}

std::vector<AttrArg> AttrArgsOf(const Attrs& attrs) {
  std::vector<AttrArg> args;
  for (const auto& [name, value] : attrs.items()) {
    if (const auto* i = std::get_if<int64_t>(&value)) {
      args.push_back({.name = name, .kind = AttrArg::Kind::kInt, .i = *i});
    } else if (const auto* f = std::get_if<double>(&value)) {
      args.push_back({.name = name, .kind = AttrArg::Kind::kFloat, .f = *f});
    } else if (const auto* s = std::get_if<std::string>(&value)) {
      args.push_back({.name = name, .kind = AttrArg::Kind::kStr, .s = *s});
    } else {
      args.push_back({.name = name,
                      .kind = AttrArg::Kind::kInts,
                      .ints = std::get<std::vector<int64_t>>(value)});
    }
  }
  return args;
}

NodeKernelArgs KernelArgsOf(const Graph& graph, const Node& node,
                            const std::vector<std::byte*>& where) {
  auto arg = [&](ValueId v) {
    if (v == kNoValue) return TensorArg{};
    return TensorArgOf(graph.value(v), where.empty() ? nullptr : where[static_cast<size_t>(v)]);
  };
  std::vector<TensorArg> inputs, outputs;
  for (ValueId in : node.inputs) inputs.push_back(arg(in));
  for (ValueId out : node.outputs) outputs.push_back(arg(out));
  return KernelArgsFor(node, std::move(inputs), std::move(outputs));
}

NodeKernelArgs KernelArgsFor(const Node& node, std::vector<TensorArg> inputs,
                             std::vector<TensorArg> outputs) {
  NodeKernelArgs args;
  args.attrs = AttrArgsOf(node.attrs);
  args.inputs = std::move(inputs);
  args.outputs = std::move(outputs);
  if (const OpDef* def = OpOf(node); def != nullptr && def->prepare != nullptr) {
    args.prepared = def->prepare(args.Context());
  }
  return args;
}

}  // namespace memfold
