// Operator re-ordering: a golden branched graph with the arithmetic by hand, the exact search
// against brute force over every topological order of 500 random small DAGs, the heuristic
// path, in-place state keeping its order (training steps train identically), re-ordered plans
// verified and run bit-identically, and never a larger arena than the file's order on every
// shared and reference model.
#include "memfold/passes/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <random>
#include <string>

#include "memfold/exec/checked_run_test_util.h"
#include "memfold/exec/executor.h"
#include "memfold/ir/verify.h"
#include "memfold/ops/builder.h"
#include "memfold/passes/gradient.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/placement/verify_plan.h"
#include "tests/test_models.h"

namespace memfold {
namespace {

NodeId NodeNamed(const Graph& g, const std::string& name) {
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    if (g.node(id).name == name) return id;
  }
  ADD_FAILURE() << "no node " << name;
  return kNoNode;
}

std::vector<std::string> ScheduleNames(const Graph& g, const std::vector<NodeId>& schedule) {
  std::vector<std::string> names;
  for (NodeId id : schedule) names.push_back(g.node(id).name);
  return names;
}

Graph WithSchedule(const Graph& g, const std::vector<NodeId>& schedule) {
  Graph copy = g;
  copy.schedule = schedule;
  return copy;
}

// Plans `schedule` with the diagonal planner, verifies the plan, runs the graph in it and
// compares with an unplanned run of the graph in its own order.
void ExpectRunsLikeOriginal(const Graph& original, const std::vector<NodeId>& schedule,
                            const std::string& what) {
  const Graph reordered = WithSchedule(original, schedule);
  ASSERT_TRUE(VerifyGraph(reordered).ok()) << what;
  Result<GraphPlan> gp = PlanGraph(reordered, "diagonal");
  ASSERT_TRUE(gp.ok()) << what << ": " << gp.status().message();
  ASSERT_TRUE(VerifyPlan(gp->liveness.requests, gp->plan).ok()) << what;
  EXPECT_TRUE(RunsIdentically(original, reordered, gp->liveness, gp->plan, DefaultInputs(original)))
      << what;
}

// x [1,4] feeds two branches; each expands to [1,256] by a matmul (no O_s model: no overlap),
// applies relu (element-wise: its output may overlap all of its dying input), and reduces back
// to [1,4]; add joins them. The file runs both expansions first.
Graph TwoBranchGraph() {
  GraphBuilder b("two_branches");
  const ValueId x = b.Input("x", {1, 4});
  auto branch = [&](const std::string& name) {
    return b.Op("matmul", {x, b.Weight(name + "/w1", {4, 256}, 0.5f)}, {}, name + "1");
  };
  auto reduce = [&](const std::string& name, ValueId h) {
    return b.Op("matmul", {h, b.Weight(name + "/w2", {256, 4}, 0.5f)}, {}, name + "2");
  };
  const ValueId a1 = branch("a"), b1 = branch("b");
  const ValueId a1r = b.Op("relu", {a1}, {}, "a1r"), b1r = b.Op("relu", {b1}, {}, "b1r");
  const ValueId a2 = reduce("a", a1r), b2 = reduce("b", b1r);
  return std::move(b.Finish({b.Op("add", {a2, b2}, {}, "y")})).value();
}

// Bytes: x, a2, b2, y 16 each; a1, a1r, b1, b1r 1,024 each.
// File order a1 b1 a1r b1r a2 b2 y:
//   a1   x + a1                    = 1,040
//   b1   x + a1 + b1               = 2,064   (x dies here)
//   a1r  a1 + b1 + a1r - 1,024     = 2,048   (a1 dies; relu overlaps all of it)
//   b1r  b1 + a1r + b1r - 1,024    = 2,048
//   a2   a1r + b1r + a2            = 2,064
//   b2   b1r + a2 + b2             = 1,056
//   y    a2 + b2 + y - 16          =    32   (add overlaps a dying input by 16)
// peak 2,064. Finishing branch a first, a1 a1r a2 b1 b1r b2 y:
//   1,040, x + a1 + a1r - 1,024 = 1,040, x + a1r + a2 = 1,056, x + a2 + b1 = 1,056,
//   a2 + b1 + b1r - 1,024 = 1,040, a2 + b1r + b2 = 1,056, 32: peak 1,056.
// No order does better: at a2's step a1r (1,024) and a2 (16) are live, and x (b1 has not run)
// or b1 / b1r / b2 (it has): at least 1,056. The per-node bound only proves 1,040 (it cannot
// tell which of x and b's values is live), so the DP has to rule out everything below 1,056.
TEST(Schedule, GoldenTwoBranchesFinishesOneBranchFirst) {
  const Graph g = TwoBranchGraph();
  ASSERT_EQ(ScheduleNames(g, g.schedule),
            (std::vector<std::string>{"a1", "b1", "a1r", "b1r", "a2", "b2", "y"}));
  Result<ScheduleSearch> s = MinimisePeakSchedule(g);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->peak_before, 2064);
  EXPECT_EQ(s->peak_after, 1056);
  EXPECT_EQ(s->lower_bound, 1040);
  EXPECT_EQ(s->kind, ScheduleSearchKind::kExact);
  EXPECT_GT(s->states, 0);
  EXPECT_EQ(ScheduleNames(g, s->schedule),
            (std::vector<std::string>{"a1", "a1r", "a2", "b1", "b1r", "b2", "y"}));
  EXPECT_EQ(EstimatedPeak(WithSchedule(g, s->schedule)), 1056);

