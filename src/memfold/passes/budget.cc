#include "memfold/passes/budget.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <set>

#include "memfold/ops/registry.h"
#include "memfold/passes/echo.h"
#include "memfold/passes/recompute.h"
#include "memfold/passes/stash_model.h"

namespace memfold {
namespace {

// A forward node and the forward views of its outputs (transitively): they enter or leave
// the set together.
struct Unit {
  std::vector<NodeId> nodes;
  std::set<ValueId> values;  // the inputs and outputs of its nodes
  double flops = 1;          // what recomputing it costs (at least 1, so views order too)
};

class Chooser {
 public:
  Chooser(const Graph& g, const TrainingGraph& t) : g_(g), model_(g, t) {
    for (size_t pos = 0; pos < t.forward_nodes; ++pos) {
      const NodeId id = g.schedule[pos];
      if (!IsView(g.node(id)) && !MustNotRecompute(g, g.node(id))) units_.push_back(MakeUnit(id));
    }
  }

  // Adds units, best bytes-per-FLOP first, until the kept bytes fit `budget`.
  void Shrink(std::vector<char>* set, int64_t* total, int64_t budget) const {
    Greedy(set, total, [&](const Unit& u, std::vector<char>* s) {
      if (Contains(u, *s)) return -1.0;
      const int64_t freed = Delta(u, s, /*enter=*/true);
      return freed > 0 ? static_cast<double>(freed) / u.flops : -1.0;
    }, [&](int64_t now) { return now <= budget; }, /*enter=*/true);
  }

  // Drops units, most FLOPs per byte first, while the kept bytes still fit `budget`.
  void Relax(std::vector<char>* set, int64_t* total, int64_t budget) const {
    Greedy(set, total, [&](const Unit& u, std::vector<char>* s) {
      if (!Contains(u, *s)) return -1.0;
      const int64_t added = -Delta(u, s, /*enter=*/false);
      if (*total + added > budget) return -1.0;
      return u.flops / static_cast<double>(std::max<int64_t>(added, 1));
    }, [](int64_t) { return false; }, /*enter=*/false);
  }

  int64_t Total(const std::vector<char>& set) const { return model_.TotalKeptBytes(set); }

 private:
  using Score = std::function<double(const Unit&, std::vector<char>*)>;

  Unit MakeUnit(NodeId id) const {
    Unit u;
    std::vector<NodeId> work = {id};
    while (!work.empty()) {
      const NodeId n = work.back();
      work.pop_back();
      u.nodes.push_back(n);
      for (ValueId v : g_.node(n).inputs) {
        if (v != kNoValue) u.values.insert(v);
      }
      for (ValueId v : g_.node(n).outputs) {
        u.values.insert(v);
        for (NodeId reader : model_.readers(v)) {
          if (model_.forward(reader) && IsView(g_.node(reader))) work.push_back(reader);
        }
      }
    }
    u.flops = std::max(1.0, NodeCost(g_, g_.node(id)).flops);
    return u;
  }

  static bool Contains(const Unit& u, const std::vector<char>& set) {
    return set[static_cast<size_t>(u.nodes.front())] != 0;
  }

  // Kept bytes freed by letting the unit enter (or, negative, added by letting it leave);
  // `set` is as it was on return.
  int64_t Delta(const Unit& u, std::vector<char>* set, bool enter) const {
    const int64_t before = model_.KeptBytes(u.values, *set);
    for (NodeId n : u.nodes) (*set)[static_cast<size_t>(n)] = enter;
    const int64_t after = model_.KeptBytes(u.values, *set);
    for (NodeId n : u.nodes) (*set)[static_cast<size_t>(n)] = !enter;
    return before - after;
  }

  // Lazy greedy: pops the best-scoring unit, re-scores it, takes it if it still beats the
  // next one; stops when `done` says so or nothing scores positive.
  void Greedy(std::vector<char>* set, int64_t* total, const Score& score,
              const std::function<bool(int64_t)>& done, bool enter) const {
    std::priority_queue<std::pair<double, size_t>> queue;
    for (size_t k = 0; k < units_.size(); ++k) {
      const double s = score(units_[k], set);
      if (s > 0) queue.emplace(s, k);
    }
    while (!queue.empty() && !done(*total)) {
      const size_t k = queue.top().second;
      queue.pop();
      const double s = score(units_[k], set);
      if (s <= 0) continue;
      if (!queue.empty() && s < queue.top().first) {
        queue.emplace(s, k);
        continue;
      }
      *total -= Delta(units_[k], set, enter);
      for (NodeId n : units_[k].nodes) (*set)[static_cast<size_t>(n)] = enter;
    }
  }

  const Graph& g_;
  StashModel model_;
  std::vector<Unit> units_;
};

}  // namespace

std::vector<char> BudgetChoice(const Graph& g, const TrainingGraph& t, int64_t budget) {
  const Chooser chooser(g, t);
  std::vector<char> set = EchoChoice(g, t);
  int64_t total = chooser.Total(set);
  for (int pass = 0; pass < 4 && total > budget; ++pass) {
    const int64_t before = total;
    chooser.Shrink(&set, &total, budget);
    total = chooser.Total(set);  // the passes' local deltas may miss shared storages
    if (total >= before) break;
  }
  if (total <= budget) {
    chooser.Relax(&set, &total, budget);
    if (chooser.Total(set) > budget) chooser.Shrink(&set, &total, budget);
  }
  return set;
}

}  // namespace memfold
