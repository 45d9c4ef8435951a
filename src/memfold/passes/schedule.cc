#include "memfold/passes/schedule.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "memfold/ir/verify.h"
#include "memfold/ops/registry.h"
#include "memfold/placement/lower_bound.h"
#include "memfold/plan/liveness.h"
#include "memfold/plan/shared_storage.h"

namespace memfold {
namespace {

constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();
constexpr int64_t kMinBeamWidth = 8;    // states a beam keeps per layer, at least
constexpr int32_t kMinBeamParents = 4;  // states a beam expands per layer, at least

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
    AddDependences(graph);
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
    const OpDef* def = FindOp(node.op);
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
  void AddDependences(const Graph& graph) {
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
    const SharedStorage shared = ComputeSharedStorage(graph);
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

// ---------------------------------------------------------------------------------------------
// The layered search over executed-node sets.

struct StateInfo {
  int64_t peak;         // the least peak of any order of the set found so far
  int64_t live;         // bytes live after the set ran (the same for every order of it)
  int32_t parent;       // state in the previous layer it was reached from
  NodeId node;          // the node that reached it
  int32_t ready_begin;  // its ready nodes: Layer::ready[ready_begin, ready_end)
  int32_t ready_end;
};

// One layer: the states with the same number of executed nodes. Sets are bit sets of
// `words` words each, stored back to back; a hash set finds a state by its bits.
class Layer {
 public:
  explicit Layer(int32_t words)
      : words_(words), index_(16, SetHash{&sets_, words}, SetEqual{&sets_, words}) {}
  Layer(const Layer&) = delete;  // the index's hash and equality point at sets_
  Layer& operator=(const Layer&) = delete;

  int32_t size() const { return static_cast<int32_t>(states.size()); }
  // The first state: nothing executed yet.
  void AddEmptySet(const StateInfo& info) {
    sets_.assign(static_cast<size_t>(words_), 0);
    states.assign(1, info);
    index_.insert(0);
  }
  const uint64_t* set(int32_t s) const {
    return sets_.data() + static_cast<size_t>(s) * static_cast<size_t>(words_);
  }

  // `parent_set` plus `node` as a candidate state: its index, and whether it is new. A new
  // state gets `info`; its caller fills in the ready list.
  std::pair<int32_t, bool> Find(const uint64_t* parent_set, NodeId node) {
    const size_t at = sets_.size();
    sets_.insert(sets_.end(), parent_set, parent_set + words_);
    sets_[at + static_cast<size_t>(node) / 64] |= uint64_t{1} << (static_cast<size_t>(node) % 64);
    const auto candidate = static_cast<int32_t>(states.size());
    auto found = index_.find(candidate);
    if (found != index_.end()) {
      sets_.resize(at);
      return {*found, false};
    }
    states.push_back({});
    index_.insert(candidate);
    return {candidate, true};
  }

  // Orders the states by (peak, live), first found first on ties, and keeps the first `keep`.
  // Returns whether any state was dropped.
  bool KeepBest(int32_t keep) {
    std::vector<int32_t> order(static_cast<size_t>(size()));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      const StateInfo &x = states[static_cast<size_t>(a)], &y = states[static_cast<size_t>(b)];
      return std::pair(x.peak, x.live) < std::pair(y.peak, y.live);
    });
    const bool dropped = size() > keep;
    if (dropped) order.resize(static_cast<size_t>(keep));
    std::vector<uint64_t> sets;
    std::vector<StateInfo> kept;
    std::vector<NodeId> kept_ready;
    for (int32_t s : order) {
      sets.insert(sets.end(), set(s), set(s) + words_);
      StateInfo info = states[static_cast<size_t>(s)];
      const auto begin = static_cast<int32_t>(kept_ready.size());
      kept_ready.insert(kept_ready.end(), ready.begin() + info.ready_begin,
                        ready.begin() + info.ready_end);
      info.ready_begin = begin;
      info.ready_end = static_cast<int32_t>(kept_ready.size());
      kept.push_back(info);
    }
    sets_ = std::move(sets);
    states = std::move(kept);
    ready = std::move(kept_ready);
    index_.clear();  // a ranked layer is only read from now on
    return dropped;
  }

  std::vector<StateInfo> states;
  std::vector<NodeId> ready;