  // The diagonal planner reaches both estimates exactly (they are its overlap-aware bound).
  Result<ScheduledPlan> planned = PlanWithBestSchedule(g);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  EXPECT_EQ(planned->original_arena, 2064);
  EXPECT_EQ(planned->searched_arena, 1056);
  EXPECT_TRUE(planned->reordered);
  EXPECT_EQ(planned->graph.schedule, s->schedule);
  EXPECT_EQ(planned->plan.plan.arena_bytes, 1056);
  ExpectRunsLikeOriginal(g, s->schedule, "two branches");
}

// Without the relu overlap the same graph would peak at x + a1 + a1r = 2,064 in every order;
// with the analytic O_s source the relu model is the same closed form, so the answer holds.
TEST(Schedule, GoldenTwoBranchesWithAnalyticOverlaps) {
  ScheduleOptions options;
  options.overlap = OverlapSource::kAnalytic;
  Result<ScheduleSearch> s = MinimisePeakSchedule(TwoBranchGraph(), options);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->peak_after, 1056);
}

// Random small DAGs of the ops with O_s models, aliases (reshape), scratch (mean), several
// inputs and outputs and unread values.
class SmallDagMaker {
 public:
  explicit SmallDagMaker(uint32_t seed) : rng_(seed), b_("dag", seed) {}

  Graph Make(int max_nodes) {
    const int64_t h = Pick(2, 4), w = Pick(2, 4);
    pool_.push_back(b_.Input("x", {1, h, w, Pick(1, 6)}));
    if (Pick(0, 2) == 0) pool_.push_back(b_.Input("x2", {1, h, w, Pick(1, 6)}));
    for (int i = 0; b_.ok() && nodes_ < max_nodes; ++i)
      AddOp("n" + std::to_string(i), max_nodes - nodes_);
    std::vector<ValueId> outputs = {pool_.back()};
    const ValueId extra = Any();
    if (Pick(0, 1) == 0 && extra != outputs[0]) outputs.push_back(extra);
    Result<Graph> g = b_.Finish(outputs);
    EXPECT_TRUE(g.ok()) << g.status().message();
    return std::move(g).value();
  }

