// The re-ordering search's cost model: what a node's step costs in any order, from
// order-independent facts (buffers, overlap savings, dependences, ancestors, a lower bound).
// Internal to the re-ordering search (passes/schedule.h, which documents the method); in its
// own namespace so that the pieces can be read one at a time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <optional>
#include <vector>

#include "memfold/ir/graph.h"
#include "memfold/ops/registry.h"
#include "memfold/placement/lower_bound.h"
#include "memfold/plan/liveness.h"
#include "memfold/plan/overlap_allowances.h"
#include "memfold/plan/shared_storage.h"

namespace memfold::schedule_detail {

// ---------------------------------------------------------------------------------------------
// The cost model: what every order's step at a node costs, from order-independent facts.

// An arena buffer (a liveness request that belongs to a value) as the search sees it.
struct BufferInfo {
  int64_t size = 0;              // occupied bytes: payload rounded up to its alignment
  bool from_start = false;       // a graph input: live from step 0
  bool to_end = false;           // a graph output: live through the last step
  std::vector<NodeId> touchers;  // nodes that read or write it (through any alias), once each
};

// An input whose buffer output 0 may overlap when the input dies at the node.
struct OverlapCandidate {
  int32_t input;   // index into NodeInfo::buffers
  int64_t saving;  // what LowerBoundWithOverlaps subtracts for it alone (PlannerSaving)
};

struct NodeInfo {
  std::vector<int32_t> buffers;  // distinct arena buffers the node reads or writes
  int32_t output = -1;           // index into `buffers` of output 0, if it may take an overlap
  std::vector<OverlapCandidate> overlaps;
  int64_t scratch = 0;        // occupied bytes of its scratch buffers
  std::vector<NodeId> preds;  // nodes that must run before it, distinct
  std::vector<NodeId> succs;  // nodes that must run after it, distinct
};

struct Step {
  int64_t cost;        // bytes live at the node's step, net of the overlap saving
  int64_t live_after;  // bytes live between this step and the next
};

inline void AddUnique(std::vector<int32_t>* list, int32_t item) {
  if (std::find(list->begin(), list->end(), item) == list->end()) list->push_back(item);
}

// What LowerBoundWithOverlaps subtracts at the step where `out` is created over `in` (which
// dies there) with an allowance of `os` bytes, asked of that function itself: the two
// buffers, one allowance, and a filler live only at that step, large enough that the step
// sets the bound. So the search follows the planner's rule (alignment padding and all) as it
// is, and as it changes. O(1).
inline int64_t PlannerSaving(const BufferRequest& in, const BufferRequest& out, int64_t os) {
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

class StepModel {
 public:
  // With at most `closure_nodes` nodes, the model keeps every node's ancestors and
  // descendants (N^2 / 8 bytes): they sharpen the lower bound and spare O_s evaluations of
  // inputs that cannot die at a node in any order.
  StepModel(const Graph& graph, OverlapSource source, int32_t closure_nodes) {
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

  int32_t num_nodes() const { return static_cast<int32_t>(nodes_.size()); }
  const NodeInfo& node(NodeId id) const { return nodes_[static_cast<size_t>(id)]; }
  // The peak of the steps no order changes: step 0 (graph inputs) and the last (outputs).
  int64_t fixed_peak() const { return std::max(start_bytes_, end_bytes_); }
  int64_t initial_live() const { return initial_live_; }

  // The step of node `id`, given the bytes live before it and which nodes ran before it.
  template <typename RanBefore>
  Step StepOf(NodeId id, int64_t live, const RanBefore& ran) const {
    const NodeInfo& info = node(id);
    int64_t created = 0, freed = 0;
    for (int32_t b : info.buffers) {
      const BufferInfo& buffer = buffers_[static_cast<size_t>(b)];
      if (!Exists(buffer, ran)) created += buffer.size;
      if (!Survives(buffer, id, ran)) freed += buffer.size;
    }
    // The output may lie over every input that dies here (LowerBoundWithOverlaps): the
    // savings add up, to at most the output's size.
    int64_t saving = 0;
    if (info.output >= 0 && !Exists(BufferAt(info, info.output), ran)) {
      for (const OverlapCandidate& c : info.overlaps) {
        if (!Survives(BufferAt(info, c.input), id, ran)) saving += c.saving;
      }
      saving = std::min(saving, BufferAt(info, info.output).size);
    }
    return {live + created + info.scratch - saving, live + created - freed};
  }

  // Every step of a complete order, in order.
  std::vector<Step> StepsOf(const std::vector<NodeId>& order) const {
    std::vector<int32_t> position(order.size());
    for (size_t i = 0; i < order.size(); ++i)
      position[static_cast<size_t>(order[i])] = static_cast<int32_t>(i);
    std::vector<Step> steps;
    steps.reserve(order.size());
    int64_t live = initial_live_;
    for (size_t i = 0; i < order.size(); ++i) {
      const auto here = static_cast<int32_t>(i);
      steps.push_back(StepOf(order[i], live,
                             [&](NodeId m) { return position[static_cast<size_t>(m)] < here; }));
      live = steps.back().live_after;
    }
    return steps;
  }

  int64_t PeakOf(const std::vector<NodeId>& order) const {
    int64_t peak = fixed_peak();
    for (const Step& step : StepsOf(order)) peak = std::max(peak, step.cost);
    return peak;
  }

  // No order has a smaller peak. Per node: the buffers every order keeps live at its step (one
  // of their nodes is an ancestor or the node itself, and one a descendant or the node itself),
  // its scratch, less the largest saving of an input that may die there. Without the
  // ancestor sets only the node's own buffers count. O(N * B * touchers).
  int64_t LowerBound() const {
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
        const bool live_before = buffer.from_start || std::any_of(buffer.touchers.begin(),
                                                                  buffer.touchers.end(), before);
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

  static bool TestBit(const std::vector<uint64_t>& bits, NodeId m) {
    return (bits[static_cast<size_t>(m) / 64] >> (static_cast<size_t>(m) % 64) & 1) != 0;
  }

 private:
  const BufferInfo& BufferAt(const NodeInfo& info, int32_t index) const {
    return buffers_[static_cast<size_t>(info.buffers[static_cast<size_t>(index)])];
  }

  // Whether the buffer is live before the node runs: a graph input, or touched already.
  template <typename RanBefore>
  static bool Exists(const BufferInfo& buffer, const RanBefore& ran) {
    return buffer.from_start || std::any_of(buffer.touchers.begin(), buffer.touchers.end(), ran);
  }
  // Whether the buffer is still live after node `id`: a graph output, or touched later.
  template <typename RanBefore>
  static bool Survives(const BufferInfo& buffer, NodeId id, const RanBefore& ran) {
    return buffer.to_end || std::any_of(buffer.touchers.begin(), buffer.touchers.end(),
                                        [&](NodeId m) { return m != id && !ran(m); });
  }

  void MarkBuffer(const Liveness& live, ValueId v, bool BufferInfo::*flag) {
    const int32_t b = live.buffer_of[static_cast<size_t>(v)];
    if (b != kNoBuffer) buffers_[static_cast<size_t>(b)].*flag = true;
  }

  bool has_closure() const { return !ancestors_.empty(); }
  // Whether every order runs `first` before (or as) `then`: equal, or an ancestor of it (known
  // only with the ancestor sets).
  bool AlwaysBefore(NodeId first, NodeId then) const {
    return first == then ||
           (has_closure() && TestBit(ancestors_[static_cast<size_t>(then)], first));
  }
  // Whether some order lets the buffer die at node `id` (no other node of it must run later).
  bool MayDieAt(const BufferInfo& buffer, NodeId id) const {
    return !buffer.to_end && std::none_of(buffer.touchers.begin(), buffer.touchers.end(),
                                          [&](NodeId m) { return m != id && AlwaysBefore(id, m); });
  }
  // Whether some order creates the buffer at node `id` (no other node of it must run earlier).
  bool MayBeCreatedAt(const BufferInfo& buffer, NodeId id) const {
    return !buffer.from_start &&
           std::none_of(buffer.touchers.begin(), buffer.touchers.end(),
                        [&](NodeId m) { return m != id && AlwaysBefore(m, id); });
  }

  // The node's buffers (and it among their touchers) and scratch.
  void DescribeNode(const Graph& graph, const Liveness& live, NodeId id) {
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

  // The node's overlap candidates, as AddOverlapAllowances finds them: output 0 of a non-alias
  // op with a model of `source`, each input with a buffer of its own and O_s > 0. Whether the
  // output is created and the input dies at the node depends on the order and is decided per
  // step; pairs for which no order does are skipped (their O_s is never needed).
  void AddOverlapCandidates(const Graph& graph, const Liveness& live, OverlapSource source,
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
      if (in == kNoBuffer || in == out || !MayDieAt(buffers_[static_cast<size_t>(in)], id))
        continue;
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

  // Data dependences, and the file's order among the nodes that touch storage written in place.
  void AddDependences(const Graph& graph, const SharedStorage& shared) {
    auto depend = [&](NodeId before, NodeId after) {
      if (before == after) return;
      AddUnique(&nodes_[static_cast<size_t>(after)].preds, before);
      AddUnique(&nodes_[static_cast<size_t>(before)].succs, after);
    };
    for (NodeId id = 0; id < num_nodes(); ++id) {
      for (ValueId v : graph.node(id).inputs) {
        if (v != kNoValue && graph.value(v).producer != kNoNode)
          depend(graph.value(v).producer, id);
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

  // Bit sets of every node's ancestors, walking the dependences in a topological order (Kahn's
  // algorithm). O(N^2 / 64 + E N / 64).
  std::vector<std::vector<uint64_t>> Ancestors() const {
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

  std::vector<NodeInfo> nodes_;
  std::vector<BufferInfo> buffers_;
  std::vector<std::vector<uint64_t>> ancestors_;  // per node, a bit set; empty above closure_nodes
  int64_t start_bytes_ = 0, end_bytes_ = 0, initial_live_ = 0;
};

}  // namespace memfold::schedule_detail
