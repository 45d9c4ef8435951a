#include "memfold/passes/recompute.h"

#include <algorithm>
#include <functional>
#include <limits>

#include "memfold/ops/registry.h"
#include "memfold/passes/update_schedule.h"
#include "memfold/placement/lower_bound.h"

namespace memfold {
namespace {

constexpr char kBatchNorm[] = "batch_norm_train";

// What the clone of `original` reads (before clones replace recomputed inputs): batch norm is
// re-run from x, gamma, beta and the statistics it saved; other ops read their own inputs.
std::vector<ValueId> CloneInputs(const Node& original) {
  if (original.op != kBatchNorm) return original.inputs;
  return {original.inputs[0], original.inputs[1], original.inputs[2], original.outputs[1],
          original.outputs[2]};
}

// Re-schedules: forward nodes as before, then the backward pass with each clone placed just
// before the first node that reads it (clones that read clones first). Of a node's recomputed
// inputs, the one behind the longest chain of clones is placed first (Sethi-Ullman order), so
// short chains run last and their results wait the least: a residual block's batch-norm clone
// runs just before the add that reads it, not before the whole chain of earlier blocks.
std::vector<NodeId> LateSchedule(const Graph& g, size_t forward_nodes,
                                 const std::vector<NodeId>& backward,
                                 const std::vector<NodeId>& clone_of_value) {
  std::vector<NodeId> order(g.schedule.begin(),
                            g.schedule.begin() + static_cast<std::ptrdiff_t>(forward_nodes));
  std::vector<int> depth(static_cast<size_t>(g.num_nodes()),
                         0);  // longest clone chain, 0 = unknown
  auto clone_inputs = [&](NodeId id) {
    std::vector<NodeId> clones;
    for (ValueId in : g.node(id).inputs) {
      if (in != kNoValue && clone_of_value[static_cast<size_t>(in)] != kNoNode)
        clones.push_back(clone_of_value[static_cast<size_t>(in)]);
    }
    return clones;
  };
  std::function<int(NodeId)> chain = [&](NodeId id) {
    int& d = depth[static_cast<size_t>(id)];
    if (d == 0) {
      for (NodeId c : clone_inputs(id)) d = std::max(d, chain(c));
      ++d;
    }
    return d;
  };
  std::vector<char> placed(static_cast<size_t>(g.num_nodes()), 0);
  std::function<void(NodeId)> place = [&](NodeId id) {
    if (placed[static_cast<size_t>(id)]) return;
    placed[static_cast<size_t>(id)] = 1;
    std::vector<NodeId> clones = clone_inputs(id);
    std::stable_sort(clones.begin(), clones.end(),
                     [&](NodeId a, NodeId b) { return chain(a) > chain(b); });
    for (NodeId c : clones) place(c);
    order.push_back(id);
  };
  for (NodeId id : backward) place(id);
  return order;
}

// The clones' own buffers, for RecomputedArenaFloor: each clone of a plain kernel's output is
// live from its first backward reader to its last (it is made at a step just before the
// first, so it is never created at an original node's step). Clones that may share another
// buffer (of alias ops, views, in-place updates, or read by a view) are left out.
void AddCloneRequests(const Graph& g, const TrainingGraph& t, const std::vector<char>& redirected,
                      std::vector<BufferRequest>* requests, std::vector<char>* made_earlier) {
  std::vector<char> plain(static_cast<size_t>(g.num_values()), 0);
  for (ValueId v = 0; v < g.num_values(); ++v) {
    if (!redirected[static_cast<size_t>(v)] || g.value(v).bytes() == 0) continue;
    const Node& producer = g.node(g.value(v).producer);
    const OpDef* def = OpOf(producer);
    plain[static_cast<size_t>(v)] =
        def != nullptr && !def->alias && def->updates_input.empty() && !producer.attrs.Has("view");
  }
  std::vector<int32_t> first(static_cast<size_t>(g.num_values()), -1), last = first;
  for (size_t pos = t.forward_nodes; pos < g.schedule.size(); ++pos) {
    const Node& n = g.node(g.schedule[pos]);
    for (ValueId in : n.inputs) {
      if (in == kNoValue || !plain[static_cast<size_t>(in)]) continue;
      if (n.attrs.Has("view")) plain[static_cast<size_t>(in)] = 0;
      if (first[static_cast<size_t>(in)] < 0) first[static_cast<size_t>(in)] = NodeTime(pos);
      last[static_cast<size_t>(in)] = NodeTime(pos);
    }
  }
  for (ValueId v = 0; v < g.num_values(); ++v) {
    if (!plain[static_cast<size_t>(v)] || first[static_cast<size_t>(v)] < 0) continue;
    requests->push_back({.id = static_cast<int32_t>(requests->size()),
                         .bytes = g.value(v).bytes(),
                         .first = first[static_cast<size_t>(v)],
                         .last = last[static_cast<size_t>(v)]});
    made_earlier->push_back(1);
  }
}

// A clone reads the originals of its inputs that are not recomputed just before the first
// backward node that needs it (directly or through later clones), so their buffers live at
// least until the original node before that one.
void ExtendForCloneReads(const Graph& g, const TrainingGraph& t, const std::vector<char>& cloned,
                         const std::vector<char>& redirected, const Liveness& live,
                         std::vector<BufferRequest>* kept) {
  std::vector<int32_t> need(static_cast<size_t>(g.num_nodes()),
                            std::numeric_limits<int32_t>::max());
  auto needed_by = [&](ValueId v, int32_t time) {
    int32_t& n = need[static_cast<size_t>(g.value(v).producer)];
    n = std::min(n, time);
  };
  for (size_t pos = t.forward_nodes; pos < g.schedule.size(); ++pos) {
    for (ValueId in : g.node(g.schedule[pos]).inputs) {
      if (in != kNoValue && redirected[static_cast<size_t>(in)]) needed_by(in, NodeTime(pos));
    }
  }
  for (size_t pos = t.forward_nodes; pos-- > 0;) {  // later clones first: chains propagate
    const NodeId id = g.schedule[pos];
    const int32_t time = need[static_cast<size_t>(id)];
    if (!cloned[static_cast<size_t>(id)] || time == std::numeric_limits<int32_t>::max()) continue;
    for (ValueId in : CloneInputs(g.node(id))) {
      if (in == kNoValue) continue;
      if (redirected[static_cast<size_t>(in)]) {
        needed_by(in, time);
      } else if (const int32_t b = live.buffer_of[static_cast<size_t>(in)]; b != kNoBuffer) {
        (*kept)[static_cast<size_t>(b)].last =
            std::max((*kept)[static_cast<size_t>(b)].last, time - 1);
      }
    }
  }
}

}  // namespace

bool IsComputeHeavy(const Graph& graph, const Node& node) {
  if (const AttrValue* force = node.attrs.Find("recompute")) {
    return std::get<std::string>(*force) == "never";
  }
  // FLOPs per byte of feature maps moved: weights are read however the activations are kept,
  // so they do not make a layer cheaper to recompute.
  double bytes = 0;
  for (ValueId in : node.inputs) {
    if (in != kNoValue && !graph.value(in).is_constant() && graph.value(in).role != Role::kWeight)
      bytes += static_cast<double>(graph.value(in).bytes());
  }
  for (ValueId out : node.outputs) bytes += static_cast<double>(graph.value(out).bytes());
  return bytes > 0 && NodeCost(graph, node).flops / bytes >= kComputeHeavyIntensity;
}

bool RecomputesOutput(const Node& node, size_t output) {
  return node.op != kBatchNorm || output == 0;
}

bool MustNotRecompute(const Graph& graph, const Node& node) {
  const OpDef* def = OpOf(node);
  if (def == nullptr || (def->kernels.empty() && !def->alias && !def->traced)) return true;
  if (!def->updates_input.empty()) return true;
  if (node.op == kBatchNorm) return false;  // re-run as batch_norm_apply
  for (ValueId in : node.inputs) {          // reads state it may update
    if (in != kNoValue && graph.value(in).role == Role::kState) return true;
  }
  return def->random || node.layer == "loss";
}

std::vector<char> MirrorChoice(const Graph& g, const TrainingGraph& t) {
  std::vector<char> choice(static_cast<size_t>(g.num_nodes()), 0);
  for (size_t pos = 0; pos < t.forward_nodes; ++pos) {
    const Node& n = g.node(g.schedule[pos]);
    choice[static_cast<size_t>(g.schedule[pos])] =
        !IsComputeHeavy(g, n) && !MustNotRecompute(g, n) &&
        RulesOf(n).view != ViewRule::kConcatRows;  // as MXNet's mirror: no concatenation
  }
  return choice;
}

std::vector<char> ClonedNodes(const Graph& g, const TrainingGraph& t,
                              const std::vector<char>& recompute) {
  // Values the backward pass reads, to decide which recomputed nodes are worth cloning.
  std::vector<char> needed(static_cast<size_t>(g.num_values()), 0);
  for (size_t pos = t.forward_nodes; pos < g.schedule.size(); ++pos) {
    for (ValueId in : g.node(g.schedule[pos]).inputs) {
      if (in != kNoValue) needed[static_cast<size_t>(in)] = 1;
    }
  }
  // Reverse forward order: a node is cloned if the backward pass or a later clone reads an
  // output it recomputes; then its inputs are needed too. Other clones would be dead.
  std::vector<char> cloned(static_cast<size_t>(g.num_nodes()), 0);
  for (size_t pos = t.forward_nodes; pos-- > 0;) {
    const NodeId id = g.schedule[pos];
    if (!recompute[static_cast<size_t>(id)]) continue;
    const Node& n = g.node(id);
    bool wanted = false;
    for (size_t k = 0; k < n.outputs.size(); ++k)
      wanted = wanted || (RecomputesOutput(n, k) && needed[static_cast<size_t>(n.outputs[k])]);
    if (!wanted) continue;
    cloned[static_cast<size_t>(id)] = 1;
    for (ValueId in : n.inputs) {
      if (in != kNoValue) needed[static_cast<size_t>(in)] = 1;
    }
  }
  return cloned;
}

int64_t RecomputedArenaFloor(const Graph& g, const TrainingGraph& t, const Liveness& live,
                             const std::vector<char>& recompute) {
  const std::vector<char> cloned = ClonedNodes(g, t, recompute);
  std::vector<char> redirected(static_cast<size_t>(g.num_values()), 0);  // read as clones
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    if (!cloned[static_cast<size_t>(id)]) continue;
    const Node& n = g.node(id);
    for (size_t k = 0; k < n.outputs.size(); ++k)
      redirected[static_cast<size_t>(n.outputs[k])] = RecomputesOutput(n, k);
  }
  std::vector<BufferRequest> kept = live.requests;
  std::vector<char> cut(kept.size(), 0);  // buffers holding a redirected value
  for (ValueId v = 0; v < g.num_values(); ++v) {
    const int32_t b = live.buffer_of[static_cast<size_t>(v)];
    if (b != kNoBuffer && redirected[static_cast<size_t>(v)]) cut[static_cast<size_t>(b)] = 1;
  }
  for (size_t b = 0; b < kept.size(); ++b) {
    if (cut[b]) kept[b].last = kept[b].first;
  }
  for (ValueId v : g.outputs) {
    const int32_t b = live.buffer_of[static_cast<size_t>(v)];
    if (b != kNoBuffer && cut[static_cast<size_t>(b)])
      kept[static_cast<size_t>(b)].last = live.end_time;
  }
  std::vector<char> forward(static_cast<size_t>(g.num_nodes()), 0);
  for (size_t pos = 0; pos < t.forward_nodes; ++pos)
    forward[static_cast<size_t>(g.schedule[pos])] = 1;
  // Whether a backward read of `in` (in a cut buffer) still reads that buffer after the
  // rewrite: not a recomputed value (its clone is read), nor a value the backward pass made
  // over one (an alias of a recomputed value joins its clone's buffer).
  auto reads_original = [&](ValueId in) {
    const NodeId producer = g.value(in).producer;
    return !redirected[static_cast<size_t>(in)] &&
           (producer == kNoNode || forward[static_cast<size_t>(producer)]);
  };
  std::vector<char> counted(static_cast<size_t>(live.end_time) + 1, 1);  // where it holds
  for (size_t pos = 0; pos < g.schedule.size(); ++pos) {
    const Node& n = g.node(g.schedule[pos]);
    const OpDef* def = OpOf(n);
    if (def != nullptr && !def->updates_input.empty())
      counted[static_cast<size_t>(NodeTime(pos))] = 0;
    for (ValueId in : n.inputs) {
      const int32_t b = in == kNoValue ? kNoBuffer : live.buffer_of[static_cast<size_t>(in)];
      if (b == kNoBuffer || !cut[static_cast<size_t>(b)]) continue;
      if (pos < t.forward_nodes || reads_original(in))
        kept[static_cast<size_t>(b)].last =
            std::max(kept[static_cast<size_t>(b)].last, NodeTime(pos));
    }
  }
  ExtendForCloneReads(g, t, cloned, redirected, live, &kept);
  std::vector<char> made_earlier(kept.size(), 0);
  AddCloneRequests(g, t, redirected, &kept, &made_earlier);
  const std::vector<int64_t> floor = ArenaFloorPerStep(kept, made_earlier);
  int64_t peak = 0;
  for (size_t step = 0; step < floor.size() && step < counted.size(); ++step)
    if (counted[step]) peak = std::max(peak, floor[step]);
  return peak;
}

