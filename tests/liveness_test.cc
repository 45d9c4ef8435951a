#include "memfold/plan/liveness.h"

#include <gtest/gtest.h>

#include "memfold/ops/builder.h"
#include "memfold/ops/registry.h"
#include "memfold/plan/overlap_allowances.h"
#include "memfold/plan/plan_graph.h"
#include "memfold/zoo/zoo.h"

namespace memfold {
namespace {

// input x [1,4] -> relu a -> reshape r [2,2] -> relu y (output); w is a constant of a
// second branch that is never in the arena.
TEST(Liveness, FollowsTflmLifetimesAndAliases) {
  GraphBuilder b("t");
  const ValueId x = b.Input("x", {1, 4});
  const ValueId a = b.Op("relu", {x}, {}, "a");
  Attrs shape;
  shape.Set("shape", std::vector<int64_t>{2, 2});
  const ValueId r = b.Op("reshape", {a}, shape, "r");
  const ValueId y = b.Op("relu", {r}, {}, "y");
  Result<Graph> g = b.Finish({y});
  ASSERT_TRUE(g.ok()) << g.status().message();
  const Liveness live = ComputeLiveness(*g);
  // Buffers: x, a (shared with r), y. Times: x at 0; a at 1 (relu), r at 2 (reshape), y at 3;
  // the caller reads y at 4.
  ASSERT_EQ(live.requests.size(), 3u);
  EXPECT_EQ(live.end_time, 4);
  const BufferRequest& bx =
      live.requests[static_cast<size_t>(live.buffer_of[static_cast<size_t>(x)])];
  const BufferRequest& ba =
      live.requests[static_cast<size_t>(live.buffer_of[static_cast<size_t>(a)])];
  const BufferRequest& by =
      live.requests[static_cast<size_t>(live.buffer_of[static_cast<size_t>(y)])];
  EXPECT_EQ(live.buffer_of[static_cast<size_t>(r)], live.buffer_of[static_cast<size_t>(a)]);
  EXPECT_EQ(bx.first, 0);  // inputs from time 0
  EXPECT_EQ(bx.last, 1);   // read by the op at time 1
  EXPECT_EQ(ba.first, 1);
  EXPECT_EQ(ba.last, 3);  // the alias r is read at time 3, so a lives until then
  EXPECT_EQ(by.first, 3);
  EXPECT_EQ(by.last, 4);  // outputs live to the end (= 4)
  EXPECT_EQ(bx.bytes, 16);
  EXPECT_EQ(bx.alignment, 16);
}

TEST(Liveness, ConstantsAndWeightsStayOutOfTheArena) {
  Result<Graph> g = BuildZooModel("mlp,layers=1");
  ASSERT_TRUE(g.ok());
  const Liveness live = ComputeLiveness(*g);
  for (ValueId v = 0; v < g->num_values(); ++v) {
    if (g->value(v).is_constant()) {
      EXPECT_EQ(live.buffer_of[static_cast<size_t>(v)], kNoBuffer);
    }
  }
  // input, dense0, logits, probabilities.
  EXPECT_EQ(live.requests.size(), 4u);
}

// Done-when criterion of the core issue: MobileNet v2 1.0 224 under greedy needs exactly its
// lower bound, 6,021,120 B = 112*112*96*4 (expansion, 4,816,896) + 56*56*96*4 (depthwise
// output, 1,204,224), live together at the second block's depthwise convolution.
TEST(PlanGraph, MobileNetV2GreedyReachesLowerBound) {
  Result<Graph> g = BuildZooModel("mobilenet_v2");
  ASSERT_TRUE(g.ok());
  Result<GraphPlan> gp = PlanGraph(*g, "greedy");
  ASSERT_TRUE(gp.ok()) << gp.status().message();
  EXPECT_EQ(gp->lower_bound, 112 * 112 * 96 * 4 + 56 * 56 * 96 * 4);
  EXPECT_EQ(gp->plan.arena_bytes, 6021120);
  const Node& peak = g->node(g->schedule[static_cast<size_t>(gp->peak_time - 1)]);
  EXPECT_EQ(peak.name, "expanded_conv_1/depthwise");
}

// MobileNet v1 1.0 224: the first pointwise conv maps 112x112x32 (1,605,632 B) to 112x112x64
// (3,211,264 B): 4,816,896 B, the largest input+output pair of the network.
TEST(PlanGraph, MobileNetV1GreedyReachesLowerBound) {
  Result<Graph> g = BuildZooModel("mobilenet_v1");
  ASSERT_TRUE(g.ok());
  Result<GraphPlan> gp = PlanGraph(*g, "greedy");
  ASSERT_TRUE(gp.ok());
  EXPECT_EQ(gp->lower_bound, 112 * 112 * 32 * 4 + 112 * 112 * 64 * 4);
  EXPECT_EQ(gp->plan.arena_bytes, gp->lower_bound);
  EXPECT_EQ(g->node(g->schedule[static_cast<size_t>(gp->peak_time - 1)]).name,
            "Conv2d_1_pointwise");
}

TEST(PlanGraph, BestIsNeverWorseThanAnyPlanner) {
  Result<Graph> g = BuildZooModel("cnn");
  ASSERT_TRUE(g.ok());
  Result<GraphPlan> best = PlanGraph(*g, "smallest");
  ASSERT_TRUE(best.ok());
  for (const std::string& name : StrategyNames()) {
    if (name == "offline") continue;  // zoo models carry no offline plan
    Result<GraphPlan> gp = PlanGraph(*g, name);
    ASSERT_TRUE(gp.ok()) << name;
    EXPECT_LE(best->plan.arena_bytes, gp->plan.arena_bytes) << name;
  }
}

TEST(PlanGraph, OfflineNeedsAnOfflinePlan) {
  Result<Graph> g = BuildZooModel("mlp");
  ASSERT_TRUE(g.ok());
  Result<GraphPlan> gp = PlanGraph(*g, "offline");
  ASSERT_FALSE(gp.ok());
  EXPECT_NE(gp.status().message().find("carries no offline plan"), std::string::npos);
}

// Offsets a model prescribes are kept; everything else is planned around them.
TEST(PlanGraph, OfflineKeepsTheFileOffsetsAndPlansTheRest) {
  Result<Graph> g = BuildZooModel("mlp,layers=2");
  ASSERT_TRUE(g.ok());
  const Liveness live = ComputeLiveness(*g);
  g->offline_offsets.assign(static_cast<size_t>(g->num_values()), -1);
  const ValueId first_hidden = live.value_of[1];
  g->offline_offsets[static_cast<size_t>(first_hidden)] = 4096;
  Result<GraphPlan> gp = PlanGraph(*g, "offline");
  ASSERT_TRUE(gp.ok()) << gp.status().message();
  EXPECT_EQ(gp->plan.offsets[1], 4096);
  EXPECT_EQ(gp->plan.arena_bytes, 4096 + 512);  // 128 floats at 4096; the rest fits below
}

TEST(PlanGraph, UnknownPlannerIsAnError) {
  Result<Graph> g = BuildZooModel("mlp");
  ASSERT_TRUE(g.ok());
  Result<GraphPlan> gp = PlanGraph(*g, "magic");
  ASSERT_FALSE(gp.ok());
  EXPECT_NE(gp.status().message().find("choose one of"), std::string::npos);
}

// Past the replay budget the algorithmic source falls back to the closed forms, node by node in
// schedule order. Transpose has only a replay model, so a fallback loses its allowance:
// x -> transpose t1 -> transpose t2 -> relu y, x and t1 dying at the transposes.
TEST(PlanGraph, OverlapReplaysStopAtTheirBudget) {
  GraphBuilder b("transposes");
  const ValueId x = b.Input("x", {1, 16, 4, 2});
  Attrs swap;
  swap.Set("perm", std::vector<int64_t>{0, 1, 3, 2});
  const ValueId t1 = b.Op("transpose", {x}, swap, "t1");
  const ValueId t2 = b.Op("transpose", {t1}, swap, "t2");
  Result<Graph> g = b.Finish({b.Op("relu", {t2}, {}, "y")});
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto allowances = [&](int64_t budget) {
    Liveness live = ComputeLiveness(*g);
    AddOverlapAllowances(*g, OverlapSource::kAlgorithmic, &live, budget);
    std::vector<size_t> count;
    for (ValueId v : {t1, t2}) {
      count.push_back(live.requests[static_cast<size_t>(live.buffer_of[static_cast<size_t>(v)])]
                          .may_overlap.size());
    }
    return count;
  };
  EXPECT_EQ(allowances(kOverlapReplayBudget), (std::vector<size_t>{1, 1}));
  EXPECT_EQ(allowances(g->value(t1).elements()), (std::vector<size_t>{1, 0}));
  EXPECT_EQ(allowances(0), (std::vector<size_t>{0, 0}));
}
}  // namespace
}  // namespace memfold