 private:
  struct SetHash {
    const std::vector<uint64_t>* sets;
    int32_t words;
    size_t operator()(int32_t s) const {
      uint64_t h = 0x9E3779B97F4A7C15ull;
      const uint64_t* bits = sets->data() + static_cast<size_t>(s) * static_cast<size_t>(words);
      for (int32_t w = 0; w < words; ++w) {
        h ^= bits[w] + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
      }
      return static_cast<size_t>(h);
    }
  };
  struct SetEqual {
    const std::vector<uint64_t>* sets;
    int32_t words;
    bool operator()(int32_t a, int32_t b) const {
      const uint64_t* base = sets->data();
      return std::equal(base + static_cast<size_t>(a) * static_cast<size_t>(words),
                        base + static_cast<size_t>(a + 1) * static_cast<size_t>(words),
                        base + static_cast<size_t>(b) * static_cast<size_t>(words));
    }
  };

  int32_t words_;
  std::vector<uint64_t> sets_;
  std::unordered_set<int32_t, SetHash, SetEqual> index_;
};

struct SearchOutcome {
  std::optional<std::vector<NodeId>> order;  // an order whose peak is below the bound
  int64_t peak = 0;
  int64_t states = 0;
  bool out_of_budget = false;
  bool truncated = false;  // a layer was cut to layer_cap: the search was not exhaustive
};

class LayeredSearch {
 public:
  // Looks for an order with peak < `bound`. `max_states`: give up after storing that many
  // states; `layer_cap`: keep at most that many states per layer (1 = greedy).
  LayeredSearch(const StepModel& model, const std::vector<int32_t>& position, int64_t bound,
                int64_t max_states, int32_t layer_cap)
      : model_(model),
        position_(position),
        bound_(bound),
        max_states_(max_states),
        layer_cap_(layer_cap),
        words_((model.num_nodes() + 63) / 64) {}

  SearchOutcome Run() {
    SearchOutcome outcome;
    auto layer = std::make_unique<Layer>(words_);
    for (NodeId id = 0; id < model_.num_nodes(); ++id) {
      if (model_.node(id).preds.empty()) layer->ready.push_back(id);
    }
    SortByPosition(&layer->ready);
    layer->AddEmptySet({model_.fixed_peak(), model_.initial_live(), -1, kNoNode, 0,
                        static_cast<int32_t>(layer->ready.size())});
    std::vector<std::vector<std::pair<int32_t, NodeId>>> history;
    const bool beam = layer_cap_ < std::numeric_limits<int32_t>::max();
    for (int32_t k = 0; k < model_.num_nodes(); ++k) {
      auto next = std::make_unique<Layer>(words_);
      const int64_t layer_start = states_;
      for (int32_t s = 0; s < layer->size(); ++s) {
        if (layer_cap_ == 1) {
          ExpandGreedy(*layer, s, next.get());
        } else {
          Expand(*layer, s, next.get());
        }
        if (states_ > max_states_) {
          outcome.states = states_;
          outcome.out_of_budget = true;
          return outcome;
        }
        // A beam expands its best states first and stops once the layer has had its share of
        // work, so wide graphs (many ready nodes per state) cost no more than narrow ones.
        if (beam && states_ - layer_start >= layer_cap_ && s + 1 >= kMinBeamParents &&
            next->size() > 0 && s + 1 < layer->size()) {
          outcome.truncated = true;
          break;
        }
      }
      if (beam && next->KeepBest(layer_cap_)) outcome.truncated = true;
      if (next->size() == 0) {
        outcome.states = states_;
        return outcome;
      }
      std::vector<std::pair<int32_t, NodeId>> links;
      for (const StateInfo& info : next->states) links.emplace_back(info.parent, info.node);
      history.push_back(std::move(links));
      layer = std::move(next);
    }
    outcome.states = states_;
    outcome.peak = layer->states[0].peak;
    outcome.order = Reconstruct(history);
    return outcome;
  }

 private:
  void SortByPosition(std::vector<NodeId>* nodes) const {
    std::sort(nodes->begin(), nodes->end(), [&](NodeId a, NodeId b) {
      return position_[static_cast<size_t>(a)] < position_[static_cast<size_t>(b)];
    });
  }

  Step StepFrom(const StateInfo& state, const uint64_t* set, NodeId id) const {
    return model_.StepOf(id, state.live, [set](NodeId m) {
      return (set[static_cast<size_t>(m) / 64] >> (static_cast<size_t>(m) % 64) & 1) != 0;
    });
  }