 private:
  int64_t Pick(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  ValueId Any() {
    return pool_[static_cast<size_t>(Pick(0, static_cast<int64_t>(pool_.size()) - 1))];
  }
  // Mostly a recent value, so graphs have chains as well as branches.
  ValueId Recent() {
    const auto n = static_cast<int64_t>(pool_.size());
    return pool_[static_cast<size_t>(std::max<int64_t>(0, n - 1 - Pick(0, 2)))];
  }
  // A value of x's height and width (and channels, if asked), x itself allowed or not; x when
  // there is none.
  ValueId Partner(ValueId x, bool same_channels, bool allow_x) {
    std::vector<ValueId> matches;
    for (ValueId u : pool_) {
      const Shape &a = b_.shape(u), &s = b_.shape(x);
      const bool fits = a.size() == 4 && a[1] == s[1] && a[2] == s[2];
      if (fits && (!same_channels || a[3] == s[3]) && (allow_x || u != x)) matches.push_back(u);
    }
    if (matches.empty()) return x;
    return matches[static_cast<size_t>(Pick(0, static_cast<int64_t>(matches.size()) - 1))];
  }

  void AddOp(const std::string& name, int room) {
    const ValueId x = Pick(0, 2) == 0 ? Any() : Recent();
    const Shape s = b_.shape(x);
    ValueId y = kNoValue;
    switch (Pick(0, 8)) {
      case 0:
        y = b_.Op(Pick(0, 1) ? "relu" : "tanh", {x}, {}, name);
        break;
      case 1:
        y = b_.Op(Pick(0, 1) ? "add" : "mul", {x, Partner(x, true, true)}, {}, name);
        break;
      case 2: {
        const int64_t k = Pick(0, 1) ? 3 : 1;
        y = b_.Op("conv2d", {x, b_.Weight(name + "/w", {Pick(1, 8), k, k, s[3]}, 0.5f)},
                  ConvAttrs(1, "relu"), name);
        break;
      }
      case 3:
        y = b_.Op("depthwise_conv2d", {x, b_.Weight(name + "/w", {1, 3, 3, s[3]}, 0.5f)},
                  ConvAttrs(1, "none"), name);
        break;
      case 4:
        y = b_.Op("max_pool2d", {x}, PoolAttrs(2, 2, 2, "same"), name);
        break;
      case 5: {  // sometimes concat(x, x)
        const ValueId other = Partner(x, false, false);
        Attrs axis;
        axis.Set("axis", int64_t{3});
        y = b_.Op("concat", {x, other}, axis, name);
        break;
      }
      case 6: {
        if (room < 2) return;
        Attrs flat, back;
        flat.Set("shape", std::vector<int64_t>{1, -1});
        back.Set("shape", s);
        const ValueId r = b_.Op("reshape", {x}, flat, name + "/flat");
        ++nodes_;
        y = b_.Op("neg", {b_.Op("reshape", {r}, back, name + "/back")}, {}, name);
        ++nodes_;
        break;
      }
      case 7: {
        Attrs pads;
        pads.Set("paddings", std::vector<int64_t>{0, 0, 1, 0, 0, 1, 0, 0});
        y = b_.Op("pad", {x}, pads, name);
        break;
      }
      default: {
        Attrs mean;
        mean.Set("axes", std::vector<int64_t>{1, 2});
        mean.Set("keepdims", int64_t{1});
        y = b_.Op("mean", {x}, mean, name);
        break;
      }
    }
    ++nodes_;
    pool_.push_back(y);
  }

  std::mt19937 rng_;
  GraphBuilder b_;
  std::vector<ValueId> pool_;
  int nodes_ = 0;
};

// Predecessor masks of a graph with at most 64 nodes (data dependences only).
std::vector<uint64_t> PredecessorMasks(const Graph& g) {
  std::vector<uint64_t> preds(static_cast<size_t>(g.num_nodes()), 0);
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    for (ValueId v : g.node(id).inputs) {
      if (v != kNoValue && g.value(v).producer != kNoNode)
        preds[static_cast<size_t>(id)] |= uint64_t{1} << g.value(v).producer;
    }
  }
  return preds;
}

// Calls `visit` with every topological order (plain backtracking).
void ForEachTopologicalOrder(const Graph& g,
                             const std::function<void(const std::vector<NodeId>&)>& visit) {
  const std::vector<uint64_t> preds = PredecessorMasks(g);
  std::vector<NodeId> order;
  std::function<void(uint64_t)> extend = [&](uint64_t done) {
    if (order.size() == static_cast<size_t>(g.num_nodes())) {
      visit(order);
      return;
    }
    for (NodeId id = 0; id < g.num_nodes(); ++id) {
      const uint64_t bit = uint64_t{1} << id;
      if ((done & bit) != 0 || (preds[static_cast<size_t>(id)] & ~done) != 0) continue;
      order.push_back(id);
      extend(done | bit);
      order.pop_back();
    }
  };
  extend(0);
}

int64_t CountTopologicalOrders(const Graph& g) {
  int64_t count = 0;
  ForEachTopologicalOrder(g, [&](const std::vector<NodeId>&) { ++count; });
  return count;
}

