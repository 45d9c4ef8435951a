#include "memfold/passes/dead_nodes.h"

#include "memfold/ops/registry.h"

namespace memfold {

int EliminateDeadNodes(Graph* graph) {
  std::vector<char> needed(static_cast<size_t>(graph->num_values()), 0);
  for (ValueId v : graph->outputs) needed[static_cast<size_t>(v)] = 1;
  std::vector<char> keep(static_cast<size_t>(graph->num_nodes()), 0);
  for (size_t pos = graph->schedule.size(); pos-- > 0;) {
    const NodeId id = graph->schedule[pos];
    const Node& node = graph->node(id);
    const OpDef* def = OpOf(node);
    bool live = def != nullptr && !def->updates_input.empty();
    for (ValueId out : node.outputs) live = live || needed[static_cast<size_t>(out)];
    if (!live) continue;
    keep[static_cast<size_t>(id)] = 1;
    for (ValueId in : node.inputs) {
      if (in != kNoValue) needed[static_cast<size_t>(in)] = 1;
    }
  }
  // The kept values and nodes move into the compacted graph: nothing is copied.
  Graph compact;
  compact.Reserve(graph->num_values(), graph->num_nodes());
  compact.name = std::move(graph->name);
  compact.inputs = std::move(graph->inputs);
  compact.outputs = std::move(graph->outputs);
  compact.offline_offsets = std::move(graph->offline_offsets);
  for (ValueId v = 0; v < graph->num_values(); ++v) {
    Value& value = graph->value(v);
    value.producer = kNoNode;
    compact.AddValue(std::move(value));
  }
  int removed = 0;
  for (NodeId id : graph->schedule) {
    if (keep[static_cast<size_t>(id)]) {
      compact.AddNode(std::move(graph->node(id)));
    } else {
      ++removed;
    }
  }
  *graph = std::move(compact);
  return removed;
}

}  // namespace memfold
