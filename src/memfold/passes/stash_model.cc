#include "memfold/passes/stash_model.h"

#include <algorithm>

#include "memfold/ops/registry.h"
#include "memfold/passes/recompute.h"

namespace memfold {

bool IsView(const Node& node) {
  const OpDef* def = OpOf(node);
  return def != nullptr && def->alias;
}

StashModel::StashModel(const Graph& g, const TrainingGraph& t)
    : g_(g),
      caller_holds_inputs_(t.caller_holds_inputs),
      readers_(g.Consumers()),
      forward_(static_cast<size_t>(g.num_nodes()), 0),
      storage_(static_cast<size_t>(g.num_values())) {
  for (size_t pos = 0; pos < t.forward_nodes; ++pos)
    forward_[static_cast<size_t>(g.schedule[pos])] = 1;
  for (ValueId v = 0; v < g.num_values(); ++v) storage_[static_cast<size_t>(v)] = v;
  for (NodeId id : g.schedule) {  // a view's bytes are its input's (schedule order: inputs first)
    const Node& n = g.node(id);
    if (IsView(n) && !n.inputs.empty() && n.inputs[0] != kNoValue && !n.outputs.empty()) {
      storage_[static_cast<size_t>(n.outputs[0])] = storage_[static_cast<size_t>(n.inputs[0])];
    }
  }
  for (ValueId v = 0; v < g.num_values(); ++v) {
    const ValueId s = storage_[static_cast<size_t>(v)];
    if (s != v) views_[s].push_back(v);
  }
}

bool StashModel::StorageKept(ValueId s, const std::vector<char>& in_set) const {
  if (Kept(s, in_set)) return true;
  const auto views = views_.find(s);
  if (views == views_.end()) return false;
  for (ValueId v : views->second) {
    if (Kept(v, in_set)) return true;
  }
  return false;
}

bool StashModel::Free(ValueId v) const {
  const Value& value = g_.value(v);
  if (value.is_constant() || value.role == Role::kWeight) return true;
  return caller_holds_inputs_ && value.producer == kNoNode;
}

bool StashModel::Kept(ValueId v, const std::vector<char>& in_set) const {
  const NodeId producer = g_.value(v).producer;
  if (producer != kNoNode && !forward_[static_cast<size_t>(producer)]) return false;  // backward
  if (producer != kNoNode && in_set[static_cast<size_t>(producer)] &&
      RecomputesOutput(g_.node(producer), OutputIndex(producer, v)))
    return false;
  if (Free(v)) return false;
  for (NodeId reader : readers_[static_cast<size_t>(v)]) {
    if (!forward_[static_cast<size_t>(reader)] || in_set[static_cast<size_t>(reader)]) return true;
  }
  return false;
}

int64_t StashModel::KeptBytes(const std::set<ValueId>& values,
                              const std::vector<char>& in_set) const {
  std::set<ValueId> storages;
  for (ValueId v : values) storages.insert(storage_[static_cast<size_t>(v)]);
  int64_t bytes = 0;
  for (ValueId s : storages) {
    if (!Free(s) && StorageKept(s, in_set)) bytes += g_.value(s).bytes();
  }
  return bytes;
}

int64_t StashModel::TotalKeptBytes(const std::vector<char>& in_set) const {
  std::vector<char> counted(static_cast<size_t>(g_.num_values()), 0);
  int64_t bytes = 0;
  for (ValueId v = 0; v < g_.num_values(); ++v) {
    const ValueId s = storage_[static_cast<size_t>(v)];
    if (counted[static_cast<size_t>(s)] || !Kept(v, in_set) || Free(s)) continue;
    counted[static_cast<size_t>(s)] = 1;
    bytes += g_.value(s).bytes();
  }
  return bytes;
}

size_t StashModel::OutputIndex(NodeId producer, ValueId v) const {
  const std::vector<ValueId>& outs = g_.node(producer).outputs;
  return static_cast<size_t>(std::find(outs.begin(), outs.end(), v) - outs.begin());
}

}  // namespace memfold
