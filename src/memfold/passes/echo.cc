#include "memfold/passes/echo.h"

#include <algorithm>
#include <set>

#include "memfold/passes/recompute.h"

namespace memfold {
namespace {

// The stash accounting of a recomputation set R over the whole training graph.
class StashModel {
 public:
  StashModel(const Graph& g, const TrainingGraph& t) : g_(g), readers_(g.Consumers()), forward_(static_cast<size_t>(g.num_nodes()), 0) {
    for (size_t pos = 0; pos < t.forward_nodes; ++pos) forward_[static_cast<size_t>(g.schedule[pos])] = 1;
  }

  // Whether value v must be kept until the backward pass when `in_set` nodes are recomputed:
  // a backward node reads it, or a recomputed node does, and it is not itself recomputed.
  bool Kept(ValueId v, const std::vector<char>& in_set) const {
    const NodeId producer = g_.value(v).producer;
    if (producer != kNoNode && in_set[static_cast<size_t>(producer)] && RecomputesOutput(g_.node(producer), OutputIndex(producer, v))) return false;
    if (g_.value(v).is_constant() || g_.value(v).role == Role::kWeight) return false;  // never in the arena
    for (NodeId reader : readers_[static_cast<size_t>(v)]) {
      if (!forward_[static_cast<size_t>(reader)] || in_set[static_cast<size_t>(reader)]) return true;
    }
    return false;
  }

  // Bytes kept among `values` under `in_set`.
  int64_t KeptBytes(const std::set<ValueId>& values, const std::vector<char>& in_set) const {
    int64_t bytes = 0;
    for (ValueId v : values) bytes += Kept(v, in_set) ? g_.value(v).bytes() : 0;
    return bytes;
  }

  const std::vector<NodeId>& readers(ValueId v) const { return readers_[static_cast<size_t>(v)]; }

  size_t OutputIndex(NodeId producer, ValueId v) const {
    const std::vector<ValueId>& outs = g_.node(producer).outputs;
    return static_cast<size_t>(std::find(outs.begin(), outs.end(), v) - outs.begin());
  }

 private:
  const Graph& g_;
  std::vector<std::vector<NodeId>> readers_;
  std::vector<char> forward_;
};

// Candidates: cheap, allowed forward nodes whose chain of candidate ancestors stays short.
std::vector<char> Candidates(const Graph& g, const TrainingGraph& t) {
  std::vector<char> candidate(static_cast<size_t>(g.num_nodes()), 0);
  std::vector<int> chain(static_cast<size_t>(g.num_values()), 0);
  for (size_t pos = 0; pos < t.forward_nodes; ++pos) {
    const NodeId id = g.schedule[pos];
    const Node& n = g.node(id);
    int depth = 1;
    for (ValueId in : n.inputs) {
      if (in != kNoValue) depth = std::max(depth, chain[static_cast<size_t>(in)] + 1);
    }
    const bool ok = !IsComputeHeavy(g, n) && !MustNotRecompute(g, n) && depth <= kMaxRecomputeChain;
    candidate[static_cast<size_t>(id)] = ok;
    for (ValueId out : n.outputs) chain[static_cast<size_t>(out)] = ok ? depth : 0;
  }
  return candidate;
}

// The candidate nodes that must decide together with `id`: all candidates reading an input of
// `id` that no candidate produces (they can only stash it together).
std::vector<NodeId> Group(const Graph& g, const StashModel& model, const std::vector<char>& set, NodeId id) {
  std::vector<NodeId> group = {id};
  for (ValueId in : g.node(id).inputs) {
    if (in == kNoValue || g.value(in).is_constant()) continue;
    const NodeId producer = g.value(in).producer;
    if (producer != kNoNode && set[static_cast<size_t>(producer)]) continue;
    for (NodeId reader : model.readers(in)) {
      if (set[static_cast<size_t>(reader)] && std::find(group.begin(), group.end(), reader) == group.end()) group.push_back(reader);
    }
  }
  return group;
}

// The values whose kept status a group's membership can change: its nodes' inputs and outputs.
std::set<ValueId> Affected(const Graph& g, const std::vector<NodeId>& group) {
  std::set<ValueId> values;
  for (NodeId id : group) {
    for (ValueId v : g.node(id).inputs) {
      if (v != kNoValue) values.insert(v);
    }
    for (ValueId v : g.node(id).outputs) values.insert(v);
  }
  return values;
}

}  // namespace

std::vector<char> EchoChoice(const Graph& g, const TrainingGraph& t) {
  const StashModel model(g, t);
  std::vector<char> set = Candidates(g, t);
  for (size_t pos = 0; pos < t.forward_nodes; ++pos) {
    const NodeId id = g.schedule[pos];
    if (!set[static_cast<size_t>(id)]) continue;
    const std::vector<NodeId> group = Group(g, model, set, id);
    const std::set<ValueId> values = Affected(g, group);
    std::vector<char> without = set;
    for (NodeId n : group) without[static_cast<size_t>(n)] = 0;
    if (model.KeptBytes(values, without) <= model.KeptBytes(values, set)) set = std::move(without);
  }
  return set;
}

}  // namespace memfold
