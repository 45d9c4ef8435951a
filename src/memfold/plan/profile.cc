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
      if (in != kNoValue && layer[static_cast<size_t>(in)].empty())
        layer[static_cast<size_t>(in)] = LayerOf(g, id);
    }
  }
  for (std::string& l : layer) l = l.empty() ? "other" : l;
  return layer;
}

enum class ArenaKind { kFeatureMap, kGradient, kWorkspace };

// Scratch is workspace; values the forward pass produced (graph inputs included) are feature
// maps; values the backward pass produced are gradients.
ArenaKind KindOf(const Graph& g, const Liveness& live, const std::vector<char>& forward,
                 int32_t request) {
  const ValueId v = live.value_of[static_cast<size_t>(request)];
  if (v == kNoValue) return ArenaKind::kWorkspace;
  const NodeId producer = g.value(v).producer;
  return producer == kNoNode || forward[static_cast<size_t>(producer)] ? ArenaKind::kFeatureMap
                                                                       : ArenaKind::kGradient;
}

// The live bytes of each kind at every step: a difference array per kind and its prefix sums.
void LiveBytesByKind(const Graph& g, const Liveness& live, const std::vector<char>& forward,
                     MemoryProfile* profile) {
  std::vector<int64_t>* curves[] = {&profile->live_feature_maps, &profile->live_gradients,
                                    &profile->live_workspace};
  const size_t steps = profile->live_bytes.size();
  for (std::vector<int64_t>* curve : curves) curve->assign(steps + 1, 0);
  for (const BufferRequest& r : live.requests) {
    std::vector<int64_t>& curve = *curves[static_cast<int>(KindOf(g, live, forward, r.id))];
    curve[static_cast<size_t>(r.first)] += r.bytes;
    curve[static_cast<size_t>(r.last) + 1] -= r.bytes;
  }
  for (std::vector<int64_t>* curve : curves) {
    for (size_t t = 1; t < curve->size(); ++t) (*curve)[t] += (*curve)[t - 1];
    curve->pop_back();
  }
}

enum class Persistence { kNone, kWeights, kOptimizer };

// Where a value's bytes count outside the arena. In-place updates (values with a producer)
// alias their inputs and count nowhere.
Persistence PersistenceOf(const Value& value) {
  if (value.producer != kNoNode) return Persistence::kNone;
  if (value.role == Role::kOptimizerState) return Persistence::kOptimizer;
  if (value.role == Role::kWeight || value.role == Role::kState) return Persistence::kWeights;
  return Persistence::kNone;
}

}  // namespace

MemoryProfile ProfileMemory(const Graph& g, size_t forward_nodes, const GraphPlan& gp) {
  MemoryProfile profile;
  const Liveness& live = gp.liveness;
  std::vector<char> forward(static_cast<size_t>(g.num_nodes()), 0);
  for (size_t pos = 0; pos < forward_nodes && pos < g.schedule.size(); ++pos)
    forward[static_cast<size_t>(g.schedule[pos])] = 1;
  profile.live_bytes = LiveBytesPerStep(live);
  profile.peak_time =
      static_cast<int32_t>(std::max_element(profile.live_bytes.begin(), profile.live_bytes.end()) -
                           profile.live_bytes.begin());
  const std::vector<std::string> reader_layer = ReaderLayers(g);
  // Bytes an output shares with its dying input at the peak step count once, for the output.
  std::vector<int64_t> shared(live.requests.size(), 0);
  for (const BufferRequest& r : live.requests) {
    if (r.first != profile.peak_time) continue;
    const int64_t overlap = OverlapBytes(gp, r.id);
    for (const OverlapAllowance& a : r.may_overlap)
      shared[static_cast<size_t>(a.input)] =
          std::max(shared[static_cast<size_t>(a.input)], overlap);
  }
  MemoryBreakdown& b = profile.breakdown;
  int64_t occupied = 0;
  for (const BufferRequest& r : live.requests) {
    if (r.first > profile.peak_time || r.last < profile.peak_time) continue;
    const int64_t bytes = r.bytes - shared[static_cast<size_t>(r.id)];
    occupied += bytes;
    const ValueId v = live.value_of[static_cast<size_t>(r.id)];
    switch (KindOf(g, live, forward, r.id)) {
      case ArenaKind::kFeatureMap:
        b.feature_maps += bytes;
        break;
      case ArenaKind::kGradient:
        b.gradients += bytes;
        break;
      case ArenaKind::kWorkspace:
        b.workspace += bytes;
        break;
    }
    std::string layer = "workspace";
    if (v != kNoValue) {
      const NodeId producer = g.value(v).producer;
      layer = producer == kNoNode ? "input" : LayerOf(g, producer);
    }
    profile.by_layer_type[layer] += bytes;
  }
  LiveBytesByKind(g, live, forward, &profile);
  b.fragmentation = gp.plan.arena_bytes - occupied;
  for (ValueId v = 0; v < g.num_values(); ++v) {
    switch (PersistenceOf(g.value(v))) {
      case Persistence::kOptimizer:
        b.optimizer += g.value(v).bytes();
        break;
      case Persistence::kWeights:
        b.weights += g.value(v).bytes();
        profile.by_layer_type[reader_layer[static_cast<size_t>(v)]] += g.value(v).bytes();
        break;
      case Persistence::kNone:
        break;
    }
  }
  return profile;
}

int64_t PersistentBytes(const Graph& g) {
  int64_t bytes = 0;
  for (ValueId v = 0; v < g.num_values(); ++v) {
    if (PersistenceOf(g.value(v)) != Persistence::kNone) bytes += g.value(v).bytes();
  }
  return bytes;
}

}  // namespace memfold