// A random topological order: repeatedly run a random ready node.
std::vector<NodeId> RandomTopologicalOrder(const Graph& g, std::mt19937* rng) {
  const std::vector<uint64_t> preds = PredecessorMasks(g);
  std::vector<NodeId> order;
  uint64_t done = 0;
  while (order.size() < static_cast<size_t>(g.num_nodes())) {
    std::vector<NodeId> ready;
    for (NodeId id = 0; id < g.num_nodes(); ++id) {
      if ((done >> id & 1) == 0 && (preds[static_cast<size_t>(id)] & ~done) == 0)
        ready.push_back(id);
    }
    const NodeId pick = ready[std::uniform_int_distribution<size_t>(0, ready.size() - 1)(*rng)];
    order.push_back(pick);
    done |= uint64_t{1} << pick;
  }
  return order;
}

// The brute force scores each order with the planner's functions (EstimatedPeak), not with the
// search's incremental model, so the two are checked against each other too.
TEST(Schedule, ExactSearchEqualsBruteForceOnRandomSmallDags) {
  std::mt19937 rng(7);
  int graphs = 0, improved = 0, beat_by_optimum = 0;
  int64_t orders = 0;
  for (uint32_t seed = 0; graphs < 500; ++seed) {
    Graph g = SmallDagMaker(seed).Make(static_cast<int>(3 + seed % 8));
    const int64_t count = CountTopologicalOrders(g);
    if (count > 400) continue;  // keeps the brute force fast; wide graphs are tested below
    ++graphs;
    orders += count;
    g.schedule = RandomTopologicalOrder(g, &rng);
    int64_t best = std::numeric_limits<int64_t>::max();
    ForEachTopologicalOrder(g, [&](const std::vector<NodeId>& order) {
      best = std::min(best, EstimatedPeak(WithSchedule(g, order)));
    });
    Result<ScheduleSearch> s = MinimisePeakSchedule(g);
    ASSERT_TRUE(s.ok()) << "seed " << seed << ": " << s.status().message();
    ASSERT_EQ(s->kind, ScheduleSearchKind::kExact) << "seed " << seed;
    ASSERT_EQ(s->peak_after, best) << "seed " << seed;
    ASSERT_LE(s->lower_bound, best) << "seed " << seed;
    ASSERT_EQ(s->peak_before, EstimatedPeak(g)) << "seed " << seed;
    const Graph reordered = WithSchedule(g, s->schedule);
    ASSERT_TRUE(VerifyGraph(reordered).ok()) << "seed " << seed;
    ASSERT_EQ(EstimatedPeak(reordered), s->peak_after) << "seed " << seed;
    if (s->peak_after < s->peak_before) ++improved;
    if (s->lower_bound < best) ++beat_by_optimum;
  }
  // The generator makes real choices: many random orders are improved, and the DP (not only
  // the lower bound) has to prove optimality in many graphs.
  EXPECT_GT(improved, 100);
  EXPECT_GT(beat_by_optimum, 20);
  EXPECT_GT(orders, 5000);
}

// Graphs of 20 to 49 nodes with the exact search cut to 5 states and the beam to 8 states a
// layer, so the heuristic answers: valid orders, never worse than the file's, scored as the
// planner scores them, never below an exact answer (where a 20,000-state search finds one),
// and mostly equal to it.
TEST(Schedule, HeuristicPathGivesValidOrdersNeverWorse) {
  std::mt19937 rng(11);
  int heuristic = 0, compared = 0, optimal = 0;
  for (uint32_t seed = 0; seed < 30; ++seed) {
    Graph g = SmallDagMaker(1000 + seed).Make(static_cast<int>(20 + seed));
    g.schedule = RandomTopologicalOrder(g, &rng);
    ScheduleOptions tight;
    tight.max_states = 5;
    tight.beam_states = 1;  // the minimum: 8 states per layer
    tight.max_improve_steps = 100'000;
    Result<ScheduleSearch> h = MinimisePeakSchedule(g, tight);
    ASSERT_TRUE(h.ok()) << h.status().message();
    ASSERT_TRUE(VerifyGraph(WithSchedule(g, h->schedule)).ok()) << "seed " << seed;
    EXPECT_LE(h->peak_after, h->peak_before) << "seed " << seed;
    EXPECT_EQ(EstimatedPeak(WithSchedule(g, h->schedule)), h->peak_after) << "seed " << seed;
    if (h->kind == ScheduleSearchKind::kHeuristic) ++heuristic;
    ScheduleOptions bounded;
    bounded.max_states = bounded.beam_states = 20'000;
    Result<ScheduleSearch> exact = MinimisePeakSchedule(g, bounded);
    ASSERT_TRUE(exact.ok());
    EXPECT_LE(exact->lower_bound, exact->peak_after) << "seed " << seed;
    if (exact->kind != ScheduleSearchKind::kExact) continue;
    ++compared;
    EXPECT_LE(exact->peak_after, h->peak_after) << "seed " << seed;
    if (exact->peak_after == h->peak_after) ++optimal;
  }
  EXPECT_GT(heuristic, 15);
  EXPECT_GT(compared, 10);
  EXPECT_GE(3 * optimal, 2 * compared);  // 15 of 21 when written
}

