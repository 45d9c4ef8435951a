#include "memfold/passes/stream_inputs.h"

#include <algorithm>
#include <utility>

#include "memfold/ops/registry.h"

namespace memfold {

int StreamInputs(Graph* graph) {
  int streamed = 0;
  for (const ValueId input : std::vector<ValueId>(graph->inputs)) {
    Value& value = graph->value(input);
    if (value.shape.size() != 4 || value.shape[0] != 1 || value.role == Role::kStreamed ||
        value.bytes() == 0)
      continue;
    std::vector<std::pair<NodeId, size_t>> readers;
    for (NodeId id = 0; id < graph->num_nodes(); ++id) {
      const Node& node = graph->node(id);
      for (size_t k = 0; k < node.inputs.size(); ++k)
        if (node.inputs[k] == input) readers.emplace_back(id, k);
    }
    if (std::find(graph->outputs.begin(), graph->outputs.end(), input) != graph->outputs.end())
      continue;
    value.role = Role::kStreamed;
    const Shape shape = value.shape;
    Attrs attrs{
        {"begin", std::vector<int64_t>(shape.size(), 0)}, {"size", shape}, {"view", int64_t{1}}};
    Result<std::vector<ValueId>> fetched =
        AddOp(graph, "slice", {input}, std::move(attrs), value.name + "/fetched");
    if (!fetched.ok()) continue;  // a rank-4 slice of its own shape is always valid
    const ValueId whole = (*fetched)[0];
    graph->value(whole).quant = graph->value(input).quant;
    graph->SetOriginWithin(whole, input, Shape(shape.size(), 0));
    std::rotate(graph->schedule.begin(), graph->schedule.end() - 1, graph->schedule.end());
    for (const auto& [id, k] : readers) graph->node(id).inputs[k] = whole;
    ++streamed;
  }
  return streamed;
}

}  // namespace memfold
