#include "memfold/passes/echo.h"

#include <algorithm>
#include <set>

#include "memfold/ops/registry.h"
#include "memfold/passes/recompute.h"
#include "memfold/passes/stash_model.h"

namespace memfold {
namespace {

// A chain of candidate nodes as seen from one of its values: its length, how many recurrent
// steps it spans, and its step signature: per parameter, the latest compute-heavy node reading
// it whose output the chain starts from (sorted by parameter).
struct Chain {
  int nodes = 0;
  int steps = 0;
  std::vector<std::pair<ValueId, NodeId>> signature;
};

// Joins the chains of a node's inputs. In an unrolled recurrent network the same parameters are
// applied once per step, so two inputs whose chains start from different nodes reading the same
// parameter come from different steps: the join crosses one step of recurrent state (step t's
// gates meet the cell state of step t-1). Residual streams and layers with their own weights
// never cross.
Chain Join(const std::vector<const Chain*>& inputs, const std::vector<size_t>& position) {
  Chain joined;
  bool crosses = false;
  for (const Chain* c : inputs) {
    joined.nodes = std::max(joined.nodes, c->nodes);
    joined.steps = std::max(joined.steps, c->steps);
    for (const auto& [param, source] : c->signature) joined.signature.emplace_back(param, source);
  }
  std::sort(joined.signature.begin(), joined.signature.end());
  size_t kept = 0;  // one entry per parameter: its latest source
  for (size_t k = 0; k < joined.signature.size(); ++k) {
    auto [param, source] = joined.signature[k];
    if (kept > 0 && joined.signature[kept - 1].first == param) {
      NodeId& latest = joined.signature[kept - 1].second;
      if (latest == source) continue;
      crosses = true;
      if (position[static_cast<size_t>(source)] > position[static_cast<size_t>(latest)])
        latest = source;
      continue;
    }
    joined.signature[kept++] = {param, source};
  }
  joined.signature.resize(kept);
  joined.nodes += 1;
  joined.steps += crosses ? 1 : 0;
  return joined;
}

// The chain that starts at a compute-heavy node's output: its parameters are the signature.
Chain SourceChain(const Graph& g, NodeId heavy) {
  Chain c;
  for (ValueId in : g.node(heavy).inputs) {
    if (in != kNoValue && g.value(in).role == Role::kWeight) c.signature.emplace_back(in, heavy);
  }
  std::sort(c.signature.begin(), c.signature.end());
  c.signature.erase(std::unique(c.signature.begin(), c.signature.end()), c.signature.end());
  return c;
}

// Candidates: cheap, allowed forward nodes whose chain of candidate ancestors stays short
// (kMaxRecomputeChain nodes) and spans at most one recurrent step.
std::vector<char> Candidates(const Graph& g, const TrainingGraph& t) {
  std::vector<char> candidate(static_cast<size_t>(g.num_nodes()), 0);
  std::vector<size_t> position(static_cast<size_t>(g.num_nodes()), 0);
  for (size_t pos = 0; pos < g.schedule.size(); ++pos)
    position[static_cast<size_t>(g.schedule[pos])] = pos;
  std::vector<Chain> chain(static_cast<size_t>(g.num_values()));  // empty: a stashed or given value
  for (size_t pos = 0; pos < t.forward_nodes; ++pos) {
    const NodeId id = g.schedule[pos];
    const Node& n = g.node(id);
    const bool heavy = IsComputeHeavy(g, n);
    std::vector<const Chain*> inputs;
    for (ValueId in : n.inputs) {
      if (in != kNoValue) inputs.push_back(&chain[static_cast<size_t>(in)]);
    }
    Chain joined = heavy ? Chain() : Join(inputs, position);
    if (IsView(n)) joined.nodes -= 1;  // a view recomputes nothing: free to re-create
    const bool ok = !heavy && !MustNotRecompute(g, n) && joined.nodes <= kMaxRecomputeChain &&
                    joined.steps <= kMaxRecurrentSteps;
    candidate[static_cast<size_t>(id)] = ok;
    if (!ok) joined = heavy ? SourceChain(g, id) : Chain();
    for (ValueId out : n.outputs) chain[static_cast<size_t>(out)] = joined;
  }
  return candidate;
}

// The candidate nodes that must decide together with `id`: all candidates reading an input of
// `id` that no candidate produces (they can only stash it together).
std::vector<NodeId> Group(const Graph& g, const StashModel& model, const std::vector<char>& set,
                          NodeId id) {
  std::vector<NodeId> group = {id};
  for (ValueId in : g.node(id).inputs) {
    if (in == kNoValue || g.value(in).is_constant()) continue;
    const NodeId producer = g.value(in).producer;
    if (producer != kNoNode && set[static_cast<size_t>(producer)]) continue;
    for (NodeId reader : model.readers(in)) {
      if (set[static_cast<size_t>(reader)] &&
          std::find(group.begin(), group.end(), reader) == group.end())
        group.push_back(reader);
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

// Algorithm 1's backward walk: from the loss, a subgraph grows backward through candidates;
// a node that cannot be recomputed (compute-heavy, forbidden, or where a chain bound cuts)
// stops it and becomes the root of a later subgraph. Forward nodes the walk never reaches
// feed only the backward pass (a traced graph's detach of an activation): each seeds a
// subgraph of its own, itself included when it is a candidate. Subgraphs are disjoint; each
// is returned in schedule order.
std::vector<std::vector<NodeId>> Partition(const Graph& g, const TrainingGraph& t,
                                           const std::vector<char>& candidate) {
  std::vector<size_t> position(static_cast<size_t>(g.num_nodes()),
                               t.forward_nodes);  // backward: >= forward_nodes
  for (size_t pos = 0; pos < t.forward_nodes; ++pos)
    position[static_cast<size_t>(g.schedule[pos])] = pos;
  std::vector<char> reached(static_cast<size_t>(g.num_nodes()), 0);
  auto push_producers = [&](NodeId id, std::vector<NodeId>* work) {
    for (ValueId in : g.node(id).inputs) {
      const NodeId p = in == kNoValue ? kNoNode : g.value(in).producer;
      if (p != kNoNode && position[static_cast<size_t>(p)] < t.forward_nodes &&
          !reached[static_cast<size_t>(p)])
        work->push_back(p);
    }
  };
  std::vector<std::vector<NodeId>> parts;
  std::vector<NodeId> roots;
  for (ValueId out : t.BackwardRoots()) roots.push_back(g.value(out).producer);
  size_t unscanned = t.forward_nodes;  // forward positions below this may be unreached
  while (true) {
    NodeId start = kNoNode;
    bool seeds_itself = false;
    if (!roots.empty()) {
      start = roots.back();
      roots.pop_back();
    } else {
      while (unscanned > 0 && reached[static_cast<size_t>(g.schedule[unscanned - 1])]) --unscanned;
      if (unscanned == 0) break;
      start = g.schedule[--unscanned];
      seeds_itself = candidate[static_cast<size_t>(start)];
    }
    if (start == kNoNode || reached[static_cast<size_t>(start)]) continue;
    reached[static_cast<size_t>(start)] = 1;
    std::vector<NodeId> part, work;
    if (seeds_itself) part.push_back(start);
    push_producers(start, &work);
    while (!work.empty()) {
      const NodeId w = work.back();
      work.pop_back();
      if (reached[static_cast<size_t>(w)]) continue;
      if (!candidate[static_cast<size_t>(w)]) {
        roots.push_back(w);
        continue;
      }
      reached[static_cast<size_t>(w)] = 1;
      part.push_back(w);
      push_producers(w, &work);
    }
    if (part.empty()) continue;
    std::sort(part.begin(), part.end(), [&](NodeId a, NodeId b) {
      return position[static_cast<size_t>(a)] < position[static_cast<size_t>(b)];
    });
    parts.push_back(std::move(part));
  }
  return parts;
}

}  // namespace

std::vector<std::vector<NodeId>> EchoSubgraphs(const Graph& g, const TrainingGraph& t) {
  return Partition(g, t, Candidates(g, t));
}

std::vector<char> EchoChoice(const Graph& g, const TrainingGraph& t) {
  const StashModel model(g, t);
  const std::vector<char> candidate = Candidates(g, t);
  std::vector<char> set(candidate.size(), 0);
  const std::vector<std::vector<NodeId>> parts = Partition(g, t, candidate);
  for (const std::vector<NodeId>& part : parts) {
    for (NodeId id : part) set[static_cast<size_t>(id)] = 1;
  }
  // Algorithm 1's forward trim, subgraph by subgraph in the order the walk found them.
  for (const std::vector<NodeId>& part : parts) {
    for (NodeId id : part) {
      if (!set[static_cast<size_t>(id)]) continue;
      const std::vector<NodeId> group = Group(g, model, set, id);
      const std::set<ValueId> values = Affected(g, group);
      const int64_t kept_with = model.KeptBytes(values, set);
      for (NodeId n : group) set[static_cast<size_t>(n)] = 0;
      if (model.KeptBytes(values, set) > kept_with) {
        for (NodeId n : group) set[static_cast<size_t>(n)] = 1;
      }
    }
  }
  return set;
}

}  // namespace memfold