  // Every ready node of state `s` whose step keeps the peak below the bound becomes (or
  // improves) a state of the next layer.
  void Expand(const Layer& layer, int32_t s, Layer* next) {
    const StateInfo state = layer.states[static_cast<size_t>(s)];
    const uint64_t* set = layer.set(s);
    for (int32_t r = state.ready_begin; r < state.ready_end; ++r) {
      const NodeId id = layer.ready[static_cast<size_t>(r)];
      const Step step = StepFrom(state, set, id);
      const int64_t peak = std::max(state.peak, step.cost);
      if (peak >= bound_) continue;
      const auto [child, is_new] = next->Find(set, id);
      StateInfo& info = next->states[static_cast<size_t>(child)];
      if (is_new) {
        info = {peak, step.live_after, s, id, 0, 0};
        AppendReady(layer, state, set, id, next, &info);
        ++states_;
      } else if (peak < info.peak) {
        info.peak = peak;
        info.parent = s;
        info.node = id;
      }
    }
  }

  // Greedy: only the ready node of least (peak, live after, file position) goes on.
  void ExpandGreedy(const Layer& layer, int32_t s, Layer* next) {
    const StateInfo state = layer.states[static_cast<size_t>(s)];
    const uint64_t* set = layer.set(s);
    std::optional<std::pair<std::pair<int64_t, int64_t>, NodeId>> best;
    for (int32_t r = state.ready_begin; r < state.ready_end; ++r) {
      const NodeId id = layer.ready[static_cast<size_t>(r)];
      const Step step = StepFrom(state, set, id);
      const std::pair<int64_t, int64_t> key{std::max(state.peak, step.cost), step.live_after};
      if (key.first >= bound_) continue;
      if (!best || key < best->first ||
          (key == best->first &&
           position_[static_cast<size_t>(id)] < position_[static_cast<size_t>(best->second)])) {
        best = {key, id};
      }
    }
    if (!best) return;
    const int32_t child = next->Find(set, best->second).first;  // the layer's only state
    StateInfo& info = next->states[static_cast<size_t>(child)];
    info = {best->first.first, best->first.second, s, best->second, 0, 0};
    AppendReady(layer, state, set, best->second, next, &info);
    ++states_;
  }

  // The child's ready nodes: the parent's, less `id`, plus successors of `id` whose
  // predecessors have all run.
  void AppendReady(const Layer& layer, const StateInfo& state, const uint64_t* set, NodeId id,
                   Layer* next, StateInfo* info) const {
    info->ready_begin = static_cast<int32_t>(next->ready.size());
    for (int32_t r = state.ready_begin; r < state.ready_end; ++r) {
      if (layer.ready[static_cast<size_t>(r)] != id)
        next->ready.push_back(layer.ready[static_cast<size_t>(r)]);
    }
    auto ran = [&](NodeId m) {
      return m == id ||
             (set[static_cast<size_t>(m) / 64] >> (static_cast<size_t>(m) % 64) & 1) != 0;
    };
    for (NodeId succ : model_.node(id).succs) {
      const std::vector<NodeId>& preds = model_.node(succ).preds;
      if (std::all_of(preds.begin(), preds.end(), ran)) next->ready.push_back(succ);
    }
    info->ready_end = static_cast<int32_t>(next->ready.size());
  }

  std::vector<NodeId> Reconstruct(
      const std::vector<std::vector<std::pair<int32_t, NodeId>>>& history) const {
    std::vector<NodeId> order(history.size());
    int32_t state = 0;
    for (size_t k = history.size(); k-- > 0;) {
      const auto& [parent, node] = history[k][static_cast<size_t>(state)];
      order[k] = node;
      state = parent;
    }
    return order;
  }

  const StepModel& model_;
  const std::vector<int32_t>& position_;
  int64_t bound_;
  int64_t max_states_;
  int32_t layer_cap_;
  int32_t words_;
  int64_t states_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Local improvement: move one node within its dependence window, across the first step at
// the peak.

// Orders compare by peak, then by how many steps reach it (fewer is progress towards a lower
// peak), then by the sum of all steps.
struct Score {
  int64_t peak = 0;
  int64_t at_peak = 0;
  int64_t area = 0;
  bool operator<(const Score& o) const {
    return std::tuple(peak, at_peak, area) < std::tuple(o.peak, o.at_peak, o.area);
  }
  // This score joined with the steps of another part of the order.
  Score With(const Score& part) const {
    const int64_t top = std::max(peak, part.peak);
    return {top, (peak == top ? at_peak : 0) + (part.peak == top ? part.at_peak : 0),
            area + part.area};
  }
  Score With(int64_t cost) const { return With(Score{cost, 1, cost}); }
};

// Moving the node at position i to position j changes only the steps between the two: the
// same nodes have run before and after them. So a move is scored by walking that stretch
// alone, joined with prefix and suffix scores of the current order.
class LocalSearch {
 public:
  LocalSearch(const StepModel& model, std::vector<NodeId> order)
      : model_(model), order_(std::move(order)) {
    Rebuild();
  }