// Twelve parallel expand/reduce branches: too many executed sets for a 100-state budget and
// an 8-state beam, so the heuristic answers, and finds the optimum (one branch at a time) the
// exact search finds.
TEST(Schedule, WideGraphHeuristicMatchesExact) {
  GraphBuilder b("wide");
  const ValueId x = b.Input("x", {1, 4, 4, 2});
  std::vector<ValueId> ends;
  for (int i = 0; i < 12; ++i) {
    const std::string name = "br" + std::to_string(i);
    const ValueId big = b.Op("conv2d", {x, b.Weight(name + "/w1", {32, 1, 1, 2}, 0.5f)},
                             ConvAttrs(1, "none"), name + "/expand");
    ends.push_back(b.Op("conv2d", {big, b.Weight(name + "/w2", {1, 1, 1, 32}, 0.5f)},
                        ConvAttrs(1, "none"), name + "/reduce"));
  }
  Attrs axis;
  axis.Set("axis", int64_t{3});
  Graph g = std::move(b.Finish({b.Op("concat", ends, axis, "join")})).value();
  // The file order runs every expansion first: 12 x 2,048 B live at once.
  std::vector<NodeId> bad;
  for (int i = 0; i < 12; ++i) bad.push_back(NodeNamed(g, "br" + std::to_string(i) + "/expand"));
  for (int i = 0; i < 12; ++i) bad.push_back(NodeNamed(g, "br" + std::to_string(i) + "/reduce"));
  bad.push_back(NodeNamed(g, "join"));
  g.schedule = bad;
  ScheduleOptions tight;
  tight.max_states = 100;
  tight.beam_states = 1;
  Result<ScheduleSearch> h = MinimisePeakSchedule(g, tight);
  Result<ScheduleSearch> exact = MinimisePeakSchedule(g);
  ASSERT_TRUE(h.ok() && exact.ok());
  EXPECT_EQ(h->kind, ScheduleSearchKind::kHeuristic);
  EXPECT_EQ(exact->kind, ScheduleSearchKind::kExact);
  EXPECT_GT(h->peak_before, 12 * 2048);
  EXPECT_EQ(h->peak_after, exact->peak_after);
  EXPECT_LT(exact->peak_after, 2 * 2048 + 12 * 64 + 128);
  ExpectRunsLikeOriginal(g, h->schedule, "wide");
}

// Searched orders of zoo:cnn (started from a random order) and of random graphs: their diagonal
// plans verify and run bit-identically to the unplanned graph in its own order.
TEST(Schedule, SearchedOrdersRunBitIdentically) {
  std::mt19937 rng(3);
  Result<Graph> cnn = LoadModel("zoo:cnn,res=16,channels=4");
  ASSERT_TRUE(cnn.ok());
  for (int trial = 0; trial < 3; ++trial) {
    Graph g = *cnn;
    g.schedule = RandomTopologicalOrder(g, &rng);
    Result<ScheduleSearch> s = MinimisePeakSchedule(g);
    ASSERT_TRUE(s.ok());
    EXPECT_LE(s->peak_after, s->peak_before);
    ExpectRunsLikeOriginal(g, s->schedule, "zoo:cnn");
  }
  int reordered = 0;
  for (uint32_t seed = 0; seed < 40; ++seed) {
    Graph g = SmallDagMaker(2000 + seed).Make(static_cast<int>(6 + seed % 20));
    g.schedule = RandomTopologicalOrder(g, &rng);
    Result<ScheduleSearch> s = MinimisePeakSchedule(g);
    ASSERT_TRUE(s.ok());
    if (s->schedule != g.schedule) ++reordered;
    ExpectRunsLikeOriginal(g, s->schedule, "random graph seed " + std::to_string(seed));
  }
  EXPECT_GT(reordered, 15);  // the runs check searched orders, not mostly the ones given
}

