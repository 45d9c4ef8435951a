#include "memfold/plan/liveness.h"

#include <algorithm>

#include "memfold/ops/registry.h"

namespace memfold {
namespace {

bool NeedsArena(const Value& value) {
  return !value.is_constant() && value.role != Role::kWeight && value.role != Role::kState &&
         value.role != Role::kOptimizerState && value.bytes() > 0;
}

// root[v] = the value whose buffer v uses: itself, unless v is a view (reshape) or an
// in-place update (optimizer step) of another value.
std::vector<ValueId> StorageRoots(const Graph& graph) {
  std::vector<ValueId> root(static_cast<size_t>(graph.num_values()));
  for (ValueId v = 0; v < graph.num_values(); ++v) root[static_cast<size_t>(v)] = v;
  for (NodeId id : graph.schedule) {
    const Node& node = graph.node(id);
    const OpDef* def = FindOp(node.op);
    if (def == nullptr) continue;
    if (def->alias) root[static_cast<size_t>(node.outputs[0])] = root[static_cast<size_t>(node.inputs[0])];
    for (size_t k = 0; k < def->updates_input.size() && k < node.outputs.size(); ++k) {
      const int in = def->updates_input[k];
      if (in >= 0) root[static_cast<size_t>(node.outputs[k])] = root[static_cast<size_t>(node.inputs[static_cast<size_t>(in)])];
    }
  }
  return root;
}

void AddScratchRequests(const Graph& graph, Liveness* live) {
  live->scratch_of.assign(static_cast<size_t>(graph.num_nodes()), {});
  for (size_t pos = 0; pos < graph.schedule.size(); ++pos) {
    const NodeId id = graph.schedule[pos];
    const OpDef* def = FindOp(graph.node(id).op);
    if (def == nullptr || def->scratch == nullptr) continue;
    for (int64_t bytes : def->scratch(graph, graph.node(id))) {
      BufferRequest request;
      request.id = static_cast<int32_t>(live->requests.size());
      request.bytes = bytes;
      request.alignment = kArenaAlignment;
      request.first = request.last = NodeTime(pos);
      live->scratch_of[static_cast<size_t>(id)].push_back(request.id);
      live->value_of.push_back(kNoValue);
      live->requests.push_back(std::move(request));
    }
  }
}

}  // namespace

Liveness ComputeLiveness(const Graph& graph) {
  const auto num_values = static_cast<size_t>(graph.num_values());
  const std::vector<ValueId> root = StorageRoots(graph);
  std::vector<int32_t> first(num_values, -1), last(num_values, -1);
  auto touch = [&](ValueId v, int32_t time) {
    const auto r = static_cast<size_t>(root[static_cast<size_t>(v)]);
    if (first[r] < 0) first[r] = time;
    last[r] = std::max(last[r], time);
  };
  for (ValueId v : graph.inputs) touch(v, 0);
  for (size_t pos = 0; pos < graph.schedule.size(); ++pos) {
    const Node& node = graph.node(graph.schedule[pos]);
    for (ValueId in : node.inputs) {
      if (in != kNoValue) touch(in, NodeTime(pos));
    }
    for (ValueId out : node.outputs) touch(out, NodeTime(pos));
  }
  Liveness live;
  live.end_time = NodeTime(graph.schedule.size());
  for (ValueId v : graph.outputs) touch(v, live.end_time);

  live.buffer_of.assign(num_values, kNoBuffer);
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    const auto i = static_cast<size_t>(v);
    if (root[i] != v || first[i] < 0 || !NeedsArena(graph.value(v))) continue;
    live.buffer_of[i] = static_cast<int32_t>(live.requests.size());
    live.value_of.push_back(v);
    BufferRequest request;
    request.id = static_cast<int32_t>(live.requests.size());
    request.bytes = graph.value(v).bytes();
    request.alignment = kArenaAlignment;
    request.first = first[i];
    request.last = last[i];
    live.requests.push_back(std::move(request));
  }
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    const auto r = static_cast<size_t>(root[static_cast<size_t>(v)]);
    if (root[static_cast<size_t>(v)] != v) live.buffer_of[static_cast<size_t>(v)] = live.buffer_of[r];
  }
  AddScratchRequests(graph, &live);
  return live;
}

std::vector<int64_t> LiveBytesPerStep(const Liveness& live) {
  std::vector<int64_t> bytes(static_cast<size_t>(live.end_time) + 2, 0);
  for (const BufferRequest& r : live.requests) {
    bytes[static_cast<size_t>(r.first)] += r.bytes;
    bytes[static_cast<size_t>(r.last) + 1] -= r.bytes;
  }
  for (size_t t = 1; t < bytes.size(); ++t) bytes[t] += bytes[t - 1];
  bytes.pop_back();
  return bytes;
}

}  // namespace memfold