  // First-improvement hill climbing until no move across the peak helps or `budget` node
  // steps have been walked.
  std::vector<NodeId> Run(int64_t budget) {
    while (budget > 0 && ImproveOnce(&budget)) {
      [[maybe_unused]] const Score predicted = predicted_;
      Rebuild();
      assert(!(predicted < total()) && !(total() < predicted));  // the stretch walk was exact
    }
    return std::move(order_);
  }

 private:
  int32_t size() const { return static_cast<int32_t>(order_.size()); }
  Score total() const { return prefix_.back().With(Score{model_.fixed_peak(), 0, 0}); }

  void Rebuild() {
    const std::vector<Step> steps = model_.StepsOf(order_);
    const auto n = static_cast<size_t>(size());
    position_.assign(n, 0);
    for (size_t i = 0; i < n; ++i)
      position_[static_cast<size_t>(order_[i])] = static_cast<int32_t>(i);
    live_before_.assign(n + 1, model_.initial_live());
    prefix_.assign(n + 1, Score{});
    suffix_.assign(n + 1, Score{});
    for (size_t i = 0; i < n; ++i) {
      live_before_[i + 1] = steps[i].live_after;
      prefix_[i + 1] = prefix_[i].With(steps[i].cost);
    }
    for (size_t i = n; i-- > 0;) suffix_[i] = suffix_[i + 1].With(steps[i].cost);
  }

  bool ImproveOnce(int64_t* budget) {
    const Score current = total();
    int32_t peak = 0;
    while (peak < size() && prefix_[static_cast<size_t>(peak) + 1].peak < current.peak) ++peak;
    if (peak == size()) return false;  // the steps no order changes set the peak
    for (int32_t i = 0; i < size() && *budget > 0; ++i) {
      const auto [lo, hi] = Window(i);
      if (lo > peak || hi < peak) continue;
      // Only moves that carry the node across the peak step (or move the peak's own node).
      const int32_t from = i < peak ? std::max(peak, lo) : lo;
      const int32_t to = i > peak ? std::min(peak, hi) : hi;
      for (int32_t j = from; j <= to && *budget > 0; ++j) {
        if (j == i) continue;
        *budget -= std::abs(j - i) + 1;
        predicted_ = MoveScore(i, j);
        if (predicted_ < current) {
          Move(i, j);
          return true;
        }
      }
    }
    return false;
  }

  // Positions the node at position i may take: after its last predecessor, before its first
  // successor.
  std::pair<int32_t, int32_t> Window(int32_t i) const {
    const NodeInfo& info = model_.node(order_[static_cast<size_t>(i)]);
    int32_t lo = 0, hi = size() - 1;
    for (NodeId m : info.preds) lo = std::max(lo, position_[static_cast<size_t>(m)] + 1);
    for (NodeId m : info.succs) hi = std::min(hi, position_[static_cast<size_t>(m)] - 1);
    return {lo, hi};
  }

  Score MoveScore(int32_t i, int32_t j) const {
    const int32_t a = std::min(i, j), b = std::max(i, j);
    const NodeId moved = order_[static_cast<size_t>(i)];
    // Position of node m after the move.
    auto moved_to = [&](NodeId m) {
      const int32_t p = position_[static_cast<size_t>(m)];
      if (m == moved) return j;
      if (p < a || p > b) return p;
      return i < j ? p - 1 : p + 1;
    };
    Score part{};
    int64_t live = live_before_[static_cast<size_t>(a)];
    for (int32_t q = a; q <= b; ++q) {
      const NodeId node = q == j ? moved : order_[static_cast<size_t>(i < j ? q + 1 : q - 1)];
      const Step step = model_.StepOf(node, live, [&](NodeId m) { return moved_to(m) < q; });
      part = part.With(step.cost);
      live = step.live_after;
    }
    return prefix_[static_cast<size_t>(a)]
        .With(part)
        .With(suffix_[static_cast<size_t>(b) + 1])
        .With(Score{model_.fixed_peak(), 0, 0});
  }

  void Move(int32_t i, int32_t j) {
    const NodeId node = order_[static_cast<size_t>(i)];
    order_.erase(order_.begin() + i);
    order_.insert(order_.begin() + j, node);
  }

