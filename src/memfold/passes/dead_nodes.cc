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
  std::vector<NodeId> order;  // the kept nodes in schedule order
  order.reserve(graph->schedule.size());
  for (NodeId id : graph->schedule) {
    if (keep[static_cast<size_t>(id)]) order.push_back(id);
  }
  const int removed = graph->num_nodes() - static_cast<int>(order.size());
  graph->KeepNodes(order);
  return removed;
}

}  // namespace memfold