// The search frees a layer's weight gradient soonest by running its optimizer step early; the
// step overwrites the weight, so every reader of the weight (the backward product dY * W)
// must still run before it. The re-ordered step trains exactly like the original.
TEST(Schedule, InPlaceUpdatesKeepTheirReadersFirst) {
  GraphBuilder b("mlp_train");
  ValueId h = b.Input("x", {2, 8});
  for (int i = 0; i < 3; ++i) {
    const std::string name = "fc" + std::to_string(i);
    h = b.Op("fully_connected", {h, b.LayerWeight(name + "/w", {8, 8}, 8)}, {}, name);
    h = b.Op("tanh", {h}, {}, name + "/tanh");
  }
  const ValueId target = b.Constant("target", {2, 8}, {0.25f}, Role::kState);
  Graph g = std::move(b.Finish({b.Op("mse_loss", {h, target}, {}, "loss")})).value();
  Result<TrainingGraph> t = BuildTrainingGraph(&g);
  ASSERT_TRUE(t.ok()) << t.status().message();
  Result<ScheduleSearch> s = MinimisePeakSchedule(g);
  ASSERT_TRUE(s.ok()) << s.status().message();
  const Graph reordered = WithSchedule(g, s->schedule);
  ASSERT_TRUE(VerifyGraph(reordered).ok());
  std::vector<int32_t> position(s->schedule.size());
  for (size_t i = 0; i < s->schedule.size(); ++i)
    position[static_cast<size_t>(s->schedule[i])] = static_cast<int32_t>(i);
  const std::vector<std::vector<NodeId>> readers = g.Consumers();
  int updates = 0;
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    if (g.node(id).op != "sgd_momentum") continue;
    ++updates;
    for (NodeId reader : readers[static_cast<size_t>(g.node(id).inputs[0])]) {
      EXPECT_LE(position[static_cast<size_t>(reader)], position[static_cast<size_t>(id)])
          << g.node(reader).name;
    }
  }
  EXPECT_EQ(updates, 3);
  const std::vector<Bytes> inputs = DefaultInputs(g);
  Session before(g), after(reordered);
  Result<RunOutputs> a = before.Run(inputs), c = after.Run(inputs);
  ASSERT_TRUE(a.ok() && c.ok());
  EXPECT_EQ(a->outputs, c->outputs);
  for (ValueId param : t->params) EXPECT_EQ(*before.Persistent(param), *after.Persistent(param));
}

// Whole training steps of the tiny reference models (forward, backward, in-place optimizer
// updates): the search lowers their peak by more than 10 % (the gradient pass's order is not
// chosen for memory), and the re-ordered step computes the same loss and leaves the same
// weights, bit for bit.
TEST(Schedule, ReorderedTrainingStepsTrainIdentically) {
  ScheduleOptions quick;
  quick.max_states = quick.beam_states = 20'000;
  quick.max_improve_steps = 200'000;
  for (const char* model : {"zoo:resnet,size=tiny", "zoo:nmt,size=tiny"}) {
    Result<Graph> g = LoadModel(model);
    ASSERT_TRUE(g.ok()) << model;
    Result<TrainingGraph> t = BuildTrainingGraph(&*g);
    ASSERT_TRUE(t.ok()) << model << ": " << t.status().message();
    Result<ScheduleSearch> s = MinimisePeakSchedule(*g, quick);
    ASSERT_TRUE(s.ok()) << model << ": " << s.status().message();
    EXPECT_LT(s->peak_after * 10, s->peak_before * 9) << model;  // more than 10 % lower
    const Graph reordered = WithSchedule(*g, s->schedule);
    EXPECT_EQ(EstimatedPeak(reordered), s->peak_after) << model;
    const std::vector<Bytes> inputs = DefaultInputs(*g);
    Session before(*g), after(reordered);
    Result<RunOutputs> a = before.Run(inputs), c = after.Run(inputs);
    ASSERT_TRUE(a.ok() && c.ok()) << model;
    EXPECT_EQ(a->outputs, c->outputs) << model;
    for (ValueId param : t->params)
      EXPECT_EQ(*before.Persistent(param), *after.Persistent(param)) << model;
  }
}

