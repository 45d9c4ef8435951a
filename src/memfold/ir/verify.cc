#include "memfold/ir/verify.h"

#include <algorithm>
#include <string>
#include <vector>

namespace memfold {
namespace {

std::string ValueLabel(const Graph& g, ValueId id) {
  return "value " + std::to_string(id) + " '" + g.value(id).name + "'";
}

// "node 3 'conv1' (conv2d)": the id tells nodes with the same name apart (TFLite does not
// require unique names; imported nodes are named after their first output).
std::string NodeLabel(const Graph& g, NodeId id) {
  const Node& node = g.node(id);
  return "node " + std::to_string(id) + " '" + node.name + "' (" + node.op + ")";
}

Status CheckValues(const Graph& g) {
  for (ValueId v = 0; v < g.num_values(); ++v) {
    const Value& value = g.value(v);
    for (int64_t dim : value.shape) {
      if (dim < 0) return Status::Error(ValueLabel(g, v) + " has a negative dimension");
    }
    if (value.is_constant() && static_cast<int64_t>(value.data->size()) != value.bytes()) {
      return Status::Error(ValueLabel(g, v) + " holds " + std::to_string(value.data->size()) +
                           " bytes but its type needs " + std::to_string(value.bytes()));
    }
    if (value.producer != kNoNode && (value.producer < 0 || value.producer >= g.num_nodes())) {
      return Status::Error(ValueLabel(g, v) + " names a producer that does not exist");
    }
  }
  return Status::Ok();
}

Status CheckEdges(const Graph& g) {
  std::vector<int> produced_by(static_cast<size_t>(g.num_values()), kNoNode);
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    const Node& node = g.node(n);
    for (ValueId out : node.outputs) {
      if (out < 0 || out >= g.num_values()) {
        return Status::Error(NodeLabel(g, n) + " writes a value id out of range");
      }
      if (produced_by[static_cast<size_t>(out)] != kNoNode) {
        return Status::Error(ValueLabel(g, out) + " is produced by two nodes");
      }
      if (g.value(out).producer != n) {
        return Status::Error(ValueLabel(g, out) + " does not record " + NodeLabel(g, n) +
                             " as its producer");
      }
      produced_by[static_cast<size_t>(out)] = n;
    }
    for (ValueId in : node.inputs) {
      if (in != kNoValue && (in < 0 || in >= g.num_values())) {
        return Status::Error(NodeLabel(g, n) + " reads a value id out of range");
      }
    }
  }
  for (ValueId v : g.inputs) {
    if (v < 0 || v >= g.num_values()) return Status::Error("graph input id out of range");
    if (g.value(v).producer != kNoNode)
      return Status::Error(ValueLabel(g, v) + " is a graph input but is also produced by a node");
  }
  for (ValueId v : g.outputs) {
    if (v < 0 || v >= g.num_values()) return Status::Error("graph output id out of range");
  }
  return Status::Ok();
}

// Whether a value holds data without being fed: produced, constant, or memory the runtime
// provides (weights, state, optimizer state, workspace).
bool HasContents(const Value& value) {
  return value.producer != kNoNode || value.is_constant() || value.role == Role::kWeight ||
         value.role == Role::kState || value.role == Role::kOptimizerState ||
         value.role == Role::kWorkspace;
}

// Node `n` reads `in` before anything produced it: its own output, a cycle, or an order to fix.
Status ReadTooEarly(const Graph& g, NodeId n, ValueId in) {
  const NodeId producer = g.value(in).producer;
  if (producer == n) {
    return Status::Error(NodeLabel(g, n) + " reads its own output " + ValueLabel(g, in) +
                         "; a graph must be acyclic");
  }
  return Status::Error(NodeLabel(g, n) + " reads " + ValueLabel(g, in) +
                       " before it is produced (a cycle, or operators out of order: each must "
                       "come after the producers of its inputs)");
}

Status CheckSchedule(const Graph& g) {
  if (static_cast<int32_t>(g.schedule.size()) != g.num_nodes()) {
    return Status::Error("the schedule lists " + std::to_string(g.schedule.size()) +
                         " nodes but the graph has " + std::to_string(g.num_nodes()));
  }
  std::vector<char> ready(static_cast<size_t>(g.num_values()), 0);
  for (ValueId v = 0; v < g.num_values(); ++v) {
    if (g.value(v).is_constant() || g.value(v).producer == kNoNode)
      ready[static_cast<size_t>(v)] = 1;
  }
  std::vector<char> seen(static_cast<size_t>(g.num_nodes()), 0);
  for (NodeId n : g.schedule) {
    if (n < 0 || n >= g.num_nodes() || seen[static_cast<size_t>(n)]) {
      return Status::Error("the schedule is not a permutation of the nodes (node " +
                           std::to_string(n) + ")");
    }
    seen[static_cast<size_t>(n)] = 1;
    const Node& node = g.node(n);
    for (ValueId in : node.inputs) {
      if (in != kNoValue && !ready[static_cast<size_t>(in)]) return ReadTooEarly(g, n, in);
    }
    for (ValueId out : node.outputs) ready[static_cast<size_t>(out)] = 1;
  }
  // A value that is read must be fed: produced, constant, state, workspace or a graph input.
  std::vector<char> fed(static_cast<size_t>(g.num_values()), 0);
  for (ValueId v : g.inputs) fed[static_cast<size_t>(v)] = 1;
  for (NodeId n : g.schedule) {
    for (ValueId in : g.node(n).inputs) {
      if (in == kNoValue || fed[static_cast<size_t>(in)] || HasContents(g.value(in))) continue;
      return Status::Error(ValueLabel(g, in) + " is read by " + NodeLabel(g, n) +
                           " but is neither produced, constant nor a graph input");
    }
  }
  // The caller reads the outputs: each must be written by something (found by the fuzzer: a
  // file whose operator list was cut short returned its outputs' uninitialised memory).
  for (ValueId v : g.outputs) {
    if (fed[static_cast<size_t>(v)] || HasContents(g.value(v))) continue;
    return Status::Error(
        "graph output " + ValueLabel(g, v) +
        " is never produced: no operator writes it and it is no input or constant");
  }
  return Status::Ok();
}

// A streamed value is a graph input that only slices read: the runtime fetches the box each
// slice asks for, and the value itself is never in memory.
Status CheckStreamed(const Graph& g) {
  for (ValueId v = 0; v < g.num_values(); ++v) {
    if (g.value(v).role == Role::kStreamed &&
        std::find(g.inputs.begin(), g.inputs.end(), v) == g.inputs.end())
      return Status::Error(ValueLabel(g, v) + " is streamed but is no graph input");
  }
  for (NodeId n : g.schedule) {
    const Node& node = g.node(n);
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const ValueId in = node.inputs[k];
      if (in == kNoValue || g.value(in).role != Role::kStreamed) continue;
      if (node.op != "slice" || k != 0 ||
          std::find(g.outputs.begin(), g.outputs.end(), in) != g.outputs.end())
        return Status::Error(NodeLabel(g, n) + " reads the streamed input " + ValueLabel(g, in) +
                             " directly; only slices may (they fetch boxes of it)");
    }
  }
  return Status::Ok();
}

}  // namespace

Status VerifyGraph(const Graph& graph) {
  MF_RETURN_IF_ERROR(CheckValues(graph));
  MF_RETURN_IF_ERROR(CheckEdges(graph));
  MF_RETURN_IF_ERROR(CheckStreamed(graph));
  return CheckSchedule(graph);
}

}  // namespace memfold
