// Recomputation: Echo's three golden graphs (REFERENCE.md §4), gradients bit-identical across
// strategies on every reference model, and Echo never above the baseline or Mirror.
#include "memfold/passes/recompute.h"

#include <gtest/gtest.h>

#include <set>

#include "memfold/exec/training.h"
#include "memfold/io/sha256.h"
#include "memfold/ops/builder.h"
#include "memfold/passes/binarize.h"
#include "memfold/passes/echo.h"
#include "memfold/passes/training_plan.h"
#include "memfold/passes/update_schedule.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/placement/lower_bound.h"

namespace memfold {
namespace {

constexpr int64_t kN = 64;

ValueId Fc(GraphBuilder& b, ValueId x, int64_t out, const std::string& name) {
  return b.Op("fully_connected",
              {x, b.LayerWeight(name + "/w", {out, b.shape(x).back()}, b.shape(x).back())}, {},
              name);
}

ValueId Loss(GraphBuilder& b, ValueId y) {
  const ValueId target = b.Constant(
      "target", b.shape(y), std::vector<float>(static_cast<size_t>(NumElements(b.shape(y))), 0.5f),
      Role::kState);
  return b.Op("mse_loss", {y, target}, {}, "loss", "loss");
}

struct Trained {
  Graph graph;
  TrainingGraph training;
  std::vector<char> echo;
};

Trained Differentiate(Result<Graph> forward) {
  Trained t{std::move(forward).value(), {}, {}};
  t.training = std::move(BuildTrainingGraph(&t.graph)).value();
  t.echo = EchoChoice(t.graph, t.training);
  return t;
}

bool Chosen(const Trained& t, const std::string& name) {
  for (NodeId id = 0; id < t.graph.num_nodes(); ++id) {
    if (t.graph.node(id).name == name) return t.echo[static_cast<size_t>(id)] != 0;
  }
  ADD_FAILURE() << "no node " << name;
  return false;
}

// 1. FC(x) + FC(h) -> tanh: recomputing the add would stash both N-sized inputs to save one
//    N-sized output; recomputing tanh then saves nothing. Neither is recomputed.
Trained AddTanhBetweenFullyConnected() {
  GraphBuilder b("golden1");
  const ValueId x = b.Input("x", {2, kN}), h = b.Input("h", {2, kN});
  const ValueId s = b.Op("add", {Fc(b, x, kN, "fc_x"), Fc(b, h, kN, "fc_h")}, {}, "add");
  const ValueId y = b.Op("tanh", {s}, {}, "tanh");
  return Differentiate(b.Finish({Loss(b, Fc(b, y, kN, "fc_out"))}));
}

TEST(Echo, GoldenAddTanhIsNotRecomputed) {
  const Trained t = AddTanhBetweenFullyConnected();
  EXPECT_FALSE(Chosen(t, "add"));
  EXPECT_FALSE(Chosen(t, "tanh"));
}

// 2. Five attention steps broadcast-add their query [1, N] to the same keys [T, N] and apply
//    tanh: stashing the shared keys once (T*N) plus five queries beats stashing five [T, N]
//    tanh outputs, so every add and tanh is recomputed (the paper's Figures 8 and 13).
TEST(Echo, GoldenSharedKeysAreRecomputedTogether) {
  constexpr int64_t kT = 20;
  GraphBuilder b("golden2");
  const ValueId keys = Fc(b, b.Input("k", {kT, kN}), kN, "keys");
  ValueId total = kNoValue;
  for (int step = 0; step < 5; ++step) {
    const std::string s = std::to_string(step);
    const ValueId q = Fc(b, b.Input("q" + s, {1, kN}), kN, "query" + s);
    const ValueId score = b.Op("tanh", {b.Op("add", {q, keys}, {}, "add" + s)}, {}, "tanh" + s);
    const ValueId out = Fc(b, score, 1, "score" + s);
    total = total == kNoValue ? out : b.Op("add", {total, out}, {}, "sum" + s);
  }
  const Trained t = Differentiate(b.Finish({Loss(b, total)}));
  for (int step = 0; step < 5; ++step) {
    EXPECT_TRUE(Chosen(t, "add" + std::to_string(step))) << step;
    EXPECT_TRUE(Chosen(t, "tanh" + std::to_string(step))) << step;
  }
}

// 3. tanh -> tanh -> FC: recomputing the first tanh would stash its input instead of its
//    output (no gain), so it is kept; the second is recomputed from it; the FC is not re-run,
//    but its gradient reads the recomputed input.
TEST(Echo, GoldenChainBeforeFullyConnected) {
  GraphBuilder b("golden3");
  const ValueId y1 = b.Op("tanh", {Fc(b, b.Input("x", {2, kN}), kN, "fc_in")}, {}, "tanh1");
  const ValueId y2 = b.Op("tanh", {y1}, {}, "tanh2");
  Trained t = Differentiate(b.Finish({Loss(b, Fc(b, y2, kN, "fc"))}));
  EXPECT_FALSE(Chosen(t, "tanh1"));
  EXPECT_TRUE(Chosen(t, "tanh2"));
  EXPECT_FALSE(Chosen(t, "fc"));
  Result<RecomputeResult> r = ApplyRecomputation(&t.graph, t.training, t.echo);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->recomputed_nodes, 1);
  bool fc_grad_reads_clone = false;
  for (NodeId id : t.graph.schedule) {
    const Node& n = t.graph.node(id);
    if (n.name.rfind("fc/grad", 0) != 0) continue;
    for (ValueId in : n.inputs) fc_grad_reads_clone |= t.graph.value(in).name == "tanh2/recompute";
  }
  EXPECT_TRUE(fc_grad_reads_clone);
}

// The step index of an unrolled cell-state node named ".../t<k>/c[/recompute]", or -1.
int CellStep(const std::string& name) {
  const size_t c = name.find("/c/recompute");
  const size_t t = name.rfind("/t", c);
  if (c == std::string::npos || t == std::string::npos) return -1;
  return std::stoi(name.substr(t + 2, c - t - 2));
}

// Recomputation never runs back through recurrent state further than one step: following
// clones that read clones from any recomputed LSTM cell state reaches the cell state of at
// most one earlier step. Residual streams (no shared weights) are bounded only by length.
TEST(Echo, RecurrentChainsSpanAtMostOneStep) {
  // (DeepSpeech2 at batch 8 and 64 units: in the tiny default nothing pays for recomputation.)
  for (const char* model : {"zoo:nmt,size=tiny", "zoo:deepspeech2,size=tiny,hidden=64,batch=8"}) {
    Result<PlannedTraining> p = PlanTraining(std::move(LoadModel(model)).value(), "echo");
    ASSERT_TRUE(p.ok());
    const Graph& g = p->graph;
    auto is_clone = [&](NodeId n) { return g.node(n).name.ends_with("/recompute"); };
    int cell_clones = 0;
    for (NodeId id = 0; id < g.num_nodes(); ++id) {
      if (!is_clone(id) || CellStep(g.node(id).name) < 0) continue;
      ++cell_clones;
      std::set<int> steps;
      std::vector<NodeId> work = {id};
      std::set<NodeId> seen;
      while (!work.empty()) {
        const NodeId n = work.back();
        work.pop_back();
        if (!seen.insert(n).second) continue;
        if (CellStep(g.node(n).name) >= 0) steps.insert(CellStep(g.node(n).name));
        for (ValueId in : g.node(n).inputs) {
          if (in != kNoValue && g.value(in).producer != kNoNode && is_clone(g.value(in).producer))
            work.push_back(g.value(in).producer);
        }
      }
      EXPECT_LE(steps.size(), 2u) << model << ": " << g.node(id).name;
    }
    EXPECT_GT(cell_clones, 0) << model << ": no cell state is recomputed, the check is empty";
  }
}

// Algorithm 1's partition (the paper's Figure 11): walking back from the loss, the subgraph
// {add, tanh} is stopped by the fully-connected layers, which root further (empty) subgraphs.
TEST(Echo, PartitionStopsAtComputeHeavyNodes) {
  const Trained t = AddTanhBetweenFullyConnected();
  const std::vector<std::vector<NodeId>> parts = EchoSubgraphs(t.graph, t.training);
  ASSERT_EQ(parts.size(), 1u);
  ASSERT_EQ(parts[0].size(), 2u);
  EXPECT_EQ(t.graph.node(parts[0][0]).name, "add");
  EXPECT_EQ(t.graph.node(parts[0][1]).name, "tanh");
}

// On NMT the subgraphs are many, small and disjoint (the paper: 100 to 2,000 subgraphs of at
// most about ten nodes; memfold's full-size NMT: 1,049 subgraphs, mean 8.1 nodes, largest 31;
// the tiny one: 33, largest 26).
TEST(Echo, NmtPartitionsIntoSmallDisjointSubgraphs) {
  Graph g = std::move(LoadModel("zoo:nmt,size=tiny")).value();
  const TrainingGraph t = std::move(BuildTrainingGraph(&g)).value();
  const std::vector<std::vector<NodeId>> parts = EchoSubgraphs(g, t);
  std::set<NodeId> seen;
  size_t largest = 0;
  for (const std::vector<NodeId>& part : parts) {
    largest = std::max(largest, part.size());
    for (NodeId id : part)
      EXPECT_TRUE(seen.insert(id).second) << g.node(id).name << " in two subgraphs";
  }
  EXPECT_GT(parts.size(), 20u);
  EXPECT_LE(largest, static_cast<size_t>(4 * kMaxRecomputeChain));
}

class Strategies : public ::testing::TestWithParam<std::string> {};

// Gradients are bit-identical under every strategy (dropout masks included: dropout is never
// re-drawn). On these configurations Echo's own graph recomputes and is kept: it is below both
// the baseline and Mirror (for the other outcomes see FallbackPaths).
TEST_P(Strategies, SameGradientsAndEchoOwnGraphWins) {
  std::string hash;
  int64_t none = 0, mirror = 0;
  for (const char* strategy : {"none", "mirror", "echo"}) {
    Result<Graph> forward = LoadModel(GetParam());
    ASSERT_TRUE(forward.ok()) << forward.status().message();
    Result<PlannedTraining> p = PlanTraining(std::move(forward).value(), strategy);
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(FirstReadAfterUpdate(p->graph), "") << strategy;
    Trainer trainer(p->graph, p->training.grads, p->plan);
    const std::vector<Bytes> inputs = TrainingInputs(p->graph);
    Result<StepResult> step = trainer.Step(inputs);
    ASSERT_TRUE(step.ok()) << strategy << ": " << step.status().message();
    step = trainer.Step(inputs);  // a second step: the updated weights agree too
    ASSERT_TRUE(step.ok());
    const std::string h = Sha256Hex(step->gradients);
    if (hash.empty()) hash = h;
    EXPECT_EQ(h, hash) << strategy;
    const int64_t total = p->profile.breakdown.total();
    // The floor Echo uses to skip planning rivals that cannot win.
    const MemoryBreakdown& b = p->profile.breakdown;
    EXPECT_EQ(PersistentBytes(p->graph), b.weights + b.optimizer) << strategy;
    EXPECT_LE(LowerBoundForAnyOverlap(p->plan.liveness.requests), p->plan.plan.arena_bytes);
    EXPECT_EQ(p->chosen_strategy(), strategy);
    if (std::string(strategy) == "none") none = total;
    if (std::string(strategy) == "mirror") mirror = total;
    if (std::string(strategy) != "echo") continue;
    EXPECT_GT(p->recomputed_nodes, 0);
    EXPECT_FALSE(p->fell_back);
    EXPECT_EQ(p->echo_own_bytes, total);
    EXPECT_LT(p->echo_own_bytes, none);
    EXPECT_LT(p->echo_own_bytes, mirror);
  }
}

// The floor Echo uses to skip planning Mirror's graph, taken from the baseline graph: below
// Mirror's plans (batch norm re-run from saved statistics included), near the same bound
// taken on Mirror's graph itself.
TEST_P(Strategies, RecomputedArenaFloorBoundsMirrorsPlans) {
  Graph g = std::move(LoadModel(GetParam())).value();
  const TrainingGraph t = std::move(BuildTrainingGraph(&g)).value();
  const std::vector<char> choice = MirrorChoice(g, t);
  const int64_t floor = RecomputedArenaFloor(g, t, ComputeLiveness(g), choice);
  Graph mirror = g;
  ASSERT_TRUE(ApplyRecomputation(&mirror, t, choice).ok());
  for (const char* planner : {"mxnet", "greedy"}) {
    Result<GraphPlan> gp = PlanGraph(mirror, planner);
    ASSERT_TRUE(gp.ok()) << gp.status().message();
    EXPECT_LE(floor, gp->plan.arena_bytes) << planner;
  }
  const int64_t own_floor = LowerBoundForAnyOverlap(ComputeLiveness(mirror).requests);
  EXPECT_GE(floor, own_floor * 8 / 10);
}

std::string ModelName(const ::testing::TestParamInfo<std::string>& model) {
  return model.param.substr(4, model.param.find(',') - 4);
}

INSTANTIATE_TEST_SUITE_P(TinyModels, Strategies,
                         ::testing::Values("zoo:nmt,size=tiny", "zoo:transformer,size=tiny",
                                           "zoo:resnet,size=tiny",
                                           "zoo:deepspeech2,size=tiny,hidden=32,batch=8"),
                         ModelName);

// The never-worse check's other outcomes. ResNet at 16x16: Echo's own graph is above
// Mirror's, so Mirror's graph is kept. DeepSpeech2 tiny over 4 frames: Echo's own graph is
// above the baseline, which is kept and recomputes nothing.
TEST(Strategies, FallbackPaths) {
  struct Case {
    const char* model;
    const char* kept;
  };
  for (const Case& c : {Case{"zoo:resnet,size=tiny,res=16", "mirror"},
                        Case{"zoo:deepspeech2,size=tiny,seq=4", "none"}}) {
    Result<PlannedTraining> echo = PlanTraining(std::move(LoadModel(c.model)).value(), "echo");
    Result<PlannedTraining> other = PlanTraining(std::move(LoadModel(c.model)).value(), c.kept);
    ASSERT_TRUE(echo.ok() && other.ok()) << c.model;
    EXPECT_EQ(echo->strategy(), "echo");
    EXPECT_EQ(echo->chosen_strategy(), c.kept) << c.model;
    EXPECT_EQ(echo->fell_back, std::string(c.kept) == "none") << c.model;
    EXPECT_EQ(echo->profile.breakdown.total(), other->profile.breakdown.total()) << c.model;
    EXPECT_EQ(echo->recomputed_nodes, other->recomputed_nodes) << c.model;
    EXPECT_GE(echo->echo_own_bytes, other->profile.breakdown.total()) << c.model;
  }
}

// Echo's rewrite (clones, rewired backward reads, 1-bit mask codecs, a new schedule) rolled
// back in place gives the graph it started from: every value, node, input and the schedule.
TEST_P(Strategies, EchoRewriteRollsBackExactly) {
  Trained t = Differentiate(LoadModel(GetParam()));
  const Graph original = t.graph;
  const GraphCheckpoint checkpoint(t.graph);
  TrainingGraph training = t.training;
  Result<RecomputeResult> r = ApplyRecomputation(&t.graph, training, t.echo);
  ASSERT_TRUE(r.ok()) << r.status().message();
  BinarizeMasks(&t.graph, &training);
  ASSERT_GT(t.graph.num_nodes(), original.num_nodes());
  t.graph.Rollback(checkpoint);
  ASSERT_EQ(t.graph.num_values(), original.num_values());
  ASSERT_EQ(t.graph.num_nodes(), original.num_nodes());
  EXPECT_EQ(t.graph.schedule, original.schedule);
  for (NodeId id = 0; id < original.num_nodes(); ++id) {
    const Node& now = t.graph.node(id);
    const Node& before = original.node(id);
    EXPECT_EQ(now.name, before.name);
    EXPECT_EQ(now.inputs, before.inputs) << before.name;
    EXPECT_EQ(now.outputs, before.outputs) << before.name;
  }
  for (ValueId v = 0; v < original.num_values(); ++v) {
    EXPECT_EQ(t.graph.value(v).producer, original.value(v).producer) << original.value(v).name;
    EXPECT_EQ(t.graph.value(v).role, original.value(v).role) << original.value(v).name;
  }
}

// Batch norm over PyTorch's channel axis 1 (joint graphs): Mirror recomputes it as
// batch_norm_apply over the same axis, and the gradients are bit-identical to the baseline's.
TEST(Strategies, BatchNormAtAxisOneRecomputesExactly) {
  std::string hash;
  for (const char* strategy : {"none", "mirror"}) {
    GraphBuilder b("nchw", 7);
    const ValueId x = b.Input("x", {2, 3, 4, 4});
    const ValueId scaled = b.Op("mul", {x, b.Weight("scale", {4}, 1.0f)});
    const ValueId mean = b.Constant("mean", {3}, std::vector<float>(3, 0.0f), Role::kState);
    const ValueId var = b.Constant("var", {3}, std::vector<float>(3, 1.0f), Role::kState);
    const ValueId bn =
        b.Op("batch_norm_train",
             {scaled, b.Weight("gamma", {3}, 1.0f), b.Weight("beta", {3}, 0.1f), mean, var},
             Attrs{{"axis", int64_t{1}}});
    const ValueId y = b.Op("mul", {b.Op("relu", {bn}), b.Weight("out", {4}, 1.0f)});
    Result<Graph> forward = b.Finish({Loss(b, y)});
    ASSERT_TRUE(forward.ok()) << forward.status().message();
    Result<PlannedTraining> p = PlanTraining(std::move(forward).value(), strategy);
    ASSERT_TRUE(p.ok()) << p.status().message();
    if (std::string(strategy) == "mirror") {
      bool applies = false;
      for (NodeId id : p->graph.schedule) {
        const Node& n = p->graph.node(id);
        applies |= n.op == "batch_norm_apply" && n.attrs.Int("axis") == 1;
      }
      EXPECT_TRUE(applies);
    }
    Trainer trainer(p->graph, p->training.grads, p->plan);
    Result<StepResult> step = trainer.Step(TrainingInputs(p->graph));
    ASSERT_TRUE(step.ok()) << step.status().message();
    const std::string h = Sha256Hex(step->gradients);
    if (hash.empty()) hash = h;
    EXPECT_EQ(h, hash) << strategy;
  }
}

}  // namespace
}  // namespace memfold
