#include "memfold/exec/executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "memfold/exec/checked_run_test_util.h"
#include "memfold/ops/builder.h"
#include "memfold/plan/plan_graph.h"
#include "memfold/zoo/zoo.h"

namespace memfold {
namespace {

// a = relu(x); b = relu(a); y = add(a, b): `a` must survive b's computation.
Graph Diamond() {
  GraphBuilder builder("diamond");
  const ValueId x = builder.Input("x", {1, 64});
  const ValueId a = builder.Op("neg", {x}, {}, "a");
  const ValueId b = builder.Op("exp", {a}, {}, "b");
  const ValueId y = builder.Op("add", {a, b}, {}, "y");
  return std::move(builder.Finish({y})).value();
}

TEST(Executor, PlannedRunMatchesUnplannedRun) {
  const Graph g = Diamond();
  Result<GraphPlan> gp = PlanGraph(g, "greedy");
  ASSERT_TRUE(gp.ok());
  const std::vector<Bytes> inputs = DefaultInputs(g);
  EXPECT_TRUE(RunsIdentically(g, g, gp->liveness, gp->plan, inputs));
  Result<RunOutputs> planned = RunPlanned(g, gp->liveness, gp->plan, inputs);
  ASSERT_TRUE(planned.ok());
  // y[k] = -x[k] + exp(-x[k]) with x[k] = sin(0.01 k).
  float y1;
  std::memcpy(&y1, planned->outputs[0].data() + 4, 4);
  const float x1 = static_cast<float>(std::sin(0.01));
  EXPECT_EQ(y1, -x1 + std::exp(-x1));
}

// A plan that puts `b` on top of the still-live `a` must be caught: `y` reads `a` after `b`
// was written over it, which the checked run sees at that read (and the outputs differ too).
TEST(Executor, UnsafePlanIsCaughtByComparison) {
  const Graph g = Diamond();
  Result<GraphPlan> gp = PlanGraph(g, "greedy");
  ASSERT_TRUE(gp.ok());
  Plan bad = gp->plan;
  const ValueId a = 1, b = 2;  // ids from Diamond(): x=0, a=1, b=2, y=3
  ASSERT_EQ(g.value(a).name, "a");
  ASSERT_EQ(g.value(b).name, "b");
  bad.offsets[static_cast<size_t>(gp->liveness.buffer_of[b])] =
      bad.offsets[static_cast<size_t>(gp->liveness.buffer_of[a])];
  const std::vector<Bytes> inputs = DefaultInputs(g);
  Result<CheckedRun> checked = RunChecked(g, g, gp->liveness, bad, inputs);
  ASSERT_TRUE(checked.ok()) << checked.status().message();
  ASSERT_FALSE(checked->identical());
  EXPECT_EQ(checked->first_difference->op_name, "y");
  EXPECT_EQ(checked->first_difference->value_name, "a");
  Result<RunOutputs> planned = RunPlanned(g, gp->liveness, bad, inputs);
  Result<RunOutputs> unplanned = RunUnplanned(g, inputs);
  ASSERT_TRUE(planned.ok() && unplanned.ok());
  EXPECT_NE(planned->outputs, unplanned->outputs);
}

TEST(Executor, DefaultInputsFollowTheContract) {
  GraphBuilder builder("inputs");
  builder.Input("f", {3});
  builder.Input("i8", {3}, DType::kI8);
  builder.Input("u8", {3}, DType::kU8);
  builder.Input("i16", {2}, DType::kI16);
  builder.Input("i32", {2}, DType::kI32);
  Graph g = std::move(builder.Finish({})).value();
  const std::vector<Bytes> in = DefaultInputs(g);
  ASSERT_EQ(in.size(), 5u);
  float f2;
  std::memcpy(&f2, in[0].data() + 8, 4);
  EXPECT_EQ(f2, static_cast<float>(std::sin(0.02)));
  EXPECT_EQ(static_cast<int8_t>(in[1][0]), 3 - 128);   // ((7*0+3) mod 256) - 128
  EXPECT_EQ(static_cast<int8_t>(in[1][2]), 17 - 128);  // k = 2: 17
  EXPECT_EQ(static_cast<uint8_t>(in[2][1]), 10);       // k = 1: 10
  int16_t h;
  std::memcpy(&h, in[3].data() + 2, 2);
  EXPECT_EQ(h, 10 - 32768);
  int32_t i;
  std::memcpy(&i, in[4].data() + 4, 4);
  EXPECT_EQ(i, 10);
}

TEST(Executor, WrongInputSizeIsAnError) {
  const Graph g = Diamond();
  std::vector<Bytes> inputs = {Bytes(3)};
  Result<RunOutputs> out = RunUnplanned(g, inputs);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("needs 256 bytes"), std::string::npos)
      << out.status().message();
}

TEST(Executor, EveryZooModelRunsIdenticallyInItsArena) {
  for (const char* spec : {"mobilenet_v1,alpha=0.25,res=96", "mobilenet_v2,alpha=0.35,res=96",
                           "mobilenet_v2,alpha=0.35,res=96,dtype=i8", "mlp", "cnn"}) {
    Result<Graph> g = BuildZooModel(spec);
    ASSERT_TRUE(g.ok()) << spec;
    for (const std::string& planner : StrategyNames()) {
      if (planner == "offline") continue;  // zoo models carry no offline plan
      Result<GraphPlan> gp = PlanGraph(*g, planner);
      ASSERT_TRUE(gp.ok()) << spec << " " << planner;
      EXPECT_TRUE(RunsIdentically(*g, *g, gp->liveness, gp->plan, DefaultInputs(*g)))
          << spec << " " << planner;
    }
  }
}

}  // namespace
}  // namespace memfold