  const StepModel& model_;
  std::vector<NodeId> order_;
  std::vector<int32_t> position_;
  std::vector<int64_t> live_before_;  // live bytes before each position (and after the last)
  std::vector<Score> prefix_;         // prefix_[k]: steps at positions < k
  std::vector<Score> suffix_;         // suffix_[k]: steps at positions >= k
  Score predicted_;                   // the score of the last move tried
};

// ---------------------------------------------------------------------------------------------

double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// The best order the searches find, starting from the file's: greedy, beam, then the exact
// search with the best peak so far as its bound; local improvement if that runs out of states.
// Fills kind, states and the lower bound.
std::vector<NodeId> Search(const StepModel& model, const Graph& graph,
                           const ScheduleOptions& options, ScheduleSearch* result) {
  std::vector<NodeId> best = graph.schedule;
  int64_t best_peak = model.PeakOf(best);
  std::vector<int32_t> position(best.size());
  for (size_t i = 0; i < best.size(); ++i)
    position[static_cast<size_t>(best[i])] = static_cast<int32_t>(i);
  result->lower_bound = model.LowerBound();
  result->kind = ScheduleSearchKind::kExact;
  auto try_search = [&](int64_t max_states, int32_t layer_cap) {
    SearchOutcome outcome = LayeredSearch(model, position, best_peak, max_states, layer_cap).Run();
    result->states += outcome.states;
    if (outcome.order) {
      best = std::move(*outcome.order);
      best_peak = outcome.peak;
    }
    return outcome;
  };
  auto improve_locally = [&] {
    result->kind = ScheduleSearchKind::kHeuristic;
    return LocalSearch(model, std::move(best)).Run(options.max_improve_steps);
  };
  if (best_peak <= result->lower_bound) return best;
  try_search(kUnlimited, 1);  // greedy
  if (best_peak <= result->lower_bound) return best;
  if (model.num_nodes() > options.max_bound_nodes) return improve_locally();
  // The beam is often optimal already, exhaustive (so exact) when no layer had to be cut, and
  // its peak prunes the exact search hard.
  const int64_t width =
      std::max<int64_t>(kMinBeamWidth, options.beam_states / std::max(model.num_nodes(), 1));
  const SearchOutcome beam =
      try_search(kUnlimited, static_cast<int32_t>(std::min<int64_t>(width, 1 << 30)));
  if (!beam.truncated || best_peak <= result->lower_bound) return best;
  if (!try_search(options.max_states, std::numeric_limits<int32_t>::max()).out_of_budget)
    return best;
  return improve_locally();
}

}  // namespace

std::string_view ScheduleSearchKindName(ScheduleSearchKind kind) {
  return kind == ScheduleSearchKind::kExact ? "exact" : "heuristic";
}

int64_t EstimatedPeak(const Graph& graph, OverlapSource source) {
  Liveness live = ComputeLiveness(graph);
  AddOverlapAllowances(graph, source, &live);
  return LowerBoundWithOverlaps(live.requests);
}

Result<ScheduleSearch> MinimisePeakSchedule(const Graph& graph, const ScheduleOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  Status valid = VerifyGraph(graph);
  if (!valid.ok())
    return Status::Error("cannot re-order graph '" + graph.name + "': " + valid.message());
  const StepModel model(graph, options.overlap, options.max_bound_nodes);
  ScheduleSearch result;
  result.peak_before = model.PeakOf(graph.schedule);
  std::vector<NodeId> order = Search(model, graph, options, &result);
  const int64_t searched = model.PeakOf(order);
  if (searched < result.peak_before) {
    result.schedule = std::move(order);
    result.peak_after = searched;
  } else {
    result.schedule = graph.schedule;
    result.peak_after = result.peak_before;
  }
  result.time_ms = MillisecondsSince(start);
  return result;
}

Result<ScheduledPlan> PlanWithBestSchedule(const Graph& graph, const ScheduleOptions& options,
                                           std::string_view planner) {
  MF_ASSIGN_OR_RETURN(ScheduleSearch search, MinimisePeakSchedule(graph, options));
  MF_ASSIGN_OR_RETURN(GraphPlan original, PlanGraph(graph, planner, {.overlaps = options.overlap}));
  ScheduledPlan result{.graph = graph, .plan = std::move(original), .search = {}};
  result.original_arena = result.searched_arena = result.plan.plan.arena_bytes;
  if (search.schedule != graph.schedule) {
    Graph reordered = graph;
    reordered.schedule = search.schedule;
    MF_ASSIGN_OR_RETURN(GraphPlan searched,
                        PlanGraph(reordered, planner, {.overlaps = options.overlap}));
    result.searched_arena = searched.plan.arena_bytes;
    if (result.searched_arena < result.original_arena) {
      result.graph = std::move(reordered);
      result.plan = std::move(searched);
      result.reordered = true;
    }
  }
  result.search = std::move(search);
  return result;
}

}  // namespace memfold
