#include "memfold/passes/schedule_model.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>

#include "memfold/placement/lower_bound.h"
#include "memfold/plan/overlap_allowances.h"

namespace memfold::schedule_detail {
namespace {

void AddUnique(std::vector<int32_t>* list, int32_t item) {
  if (std::find(list->begin(), list->end(), item) == list->end()) list->push_back(item);
}

// What LowerBoundWithOverlaps subtracts at the step where `out` is created over `in` (which
// dies there) with an allowance of `os` bytes, asked of that function itself: the two
// buffers, one allowance, and a filler live only at that step, large enough that the step
// sets the bound. So the search follows the planner's rule (alignment padding and all) as it
// is, and as it changes. O(1).
int64_t PlannerSaving(const BufferRequest& in, const BufferRequest& out, int64_t os) {
  auto request = [](int32_t id, int64_t bytes, int64_t alignment, int32_t first, int32_t last) {
    return BufferRequest{.id = id,
                         .bytes = bytes,
                         .alignment = alignment,
                         .first = first,
                         .last = last,
                         .may_overlap = {}};
  };
  const int64_t in_size = AlignUp(in.bytes, in.alignment),
                out_size = AlignUp(out.bytes, out.alignment);
  const int64_t filler = in_size + out_size + kArenaAlignment;
  std::vector<BufferRequest> requests = {request(0, in.bytes, in.alignment, 0, 1),
                                         request(1, out.bytes, out.alignment, 1, 2),
                                         request(2, filler, kArenaAlignment, 1, 1)};
  requests[1].may_overlap.push_back({0, os});
  return in_size + out_size + filler - LowerBoundWithOverlaps(requests);
}

// The saving an input allows, or 0 without a model. O_s comes from the `source` model, except
// where the cheap analytic model already yields the largest saving any O_s could: the analytic
// models never exceed the algorithmic ones (ops/overlap_models.h) and a larger allowance never
// saves less, so the algorithmic replay (O(output elements)) could not change the answer.
int64_t InputSaving(const Graph& graph, const Node& node, const OpDef& def, OverlapSource source,
                    int input, const BufferRequest& in, const BufferRequest& out) {
  auto saving = [&](std::optional<int64_t> os) {
    return os && *os > 0 ? PlannerSaving(in, out, *os) : 0;
  };
  if (source == OverlapSource::kAlgorithmic && def.overlap_analytic != nullptr) {
    const int64_t most =
        PlannerSaving(in, out, AlignUp(in.bytes, in.alignment) + AlignUp(out.bytes, out.alignment));
    const int64_t analytic = saving(def.overlap_analytic(graph, node, input));
    if (analytic == most) return most;
  }
  const OverlapFn model =
      source == OverlapSource::kAnalytic ? def.overlap_analytic : def.overlap_algorithmic;
  return saving(model(graph, node, input));
}

}  // namespace

StepModel::StepModel(const Graph& graph, OverlapSource source, int32_t closure_nodes) {
  const Liveness live = ComputeLiveness(graph);
  const int32_t n = graph.num_nodes();
  nodes_.resize(static_cast<size_t>(n));
  buffers_.resize(live.requests.size());
  for (const BufferRequest& r : live.requests) {
    buffers_[static_cast<size_t>(r.id)].size = AlignUp(r.bytes, r.alignment);
  }
  for (ValueId v : graph.inputs) MarkBuffer(live, v, &BufferInfo::from_start);
  for (ValueId v : graph.outputs) MarkBuffer(live, v, &BufferInfo::to_end);
  for (NodeId id = 0; id < n; ++id) DescribeNode(graph, live, id);
  AddDependences(graph, live.shared);
  if (n <= closure_nodes) ancestors_ = Ancestors();
  for (NodeId id = 0; id < n; ++id) AddOverlapCandidates(graph, live, source, id);
  for (const BufferInfo& b : buffers_) {
    if (b.from_start) start_bytes_ += b.size;
    if (b.to_end) end_bytes_ += b.size;
    if (b.from_start && (b.to_end || !b.touchers.empty())) initial_live_ += b.size;
  }
}

int64_t StepModel::LowerBound() const {
  int64_t bound = fixed_peak();
  std::vector<int32_t> all(has_closure() ? buffers_.size() : 0);
  std::iota(all.begin(), all.end(), 0);
  for (NodeId id = 0; id < num_nodes(); ++id) {
    const NodeInfo& info = node(id);
    auto before = [&](NodeId m) { return AlwaysBefore(m, id); };
    auto after = [&](NodeId m) { return AlwaysBefore(id, m); };
    int64_t forced = info.scratch;
    for (int32_t b : has_closure() ? all : info.buffers) {
      const BufferInfo& buffer = buffers_[static_cast<size_t>(b)];
      const bool live_before =
          buffer.from_start || std::any_of(buffer.touchers.begin(), buffer.touchers.end(), before);
      const bool live_after =
          buffer.to_end || std::any_of(buffer.touchers.begin(), buffer.touchers.end(), after);
      if (live_before && live_after) forced += buffer.size;
    }
    int64_t saving = 0;
    for (const OverlapCandidate& c : info.overlaps) saving += c.saving;
    if (info.output >= 0) saving = std::min(saving, BufferAt(info, info.output).size);
    bound = std::max(bound, forced - saving);
  }
  return bound;
}

void StepModel::MarkBuffer(const Liveness& live, ValueId v, bool BufferInfo::*flag) {
  const int32_t b = live.buffer_of[static_cast<size_t>(v)];
  if (b != kNoBuffer) buffers_[static_cast<size_t>(b)].*flag = true;
}

void StepModel::DescribeNode(const Graph& graph, const Liveness& live, NodeId id) {
  const Node& node = graph.node(id);
  NodeInfo& info = nodes_[static_cast<size_t>(id)];
  for (const std::vector<ValueId>* values : {&node.inputs, &node.outputs}) {
    for (ValueId v : *values) {
      const int32_t b = v == kNoValue ? kNoBuffer : live.buffer_of[static_cast<size_t>(v)];
      if (b == kNoBuffer) continue;
      AddUnique(&info.buffers, b);
      AddUnique(&buffers_[static_cast<size_t>(b)].touchers, id);
    }
  }
  for (int32_t r : live.scratch_of[static_cast<size_t>(id)]) {
    const BufferRequest& request = live.requests[static_cast<size_t>(r)];
    info.scratch += AlignUp(request.bytes, request.alignment);
  }
}

void StepModel::AddOverlapCandidates(const Graph& graph, const Liveness& live, OverlapSource source,
                                     NodeId id) {
  const Node& node = graph.node(id);
  NodeInfo& info = nodes_[static_cast<size_t>(id)];
  const OpDef* def = OpOf(node);
  if (def == nullptr || def->alias || node.outputs.empty()) return;
  const OverlapFn model =
      source == OverlapSource::kAnalytic ? def->overlap_analytic : def->overlap_algorithmic;
  auto buffer_of = [&](ValueId v) {
    return v == kNoValue ? kNoBuffer : live.buffer_of[static_cast<size_t>(v)];
  };
  const int32_t out = buffer_of(node.outputs[0]);
  if (model == nullptr || out == kNoBuffer ||
      !MayBeCreatedAt(buffers_[static_cast<size_t>(out)], id))
    return;
  auto index_of = [&](int32_t b) {
    return static_cast<int32_t>(std::find(info.buffers.begin(), info.buffers.end(), b) -
                                info.buffers.begin());
  };
  info.output = index_of(out);
  std::map<int32_t, int64_t> saving_of;  // per input buffer: the least over its slots
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    const int32_t in = buffer_of(node.inputs[k]);
    if (in == kNoBuffer || in == out || !MayDieAt(buffers_[static_cast<size_t>(in)], id)) continue;
    const int64_t saving = InputSaving(graph, node, *def, source, static_cast<int>(k),
                                       live.requests[static_cast<size_t>(in)],
                                       live.requests[static_cast<size_t>(out)]);
    auto [it, fresh] = saving_of.emplace(in, saving);
    if (!fresh) it->second = std::min(it->second, saving);
  }
  for (const auto& [in, saving] : saving_of) {
    if (saving > 0) info.overlaps.push_back({index_of(in), saving});
  }
}

