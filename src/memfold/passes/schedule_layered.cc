#include "memfold/passes/schedule_layered.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <unordered_set>
#include <vector>

#include "memfold/passes/schedule_model.h"

namespace memfold::schedule_detail {
namespace {

constexpr int32_t kMinBeamParents = 4;  // states a beam expands per layer, at least

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

}  // namespace

SearchOutcome LayeredOrderSearch(const StepModel& model, const std::vector<int32_t>& position,
                                 int64_t bound, int64_t max_states, int32_t layer_cap) {
  return LayeredSearch(model, position, bound, max_states, layer_cap).Run();
}

}  // namespace memfold::schedule_detail