Result<RecomputeResult> ApplyRecomputation(Graph* g, const TrainingGraph& t,
                                           const std::vector<char>& recompute) {
  const std::vector<NodeId> backward(
      g->schedule.begin() + static_cast<std::ptrdiff_t>(t.forward_nodes), g->schedule.end());
  std::vector<ValueId> clone(static_cast<size_t>(g->num_values()), kNoValue);
  RecomputeResult result;
  const std::vector<char> cloned = ClonedNodes(*g, t, recompute);
  int32_t new_values = 0, new_nodes = 0;
  for (NodeId id = 0; id < g->num_nodes(); ++id) {
    if (!cloned[static_cast<size_t>(id)]) continue;
    const Node& n = g->node(id);
    ++new_nodes;
    for (size_t k = 0; k < n.outputs.size(); ++k) new_values += RecomputesOutput(n, k);
  }
  g->Reserve(g->num_values() + new_values, g->num_nodes() + new_nodes);  // no table moves below
  for (size_t pos = 0; pos < t.forward_nodes; ++pos) {
    const NodeId id = g->schedule[pos];
    if (!cloned[static_cast<size_t>(id)]) continue;
    const Node& original = g->node(id);
    Node copy = original;
    copy.name += "/recompute";
    if (original.op == kBatchNorm) {  // x, gamma, beta and the statistics the node saved
      copy.op = "batch_norm_apply";
      copy.attrs = Attrs{{"axis", original.attrs.Int("axis")}};
      copy.inputs = CloneInputs(original);
    }
    for (ValueId& in : copy.inputs) {
      if (in != kNoValue && clone[static_cast<size_t>(in)] != kNoValue)
        in = clone[static_cast<size_t>(in)];
    }
    copy.outputs.clear();
    for (size_t k = 0; k < original.outputs.size(); ++k) {
      if (!RecomputesOutput(original, k)) continue;
      Value v = g->value(original.outputs[k]);
      v.name += "/recompute";
      const ValueId c = g->AddValue(std::move(v));
      copy.outputs.push_back(c);
      clone[static_cast<size_t>(original.outputs[k])] = c;
    }
    const NodeId new_id = g->AddNode(std::move(copy));
    g->schedule.pop_back();  // placed by LateSchedule
    ++result.recomputed_nodes;
    result.recompute_flops += NodeCost(*g, g->node(new_id)).flops;
  }
  std::vector<NodeId> clone_node(static_cast<size_t>(g->num_values()), kNoNode);  // per clone value
  for (ValueId c : clone) {
    if (c != kNoValue) clone_node[static_cast<size_t>(c)] = g->value(c).producer;
  }
  for (NodeId id : backward) {  // the backward pass reads the clones
    for (ValueId& in : g->node(id).inputs) {
      if (in != kNoValue && clone[static_cast<size_t>(in)] != kNoValue)
        in = clone[static_cast<size_t>(in)];
    }
  }
  g->schedule = LateSchedule(*g, t.forward_nodes, backward, clone_node);
  ScheduleUpdatesEarly(g);  // clones may read parameters: updates follow them
  return result;
}

}  // namespace memfold