void StepModel::AddDependences(const Graph& graph, const SharedStorage& shared) {
  auto depend = [&](NodeId before, NodeId after) {
    if (before == after) return;
    AddUnique(&nodes_[static_cast<size_t>(after)].preds, before);
    AddUnique(&nodes_[static_cast<size_t>(before)].succs, after);
  };
  for (NodeId id = 0; id < num_nodes(); ++id) {
    for (ValueId v : graph.node(id).inputs) {
      if (v != kNoValue && graph.value(v).producer != kNoNode) depend(graph.value(v).producer, id);
    }
  }
  std::vector<NodeId> last_toucher(shared.root.size(), kNoNode);
  for (NodeId id : graph.schedule) {
    const Node& node = graph.node(id);
    for (const std::vector<ValueId>* values : {&node.inputs, &node.outputs}) {
      for (ValueId v : *values) {
        if (v == kNoValue || !shared.persistent[static_cast<size_t>(v)]) continue;
        const auto r = static_cast<size_t>(shared.root[static_cast<size_t>(v)]);
        if (last_toucher[r] != kNoNode) depend(last_toucher[r], id);
        last_toucher[r] = id;
      }
    }
  }
}

std::vector<std::vector<uint64_t>> StepModel::Ancestors() const {
  const auto n = static_cast<size_t>(num_nodes());
  const size_t words = (n + 63) / 64;
  std::vector<std::vector<uint64_t>> sets(n, std::vector<uint64_t>(words, 0));
  std::vector<int32_t> waiting(n);
  std::vector<NodeId> queue;
  for (size_t id = 0; id < n; ++id) {
    waiting[id] = static_cast<int32_t>(nodes_[id].preds.size());
    if (waiting[id] == 0) queue.push_back(static_cast<NodeId>(id));
  }
  for (size_t head = 0; head < queue.size(); ++head) {
    const auto id = static_cast<size_t>(queue[head]);
    for (NodeId next : nodes_[id].succs) {
      std::vector<uint64_t>& into = sets[static_cast<size_t>(next)];
      for (size_t w = 0; w < words; ++w) into[w] |= sets[id][w];
      into[id / 64] |= uint64_t{1} << (id % 64);
      if (--waiting[static_cast<size_t>(next)] == 0) queue.push_back(next);
    }
  }
  return sets;
}

}  // namespace memfold::schedule_detail
