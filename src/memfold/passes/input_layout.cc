#include "memfold/passes/input_layout.h"

#include <algorithm>
#include <string>
#include <vector>

#include "memfold/ops/registry.h"

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

bool SameQuant(const std::optional<Quantization>& a, const std::optional<Quantization>& b) {
  if (!a || !b) return !a && !b;
  return a->scale == b->scale && a->zero_point == b->zero_point && a->axis == b->axis;
}

bool IsUnary(const Node& node) {
  return RulesOf(node).tile == TileRule::kUnary && node.inputs.size() == 1 &&
         node.outputs.size() == 1;
}

// The chain from graph input `input` to its transpose, or why there is none.
Result<Chain> ChainOf(const Graph& graph, const std::vector<std::vector<NodeId>>& consumers,
                      ValueId input) {
  const std::string name = "input '" + graph.value(input).name + "'";
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
      const Value& transposed = graph.value(reader.outputs[0]);
      if (std::ranges::find(graph.outputs, reader.outputs[0]) != graph.outputs.end())
        return Status::Error(name + " is transposed straight to a graph output");
      if (transposed.dtype != value.dtype || !SameQuant(transposed.quant, value.quant))
        return Status::Error(name + "'s transpose changes its type or quantisation");
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
}

}  // namespace

Result<int> MakeInputsChannelsLast(Graph* graph) {
  const std::vector<std::vector<NodeId>> consumers = graph->Consumers();
  std::vector<Chain> chains;
  for (ValueId input : graph->inputs) {
    if (graph->value(input).shape.size() != 4) continue;  // not an image: left as it is
    Result<Chain> chain = ChainOf(*graph, consumers, input);
    if (!chain.ok())
      return Status::Error(
          "--input-layout nhwc: every image input must reach an NCHW-to-NHWC "
          "transpose (TFLite models take NHWC already): " +
          chain.status().message());
    chains.push_back(std::move(*chain));
  }
  if (chains.empty())
    return Status::Error("--input-layout nhwc: the model has no image (rank-4) input");
  std::vector<char> removed(static_cast<size_t>(graph->num_nodes()), 0);
  for (const Chain& chain : chains) {
    Rewire(graph, chain);
    removed[static_cast<size_t>(chain.transpose)] = 1;
  }
  std::vector<NodeId> kept;
  for (NodeId id : graph->schedule)
    if (!removed[static_cast<size_t>(id)]) kept.push_back(id);
  graph->KeepNodes(kept);
  return static_cast<int>(chains.size());
}

}  // namespace memfold
