#include "memfold/plan/profile.h"

#include <algorithm>

namespace memfold {
namespace {

std::string LayerOf(const Graph& g, NodeId n) {
  const std::string& layer = g.node(n).layer;
  return layer.empty() ? "other" : layer;
}

// The layer type of the first node that reads `v` (for weights), or "other".
std::vector<std::string> ReaderLayers(const Graph& g) {
  std::vector<std::string> layer(static_cast<size_t>(g.num_values()));
  for (NodeId id : g.schedule) {
    for (ValueId in : g.node(id).inputs) {
      if (in != kNoValue && layer[static_cast<size_t>(in)].empty()) layer[static_cast<size_t>(in)] = LayerOf(g, id);
    }
  }
  for (std::string& l : layer) l = l.empty() ? "other" : l;
  return layer;
}

}  // namespace

MemoryProfile ProfileMemory(const Graph& g, size_t forward_nodes, const GraphPlan& gp) {
  MemoryProfile profile;
  const Liveness& live = gp.liveness;
  std::vector<char> forward(static_cast<size_t>(g.num_nodes()), 0);
  for (size_t pos = 0; pos < forward_nodes && pos < g.schedule.size(); ++pos) forward[static_cast<size_t>(g.schedule[pos])] = 1;
  profile.live_bytes = LiveBytesPerStep(live);
  profile.peak_time = static_cast<int32_t>(std::max_element(profile.live_bytes.begin(), profile.live_bytes.end()) - profile.live_bytes.begin());
  const std::vector<std::string> reader_layer = ReaderLayers(g);
  // Bytes an output shares with its dying input at the peak step count once, for the output.
  std::vector<int64_t> shared(live.requests.size(), 0);
  for (const BufferRequest& r : live.requests) {
    if (r.first != profile.peak_time) continue;
    const int64_t overlap = OverlapBytes(gp, r.id);
    for (const OverlapAllowance& a : r.may_overlap) shared[static_cast<size_t>(a.input)] = std::max(shared[static_cast<size_t>(a.input)], overlap);
  }
  MemoryBreakdown& b = profile.breakdown;
  int64_t occupied = 0;
  for (const BufferRequest& r : live.requests) {
    if (r.first > profile.peak_time || r.last < profile.peak_time) continue;
    const int64_t bytes = r.bytes - shared[static_cast<size_t>(r.id)];
    occupied += bytes;
    const ValueId v = live.value_of[static_cast<size_t>(r.id)];
    std::string layer = "workspace";
    if (v == kNoValue) {
      b.workspace += bytes;
    } else {
      const NodeId producer = g.value(v).producer;
      if (producer == kNoNode || forward[static_cast<size_t>(producer)]) b.feature_maps += bytes;
      else b.gradients += bytes;
      layer = producer == kNoNode ? "input" : LayerOf(g, producer);
    }
    profile.by_layer_type[layer] += bytes;
  }
  b.fragmentation = gp.plan.arena_bytes - occupied;
  for (ValueId v = 0; v < g.num_values(); ++v) {
    const Value& value = g.value(v);
    if (value.producer != kNoNode) continue;  // in-place updates alias their inputs
    if (value.role == Role::kOptimizerState) {
      b.optimizer += value.bytes();
    } else if (value.role == Role::kWeight || value.role == Role::kState) {
      b.weights += value.bytes();
      profile.by_layer_type[reader_layer[static_cast<size_t>(v)]] += value.bytes();
    }
  }
  return profile;
}

}  // namespace memfold
