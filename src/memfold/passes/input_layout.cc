#include "memfold/passes/input_layout.h"

#include <algorithm>
#include <string>
#include <vector>

#include "memfold/ops/registry.h"
#include "memfold/passes/dead_nodes.h"

namespace memfold {
namespace {

constexpr int64_t kToChannelsLast[] = {0, 2, 3, 1};

// An input's way to its NHWC transpose: the values the chain of unary ops makes of it (the
// input first) and the transpose.
struct Chain {
  std::vector<ValueId> values;
  NodeId transpose = -1;
};

bool IsToChannelsLast(const Node& node) {
  if (node.op != "transpose") return false;
  const AttrValue* perm = node.attrs.Find("perm");
  return perm != nullptr && std::holds_alternative<std::vector<int64_t>>(*perm) &&
         std::ranges::equal(std::get<std::vector<int64_t>>(*perm), kToChannelsLast);
}

bool IsUnary(const Node& node) {
  return RulesOf(node).tile == TileRule::kUnary && node.inputs.size() == 1 &&
         node.outputs.size() == 1;
}

// The chain from graph input `input` to its transpose, or why there is none.
Result<Chain> ChainOf(const Graph& graph, const std::vector<std::vector<NodeId>>& consumers,
                      ValueId input) {
  const std::string name = "input '" + graph.value(input).name + "'";
  if (graph.value(input).shape.size() != 4)
    return Status::Error(name + " is not rank 4 (an image batch)");
  Chain chain{{input}};
  for (ValueId v = input;;) {
    const Value& value = graph.value(v);
    if (value.quant && value.quant->per_channel())
      return Status::Error(name + " is quantised per channel on the way to its transpose");
    if (std::ranges::find(graph.outputs, v) != graph.outputs.end())
      return Status::Error(name + " is a graph output before it is transposed");
    const std::vector<NodeId>& readers = consumers[static_cast<size_t>(v)];
    if (readers.size() != 1)
      return Status::Error(name + " has " + std::to_string(readers.size()) +
                           " readers before its transpose; it needs one");
    const Node& reader = graph.node(readers[0]);
    if (IsToChannelsLast(reader)) {
      chain.transpose = readers[0];
      return chain;
    }
    if (!IsUnary(reader))
      return Status::Error(name + " is read by '" + reader.name + "' (" + reader.op +
                           "), not transposed from NCHW to NHWC");
    v = reader.outputs[0];
    chain.values.push_back(v);
  }
}

// Makes the chain's values NHWC and lets the transpose's readers read its end instead.
void Rewire(Graph* graph, const Chain& chain) {
  const ValueId transposed = graph->node(chain.transpose).outputs[0];
  const Shape nhwc = graph->value(transposed).shape;
  for (ValueId v : chain.values) graph->value(v).shape = nhwc;
  const ValueId end = chain.values.back();
  for (NodeId id = 0; id < graph->num_nodes(); ++id) {
    if (id == chain.transpose) continue;
    for (ValueId& in : graph->node(id).inputs) in = in == transposed ? end : in;
  }
  for (ValueId& out : graph->outputs) out = out == transposed ? end : out;
}

}  // namespace

Result<int> MakeInputsChannelsLast(Graph* graph) {
  const std::vector<std::vector<NodeId>> consumers = graph->Consumers();
  std::vector<Chain> chains;
  std::string why = "the model has no inputs";
  for (ValueId input : graph->inputs) {
    Result<Chain> chain = ChainOf(*graph, consumers, input);
    if (chain.ok()) {
      chains.push_back(std::move(*chain));
    } else if (input == graph->inputs.front()) {
      why = chain.status().message();
    }
  }
  if (chains.empty())
    return Status::Error(
        "--input-layout nhwc: no input is read through an NCHW-to-NHWC "
        "transpose (TFLite models take NHWC already): " +
        why);
  for (const Chain& chain : chains) Rewire(graph, chain);
  EliminateDeadNodes(graph);
  return static_cast<int>(chains.size());
}

}  // namespace memfold
