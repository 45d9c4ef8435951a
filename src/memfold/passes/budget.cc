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

// How far a move reaches back through producers whose outputs it would otherwise keep.
constexpr int kMaxMoveDepth = kMaxRecomputeChain;

// A forward node and the forward views of its outputs (transitively): they enter or leave
// the set together.
struct Unit {
  std::vector<NodeId> nodes;
  double flops = 1;  // what recomputing it costs (at least 1, so that views order too)
};

// Units that flip together, and what that frees per FLOP.
struct Move {
  std::vector<size_t> units;
  double score = -1;
};

class Chooser {
 public:
  Chooser(const Graph& g, const TrainingGraph& t)
      : g_(g), model_(g, t), unit_of_(static_cast<size_t>(g.num_nodes()), kNone) {
    for (size_t pos = 0; pos < t.forward_nodes; ++pos) {
      const NodeId id = g.schedule[pos];
      if (!IsView(g.node(id)) && !MustNotRecompute(g, g.node(id))) AddUnit(id);
    }
  }

  // Recomputes more, best bytes freed per FLOP first, until the kept bytes fit `budget`.
  void Shrink(std::vector<char>* set, int64_t* total, int64_t budget) const {
    Greedy(
        set, total, [&](size_t k, std::vector<char>* s) { return EnterMove(k, s); },
        [&](int64_t now) { return now <= budget; }, /*enter=*/true);
  }

  // Recomputes less, most FLOPs saved per byte added first, while the kept bytes fit `budget`.
  void Relax(std::vector<char>* set, int64_t* total, int64_t budget) const {
    Greedy(
        set, total,
        [&](size_t k, std::vector<char>* s) {
          Move m{{k}};
          if (!Contains(k, *s)) return m;
          const int64_t added = -Delta(m.units, s, /*enter=*/false);
          if (*total + added <= budget)
            m.score = units_[k].flops / static_cast<double>(std::max<int64_t>(added, 1));
          return m;
        },
        [](int64_t) { return false; }, /*enter=*/false);
  }

  int64_t Total(const std::vector<char>& set) const { return model_.TotalKeptBytes(set); }

 private:
  static constexpr size_t kNone = static_cast<size_t>(-1);
  using Score = std::function<Move(size_t, std::vector<char>*)>;

  void AddUnit(NodeId id) {
    Unit u;
    std::vector<NodeId> work = {id};
    while (!work.empty()) {
      const NodeId n = work.back();
      work.pop_back();
      if (unit_of_[static_cast<size_t>(n)] != kNone) continue;
      unit_of_[static_cast<size_t>(n)] = units_.size();
      u.nodes.push_back(n);
      for (ValueId v : g_.node(n).outputs) {
        for (NodeId reader : model_.readers(v)) {
          if (model_.forward(reader) && IsView(g_.node(reader))) work.push_back(reader);
        }
      }
    }
    u.flops = std::max(1.0, NodeCost(g_, g_.node(id)).flops);
    units_.push_back(std::move(u));
  }

  bool Contains(size_t k, const std::vector<char>& set) const {
    return set[static_cast<size_t>(units_[k].nodes.front())] != 0;
  }

  // The values whose kept status flipping `units` can change: their nodes' inputs and outputs.
  std::set<ValueId> Affected(const std::vector<size_t>& units) const {
    std::set<ValueId> values;
    for (size_t k : units) {
      for (NodeId n : units_[k].nodes) {
        for (ValueId v : g_.node(n).inputs) {
          if (v != kNoValue) values.insert(v);
        }
        for (ValueId v : g_.node(n).outputs) values.insert(v);
      }
    }
    return values;
  }

  // Kept bytes freed by letting `units` enter (or, negative, added by letting them leave);
  // `set` is as it was on return.
  int64_t Delta(const std::vector<size_t>& units, std::vector<char>* set, bool enter) const {
    const std::set<ValueId> values = Affected(units);
    const int64_t before = model_.KeptBytes(values, *set);
    Flip(units, set, enter);
    const int64_t after = model_.KeptBytes(values, *set);
    Flip(units, set, !enter);
    return before - after;
  }

  void Flip(const std::vector<size_t>& units, std::vector<char>* set, bool enter) const {
    for (size_t k : units) {
      for (NodeId n : units_[k].nodes) (*set)[static_cast<size_t>(n)] = enter;
    }
  }

  // The best move that starts by recomputing unit k: the unit alone, or with the producers of
  // the inputs it would newly keep, and theirs, up to kMaxMoveDepth levels (an attention
  // chain of equal-sized element-wise results frees bytes only when re-run to its kept
  // inputs).
  Move EnterMove(size_t k, std::vector<char>* set) const {
    Move best;
    if (Contains(k, *set)) return best;
    std::vector<size_t> move = {k};
    std::set<size_t> in_move = {k};
    double flops = units_[k].flops;
    for (int depth = 0; depth < kMaxMoveDepth; ++depth) {
      const int64_t freed = Delta(move, set, /*enter=*/true);
      if (freed > 0 && freed / flops > best.score) best = {move, freed / flops};
      std::vector<size_t> grow;
      for (size_t unit : move) {
        for (NodeId n : units_[unit].nodes) {
          for (ValueId v : g_.node(n).inputs) {
            const size_t p = ProducerUnit(v);
            if (p == kNone || in_move.count(p) || Contains(p, *set) || model_.Kept(v, *set))
              continue;
            in_move.insert(p);
            grow.push_back(p);
          }
        }
      }
      if (grow.empty()) break;
      for (size_t p : grow) flops += units_[p].flops;
      move.insert(move.end(), grow.begin(), grow.end());
    }
    return best;
  }

  size_t ProducerUnit(ValueId v) const {
    if (v == kNoValue || g_.value(v).producer == kNoNode) return kNone;
    return unit_of_[static_cast<size_t>(g_.value(v).producer)];
  }

  // Lazy greedy: pops the best-scoring unit, re-scores its move, takes it if it still beats
  // the next one; stops when `done` says so or nothing scores positive. A unit that scores
  // nothing now may score after others moved, so the queue is rebuilt until a pass takes
  // nothing.
  void Greedy(std::vector<char>* set, int64_t* total, const Score& score,
              const std::function<bool(int64_t)>& done, bool enter) const {
    for (bool moved = true; moved && !done(*total);) {
      moved = false;
      std::priority_queue<std::pair<double, size_t>> queue;
      for (size_t k = 0; k < units_.size(); ++k) {
        const double s = score(k, set).score;
        if (s > 0) queue.emplace(s, k);
      }
      while (!queue.empty() && !done(*total)) {
        const size_t k = queue.top().second;
        queue.pop();
        const Move m = score(k, set);
        if (m.score <= 0) continue;
        if (!queue.empty() && m.score < queue.top().first) {
          queue.emplace(m.score, k);
          continue;
        }
        *total -= Delta(m.units, set, enter);
        Flip(m.units, set, enter);
        moved = true;
      }
    }
  }

  const Graph& g_;
  StashModel model_;
  std::vector<Unit> units_;
  std::vector<size_t> unit_of_;  // per node: the unit it moves with, or kNone
};

}  // namespace

std::vector<char> BudgetChoice(const Graph& g, const TrainingGraph& t, int64_t budget) {
  const Chooser chooser(g, t);
  std::vector<char> set = EchoChoice(g, t);
  int64_t total = chooser.Total(set);
  if (total > budget) chooser.Shrink(&set, &total, budget);
  if (total <= budget) chooser.Relax(&set, &total, budget);  // what a move freed beyond it
  return set;
}

}  // namespace memfold
