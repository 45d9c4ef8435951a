// The re-ordering search's cost model: what a node's step costs in any order, from
// order-independent facts (buffers, overlap savings, dependences, ancestors, a lower bound).
// Internal to the re-ordering search (passes/schedule.h, which documents the method); the
// model's construction is schedule_model.cc, the per-step queries the searches call in their
// inner loops stay inline here.
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

class StepModel {
 public:
  // With at most `closure_nodes` nodes, the model keeps every node's ancestors and
  // descendants (N^2 / 8 bytes): they sharpen the lower bound and spare O_s evaluations of
  // inputs that cannot die at a node in any order.
  StepModel(const Graph& graph, OverlapSource source, int32_t closure_nodes);

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
  int64_t LowerBound() const;

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

  void MarkBuffer(const Liveness& live, ValueId v, bool BufferInfo::*flag);

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
  void DescribeNode(const Graph& graph, const Liveness& live, NodeId id);

  // The node's overlap candidates, as AddOverlapAllowances finds them: output 0 of a non-alias
  // op with a model of `source`, each input with a buffer of its own and O_s > 0. Whether the
  // output is created and the input dies at the node depends on the order and is decided per
  // step; pairs for which no order does are skipped (their O_s is never needed).
  void AddOverlapCandidates(const Graph& graph, const Liveness& live, OverlapSource source,
                            NodeId id);

  // Data dependences, and the file's order among the nodes that touch storage written in place.
  void AddDependences(const Graph& graph, const SharedStorage& shared);

  // Bit sets of every node's ancestors, walking the dependences in a topological order (Kahn's
  // algorithm). O(N^2 / 64 + E N / 64).
  std::vector<std::vector<uint64_t>> Ancestors() const;

  std::vector<NodeInfo> nodes_;
  std::vector<BufferInfo> buffers_;
  std::vector<std::vector<uint64_t>> ancestors_;  // per node, a bit set; empty above closure_nodes
  int64_t start_bytes_ = 0, end_bytes_ = 0, initial_live_ = 0;
};

}  // namespace memfold::schedule_detail
