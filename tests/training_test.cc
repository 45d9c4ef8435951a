// Training end to end: the gradient pass against finite differences on a whole network,
// training steps that lower the loss, planned steps bit-identical to unplanned ones, and the
// executed footprint equal to the planned one.
#include "memfold/exec/training.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "memfold/ops/builder.h"
#include "memfold/ops/registry.h"
#include "memfold/passes/gradient.h"
#include "memfold/passes/training_plan.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/plan/profile.h"
#include "test_util.h"

namespace memfold {
namespace {

// x [4, 6] -> fc(8) -> tanh -> fc(8) -> relu (+ x2 residual) -> fc(3) -> cross entropy.
Graph SmallNetwork() {
  GraphBuilder b("small");
  const ValueId x = b.Input("x", {4, 6});
  const ValueId labels = b.Input("labels", {4}, DType::kI32);
  ValueId h =
      b.Op("fully_connected", {x, b.LayerWeight("w1", {8, 6}, 6), b.Weight("b1", {8}, 0.1f)}, {},
           "fc1", "ffn");
  h = b.Op("tanh", {h}, {}, "tanh", "ffn");
  ValueId r = b.Op("fully_connected", {h, b.LayerWeight("w2", {8, 8}, 8)}, {}, "fc2", "ffn");
  r = b.Op("relu", {r}, {}, "relu", "ffn");
  h = b.Op("add", {h, r}, {}, "residual", "ffn");
  const ValueId logits =
      b.Op("fully_connected", {h, b.LayerWeight("w3", {3, 8}, 8)}, {}, "logits", "output");
  const ValueId loss = b.Op("softmax_cross_entropy", {logits, labels}, {}, "loss", "loss");
  return std::move(b.Finish({loss})).value();
}

// Four distinct one-hot rows with labels 0, 1, 2, 0: a batch the network can fit.
std::vector<Bytes> SeparableBatch() {
  Bytes x(4 * 6 * 4), labels(4 * 4);
  for (int i = 0; i < 4; ++i) {
    const float one = 1.0f;
    std::memcpy(x.data() + 4 * (i * 6 + i), &one, 4);
    const int32_t label = i % 3;
    std::memcpy(labels.data() + 4 * i, &label, 4);
  }
  return {x, labels};
}

TEST(Training, GradientsMatchFiniteDifferences) {
  const Graph forward = SmallNetwork();
  Graph g = forward;
  Result<TrainingGraph> t = BuildTrainingGraph(&g);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->params.size(), 4u);  // w1, b1, w2, w3
  Result<GraphPlan> plan = PlanGraph(g, "mxnet");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  Trainer trainer(g, t->grads, *plan);
  const std::vector<Bytes> inputs = TrainingInputs(g);
  Result<StepResult> step = trainer.Step(inputs);
  ASSERT_TRUE(step.ok()) << step.status().message();
  for (size_t p = 0; p < t->params.size(); ++p) {
    const ValueId param = t->params[p];
    for (int64_t e = 0; e < g.value(param).elements(); e += 5) {
      const float h = 1e-2f;
      const double numeric = (LossWithMoved(forward, param, e, h, inputs) -
                              LossWithMoved(forward, param, e, -h, inputs)) /
                             (2.0 * h);
      float analytic;
      std::memcpy(&analytic, step->gradients[p].data() + 4 * e, 4);
      EXPECT_NEAR(analytic, numeric, 2e-3 + 2e-2 * std::fabs(numeric))
          << g.value(param).name << "[" << e << "]";
    }
  }
}

TEST(Training, LossFallsAndPlannedStepsMatchUnplanned) {
  Graph g = SmallNetwork();
  TrainingConfig config;
  config.learning_rate = 0.1;
  Result<TrainingGraph> t = BuildTrainingGraph(&g, config);
  ASSERT_TRUE(t.ok());
  for (const char* planner : {"mxnet", "greedy"}) {
    Result<GraphPlan> plan = PlanGraph(g, planner);
    ASSERT_TRUE(plan.ok());
    Trainer trainer(g, t->grads, *plan);  // Step() fails if planned and unplanned differ
    const std::vector<Bytes> inputs = SeparableBatch();
    float first = 0, last = 0;
    for (int k = 0; k < 60; ++k) {
      Result<StepResult> step = trainer.Step(inputs);
      ASSERT_TRUE(step.ok()) << step.status().message();
      if (k == 0) first = step->loss;
      last = step->loss;
    }
    EXPECT_LT(last, first / 2) << planner;
  }
}

TEST(Training, ExecutedFootprintEqualsPlannedFootprint) {
  Graph g = SmallNetwork();
  Result<TrainingGraph> t = BuildTrainingGraph(&g);
  ASSERT_TRUE(t.ok());
  Result<GraphPlan> plan = PlanGraph(g, "mxnet");
  ASSERT_TRUE(plan.ok());
  const MemoryProfile profile = ProfileMemory(g, t->forward_nodes, *plan);
  Session session(g);
  Result<RunOutputs> out = session.Run(TrainingInputs(g), &plan->liveness, &plan->plan);
  ASSERT_TRUE(out.ok());
  // Constants nobody updates (the loss seed) are read in place, not allocated.
  int64_t read_in_place = 0;
  for (ValueId v = 0; v < g.num_values(); ++v) {
    if (g.value(v).is_constant() && session.Persistent(v) == nullptr)
      read_in_place += g.value(v).bytes();
  }
  EXPECT_EQ(out->allocated_bytes + read_in_place, profile.breakdown.total());
  EXPECT_GT(profile.breakdown.feature_maps, 0);
  EXPECT_GT(profile.breakdown.gradients, 0);
  EXPECT_GT(profile.breakdown.optimizer, 0);
}

// A step large enough that the OS's page counts are not noise: the resident memory measured for
// the planned session covers its persistent tensors and arena, and the unplanned twin, which
// frees values after their last use, needs far less than one buffer per value.
TEST(Training, MeasuredResidentMemoryCoversThePlan) {
  Result<PlannedTraining> p = PlanTraining(
      std::move(LoadModel("zoo:nmt,size=tiny,batch=32,hidden=256,seq=8")).value(), "echo");
  ASSERT_TRUE(p.ok()) << p.status().message();
  Trainer trainer(p->graph, p->training.grads, p->plan);
  Result<StepResult> step = trainer.Step(TrainingInputs(p->graph));
  ASSERT_TRUE(step.ok()) << step.status().message();
  EXPECT_GE(step->measured_peak_bytes, p->plan.plan.arena_bytes);
  int64_t every_value = 0;
  for (const Value& v : p->graph.values()) every_value += v.bytes();
  EXPECT_LT(CheckedStepBytes(p->graph, p->plan, p->training.grads), every_value);
}

// The tiny NMT learns to reverse sentences: source s, decoder input <0> s_n ... s_2, labels
// s_n ... s_1 (teacher forcing), on a fixed batch of eight sentences.
TEST(Training, TinyNmtLearnsToReverse) {
  Result<Graph> loaded = LoadModel("zoo:nmt,size=tiny,batch=8,seq=5");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  Graph g = std::move(loaded).value();
  TrainingConfig config;
  config.optimizer = "adam";
  config.learning_rate = 0.01;
  Result<TrainingGraph> t = BuildTrainingGraph(&g, config);
  ASSERT_TRUE(t.ok()) << t.status().message();
  Result<GraphPlan> plan = PlanGraph(g, "mxnet");
  ASSERT_TRUE(plan.ok());
  const int batch = 8, seq = 5;
  Bytes source(batch * seq * 4), target(batch * seq * 4), labels(batch * seq * 4);
  auto put = [](Bytes& b, int index, int32_t v) { std::memcpy(b.data() + 4 * index, &v, 4); };
  for (int s = 0; s < batch; ++s) {
    for (int k = 0; k < seq; ++k) {
      const int32_t token = 1 + (s * 7 + k * 3) % 10;  // ids 1..10 of the tiny vocabulary (11)
      put(source, s * seq + k, token);
      put(labels, s * seq + (seq - 1 - k), token);
    }
    put(target, s * seq, 0);
    for (int k = 1; k < seq; ++k) {
      int32_t previous;
      std::memcpy(&previous, labels.data() + 4 * (s * seq + k - 1), 4);
      put(target, s * seq + k, previous);
    }
  }
  Trainer trainer(g, t->grads, *plan);
  float first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    Result<StepResult> r = trainer.Step({source, target, labels});
    ASSERT_TRUE(r.ok()) << r.status().message();
    if (step == 0) first = r->loss;
    last = r->loss;
  }
  EXPECT_LT(last, first / 2) << "first " << first << ", last " << last;
}

TEST(Training, OpWithoutGradientIsAClearError) {
  GraphBuilder b("nograd");
  const ValueId x = b.Input("x", {2, 4});
  const ValueId w = b.Weight("w", {4}, 1.0f);
  const ValueId y = b.Op("max", {x, w}, {}, "max");
  const ValueId loss = b.Op("mse_loss", {y, x}, {}, "loss");
  Graph g = std::move(b.Finish({loss})).value();
  Result<TrainingGraph> t = BuildTrainingGraph(&g);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("'max' (max) has no gradient"), std::string::npos)
      << t.status().message();
}

}  // namespace
}  // namespace memfold
