#include "memfold/passes/recompute.h"

#include <algorithm>
#include <functional>

#include "memfold/ops/registry.h"
#include "memfold/passes/update_schedule.h"

namespace memfold {
namespace {

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

constexpr char kBatchNorm[] = "batch_norm_train";

bool RecomputesOutput(const Node& node, size_t output) {
  return node.op != kBatchNorm || output == 0;
}

bool MustNotRecompute(const Graph& graph, const Node& node) {
  const OpDef* def = OpOf(node);
  if (def == nullptr || (def->kernels.empty() && !def->alias)) return true;
  if (!def->updates_input.empty()) return true;
  if (node.op == kBatchNorm) return false;  // re-run as batch_norm_apply
  for (ValueId in : node.inputs) {          // reads state it may update
    if (in != kNoValue && graph.value(in).role == Role::kState) return true;
  }
  return node.op == "dropout" || node.layer == "loss";
}

std::vector<char> MirrorChoice(const Graph& g, const TrainingGraph& t) {
  std::vector<char> choice(static_cast<size_t>(g.num_nodes()), 0);
  for (size_t pos = 0; pos < t.forward_nodes; ++pos) {
    const Node& n = g.node(g.schedule[pos]);
    choice[static_cast<size_t>(g.schedule[pos])] =
        !IsComputeHeavy(g, n) && !MustNotRecompute(g, n) && n.op != "concat";
  }
  return choice;
}

Result<RecomputeResult> ApplyRecomputation(Graph* g, const TrainingGraph& t,
                                           const std::vector<char>& recompute) {
  const std::vector<NodeId> backward(
      g->schedule.begin() + static_cast<std::ptrdiff_t>(t.forward_nodes), g->schedule.end());
  // Values the backward pass reads, to decide which recomputed nodes are worth cloning.
  std::vector<char> read_backward(static_cast<size_t>(g->num_values()), 0);
  for (NodeId id : backward) {
    for (ValueId in : g->node(id).inputs) {
      if (in != kNoValue) read_backward[static_cast<size_t>(in)] = 1;
    }
  }
  std::vector<ValueId> clone(static_cast<size_t>(g->num_values()), kNoValue);
  RecomputeResult result;
  // Reverse forward order: a node is cloned if the backward pass or a later clone reads an
  // output it recomputes; then its inputs are needed too. Other clones would be dead.
  std::vector<char> needed = read_backward;
  std::vector<char> cloned(static_cast<size_t>(g->num_nodes()), 0);
  int32_t new_values = 0, new_nodes = 0;
  for (size_t pos = t.forward_nodes; pos-- > 0;) {
    const NodeId id = g->schedule[pos];
    if (!recompute[static_cast<size_t>(id)]) continue;
    const Node& n = g->node(id);
    int32_t outputs = 0;
    bool wanted = false;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (!RecomputesOutput(n, k)) continue;
      ++outputs;
      wanted = wanted || needed[static_cast<size_t>(n.outputs[k])];
    }
    if (!wanted) continue;
    cloned[static_cast<size_t>(id)] = 1;
    new_values += outputs;
    ++new_nodes;
    for (ValueId in : n.inputs) {
      if (in != kNoValue) needed[static_cast<size_t>(in)] = 1;
    }
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
      copy.inputs = {original.inputs[0], original.inputs[1], original.inputs[2],
                     original.outputs[1], original.outputs[2]};
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