// No nodes, or one: nothing to choose, and nothing breaks.
TEST(Schedule, TrivialGraphs) {
  GraphBuilder empty("empty");
  const ValueId x = empty.Input("x", {1, 4});
  Result<Graph> none = empty.Finish({x});
  ASSERT_TRUE(none.ok());
  Result<ScheduleSearch> s = MinimisePeakSchedule(*none);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->schedule.empty());
  EXPECT_EQ(s->peak_after, 16);  // x, live at step 0 and as the output
  GraphBuilder one("one");
  Result<Graph> single = one.Finish({one.Op("relu", {one.Input("x", {1, 4})}, {}, "r")});
  ASSERT_TRUE(single.ok());
  s = MinimisePeakSchedule(*single);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->schedule, single->schedule);
  EXPECT_EQ(s->peak_after, 16);  // x + r - 16: relu overlaps all of its dying input
  EXPECT_EQ(s->kind, ScheduleSearchKind::kExact);
}

TEST(Schedule, InvalidGraphIsAnError) {
  Graph g = TwoBranchGraph();
  std::swap(g.schedule[0], g.schedule[4]);  // a2 before its input a1r exists
  Result<ScheduleSearch> s = MinimisePeakSchedule(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("cannot re-order graph 'two_branches'"), std::string::npos)
      << s.status().message();
  EXPECT_FALSE(PlanWithBestSchedule(g).ok());
  EXPECT_FALSE(PlanWithBestSchedule(TwoBranchGraph(), {}, "no_such_planner").ok());
}

// Every shared .tflite model and every reference inference model, full size, planned only:
// the kept plan is never larger than the file order's diagonal plan, and verifies.
TEST(Schedule, NeverWorseOnEveryModel) {
  std::vector<std::string> models = {"zoo:mobilenet_v1", "zoo:mobilenet_v2", "zoo:cnn",
                                     "zoo:mlp",          "zoo:squeezenet",   "zoo:densenet121",
                                     "zoo:inception_v3"};
  for (const std::string& file : testing::SharedModelFiles()) models.push_back(file);
  ASSERT_GT(models.size(), 18u);
  for (const std::string& model : models) {
    Result<Graph> g = LoadModel(model);
    ASSERT_TRUE(g.ok()) << model << ": " << g.status().message();
    Result<ScheduledPlan> p = PlanWithBestSchedule(*g);
    ASSERT_TRUE(p.ok()) << model << ": " << p.status().message();
    EXPECT_LE(p->plan.plan.arena_bytes, p->original_arena) << model;
    EXPECT_LE(p->search.peak_after, p->search.peak_before) << model;
    EXPECT_LE(p->search.lower_bound, p->search.peak_after) << model;
    EXPECT_TRUE(VerifyPlan(p->plan.liveness.requests, p->plan.plan).ok()) << model;
    EXPECT_TRUE(VerifyGraph(p->graph).ok()) << model;
    // The diagonal plan's overlap-aware bound is EstimatedPeak of the order it planned.
    EXPECT_EQ(p->plan.lower_bound, p->reordered ? p->search.peak_after : p->search.peak_before)
        << model;
  }
}

}  // namespace
}  // namespace memfold

namespace memfold {
namespace {

// A node reading one buffer through two input slots (found by SearchedOrdersRunBitIdentically):
// each slot's O_s only guards that slot's reads, so AddOverlapAllowances allows the smallest
// over the slots. concat(m, m): 340 B for slot 0 and 320 B for slot 1; taking the larger let
// the plan overlap by 336 B and slot 0's copy overwrote bytes slot 1 had still to read.
TEST(Schedule, ConcatOfOneValueTwice) {
  GraphBuilder b("concat_twice");
  const ValueId m = b.Op("relu", {b.Input("x", {1, 4, 4, 5})}, {}, "m");
  Attrs axis;
  axis.Set("axis", int64_t{3});
  const Graph g = std::move(b.Finish({b.Op("concat", {m, m}, axis, "cat")})).value();
  ExpectRunsLikeOriginal(g, g.schedule, "concat(m, m)");
}

}  // namespace
}  // namespace memfold
