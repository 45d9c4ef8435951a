#include "memfold/passes/update_schedule.h"

#include <algorithm>

#include "memfold/ops/registry.h"

namespace memfold {
namespace {

bool UpdatesInPlace(const Node& node) {
  const OpDef* def = OpOf(node);
  return def != nullptr && !def->updates_input.empty();
}

// The inputs `node` overwrites in place.
std::vector<ValueId> Overwritten(const Node& node) {
  std::vector<ValueId> values;
  for (int k : OpOf(node)->updates_input) {
    if (k >= 0 && static_cast<size_t>(k) < node.inputs.size() &&
        node.inputs[static_cast<size_t>(k)] != kNoValue) {
      values.push_back(node.inputs[static_cast<size_t>(k)]);
    }
  }
  return values;
}

}  // namespace

void ScheduleUpdatesEarly(Graph* g) {
  std::vector<NodeId> others, updates;
  for (NodeId id : g->schedule) (UpdatesInPlace(g->node(id)) ? updates : others).push_back(id);
  if (updates.empty()) return;
  std::vector<int64_t> position(static_cast<size_t>(g->num_nodes()), -1);  // in `others`
  for (size_t k = 0; k < others.size(); ++k)
    position[static_cast<size_t>(others[k])] = static_cast<int64_t>(k);
  // Per value, the position (in `others`) of its last reader there, or -1.
  std::vector<int64_t> last_reader(static_cast<size_t>(g->num_values()), -1);
  for (size_t k = 0; k < others.size(); ++k) {
    for (ValueId in : g->node(others[k]).inputs) {
      if (in != kNoValue) last_reader[static_cast<size_t>(in)] = static_cast<int64_t>(k);
    }
  }
  std::vector<std::vector<NodeId>> after(others.size() + 1);  // updates to run after others[k - 1]
  for (NodeId u : updates) {
    int64_t last = -1;
    for (ValueId in : g->node(u).inputs) {
      if (in != kNoValue && g->value(in).producer != kNoNode)
        last = std::max(last, position[static_cast<size_t>(g->value(in).producer)]);
    }
    for (ValueId v : Overwritten(g->node(u)))
      last = std::max(last, last_reader[static_cast<size_t>(v)]);
    after[static_cast<size_t>(last + 1)].push_back(u);
  }
  g->schedule.clear();
  for (size_t k = 0; k <= others.size(); ++k) {
    if (k > 0) g->schedule.push_back(others[k - 1]);
    g->schedule.insert(g->schedule.end(), after[k].begin(), after[k].end());
  }
}

std::string FirstReadAfterUpdate(const Graph& g) {
  std::vector<char> overwritten(static_cast<size_t>(g.num_values()), 0);
  for (NodeId id : g.schedule) {
    const Node& node = g.node(id);
    for (ValueId in : node.inputs) {
      if (in != kNoValue && overwritten[static_cast<size_t>(in)]) return node.name;
    }
    if (UpdatesInPlace(node)) {
      for (ValueId v : Overwritten(node)) overwritten[static_cast<size_t>(v)] = 1;
    }
  }
  return "";
}

}  // namespace memfold
