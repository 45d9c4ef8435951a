// Recomputation: Echo's three golden graphs (REFERENCE.md §4), gradients bit-identical across
// strategies on every reference model, and Echo never above the baseline or Mirror.
#include <gtest/gtest.h>

#include "memfold/exec/training.h"
#include "memfold/io/model_loader.h"
#include "memfold/passes/echo.h"
#include "memfold/passes/recompute.h"
#include "memfold/zoo/builder.h"

namespace memfold {
namespace {

constexpr int64_t kN = 64;

ValueId Fc(GraphBuilder& b, ValueId x, int64_t out, const std::string& name) {
  return b.Op("fully_connected", {x, b.LayerWeight(name + "/w", {out, b.shape(x).back()}, b.shape(x).back())}, {}, name);
}

ValueId Loss(GraphBuilder& b, ValueId y) {
  const ValueId target = b.Constant("target", b.shape(y), std::vector<float>(static_cast<size_t>(NumElements(b.shape(y))), 0.5f), Role::kState);
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
TEST(Echo, GoldenAddTanhIsNotRecomputed) {
  GraphBuilder b("golden1");
  const ValueId x = b.Input("x", {2, kN}), h = b.Input("h", {2, kN});
  const ValueId s = b.Op("add", {Fc(b, x, kN, "fc_x"), Fc(b, h, kN, "fc_h")}, {}, "add");
  const ValueId y = b.Op("tanh", {s}, {}, "tanh");
  const Trained t = Differentiate(b.Finish({Loss(b, Fc(b, y, kN, "fc_out"))}));
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

class Strategies : public ::testing::TestWithParam<std::string> {};

// Gradients are bit-identical under every strategy (dropout masks included: dropout is never
// re-drawn), and Echo's footprint is not above the baseline's or Mirror's.
TEST_P(Strategies, SameGradientsEchoNeverWorse) {
  std::string hash;
  int64_t none = 0, mirror = 0, echo = 0;
  for (const char* strategy : {"none", "mirror", "echo"}) {
    Result<Graph> forward = LoadModel(GetParam());
    ASSERT_TRUE(forward.ok()) << forward.status().message();
    Result<PlannedTraining> p = PlanTraining(std::move(forward).value(), strategy);
    ASSERT_TRUE(p.ok()) << p.status().message();
    Trainer trainer(p->graph, p->training, p->plan);
    const std::vector<Bytes> inputs = TrainingInputs(p->graph);
    Result<StepResult> step = trainer.Step(inputs);
    ASSERT_TRUE(step.ok()) << strategy << ": " << step.status().message();
    step = trainer.Step(inputs);  // a second step: the updated weights agree too
    ASSERT_TRUE(step.ok());
    const std::string h = GradientSha256(*step);
    if (hash.empty()) hash = h;
    EXPECT_EQ(h, hash) << strategy;
    const int64_t total = p->profile.breakdown.total();
    (std::string(strategy) == "none" ? none : std::string(strategy) == "mirror" ? mirror : echo) = total;
  }
  EXPECT_LE(echo, none);
  EXPECT_LE(echo, mirror);
}

std::string ModelName(const ::testing::TestParamInfo<std::string>& model) {
  return model.param.substr(4, model.param.find(',') - 4);
}

INSTANTIATE_TEST_SUITE_P(TinyModels, Strategies,
                         ::testing::Values("zoo:nmt,size=tiny", "zoo:transformer,size=tiny",
                                           "zoo:resnet,size=tiny", "zoo:deepspeech2,size=tiny"),
                         ModelName);

}  // namespace
}  // namespace memfold
