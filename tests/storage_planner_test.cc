#include "memfold/plan/storage_planner.h"

#include <gtest/gtest.h>

#include "memfold/exec/checked_run_test_util.h"
#include "memfold/exec/executor.h"
#include "memfold/ops/builder.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {
namespace {

// x -> tanh -> tanh -> tanh: each tanh is the last reader of its input and may run in place,
// so the whole chain uses the input's storage: one storage of 64 floats.
TEST(StoragePlanner, InPlaceChainSharesOneStorage) {
  GraphBuilder b("chain");
  ValueId v = b.Input("x", {1, 64});
  for (int k = 0; k < 3; ++k) v = b.Op("tanh", {v}, {}, "t" + std::to_string(k));
  Result<Graph> g = b.Finish({v});
  ASSERT_TRUE(g.ok());
  const Liveness live = ComputeLiveness(*g);
  const StoragePlan plan = PlanStorage(*g, live);
  EXPECT_EQ(plan.storage_bytes.size(), 1u);
  EXPECT_EQ(plan.total_bytes, 256);
  EXPECT_EQ(plan.in_place.size(), 3u);
}

// x (4 KiB) -> fc -> a (1 KiB); a -> fc -> c (2 KiB); c -> fc -> d (1 KiB). Fully-connected
// never runs in place. x is free once a exists; c (2 KiB) then takes x's 4 KiB block (the
// smallest large-enough block within the match range) and d takes a's.
TEST(StoragePlanner, BestFitReusesFreedStorage) {
  GraphBuilder b("mlp");
  const ValueId x = b.Input("x", {1, 1024});
  const ValueId a = b.Op("fully_connected", {x, b.Weight("w1", {256, 1024}, 0.1f)}, {}, "a");
  const ValueId c = b.Op("fully_connected", {a, b.Weight("w2", {512, 256}, 0.1f)}, {}, "c");
  const ValueId d = b.Op("fully_connected", {c, b.Weight("w3", {256, 512}, 0.1f)}, {}, "d");
  Result<Graph> g = b.Finish({d});
  ASSERT_TRUE(g.ok());
  const Liveness live = ComputeLiveness(*g);
  const StoragePlan plan = PlanStorage(*g, live);
  auto storage = [&](ValueId v) {
    return plan.storage_of[static_cast<size_t>(live.buffer_of[static_cast<size_t>(v)])];
  };
  EXPECT_EQ(storage(c), storage(x));
  EXPECT_EQ(storage(d), storage(a));
  EXPECT_EQ(plan.total_bytes, 4096 + 1024);
  EXPECT_TRUE(plan.in_place.empty());
}

// A value that nothing computes but an operator reads (a file's opaque custom operator reads
// such tensors) gets a storage from the start, like a graph input: every request has one and the
// mxnet plan verifies (person_detect_vela's Ethos-U operator used to index past the storages).
TEST(StoragePlanner, ValuesNothingComputesGetAStorage) {
  Graph g;
  const ValueId x = g.AddValue(Value{.name = "x", .shape = {1, 16}, .role = Role::kInput});
  g.inputs = {x};
  const ValueId orphan = g.AddValue(Value{.name = "written_by_nobody", .shape = {1, 16}});
  const ValueId y = AddOp(&g, "add", {x, orphan}).value().front();
  g.outputs = {y};
  const Liveness live = ComputeLiveness(g);
  const StoragePlan plan = PlanStorage(g, live);
  for (int32_t storage : plan.storage_of) EXPECT_GE(storage, 0);
  EXPECT_TRUE(PlanGraph(g, "mxnet").ok());
}

// A view that is the last reader of its base: the base's storage is released once, by its
// read, not again as the view's own output. Released twice, two buffers of the next node
// shared it (a traced group norm's mean and rstd, each read only through a detach).
TEST(StoragePlanner, AViewsLastReadReleasesItsStorageOnce) {
  GraphBuilder b("views");
  const ValueId x = b.Input("x", {1, 16});
  const ValueId a = b.Op("tanh", {x}, {}, "a");
  b.Op("reshape", {a}, Attrs{{"shape", std::vector<int64_t>{16}}}, "view_of_a");  // unread
  const ValueId c = b.Op("sigmoid", {x}, {}, "c");
  const ValueId d = b.Op("exp", {x}, {}, "d");
  const ValueId sum = b.Op("add", {c, d}, {}, "sum");
  Result<Graph> g = b.Finish({b.Op("add", {sum, x}, {}, "total")});  // x never runs in place
  ASSERT_TRUE(g.ok()) << g.status().message();
  const Liveness live = ComputeLiveness(*g);
  const StoragePlan plan = PlanStorage(*g, live);
  auto storage = [&](ValueId v) {
    return plan.storage_of[static_cast<size_t>(live.buffer_of[static_cast<size_t>(v)])];
  };
  EXPECT_NE(storage(c), storage(d));
  EXPECT_TRUE(PlanGraph(*g, "mxnet").ok());
}

TEST(StoragePlanner, MxnetPlansVerifyAndRunIdentically) {
  GraphBuilder b("mix");
  const ValueId x = b.Input("x", {1, 8, 8, 4});
  ValueId y = b.Op("tanh", {x}, {}, "t");
  y = b.Op("add", {y, x}, {}, "residual");
  y = b.Op("sigmoid", {y}, {}, "s");
  Result<Graph> g = b.Finish({y});
  ASSERT_TRUE(g.ok());
  Result<GraphPlan> gp = PlanGraph(*g, "mxnet");
  ASSERT_TRUE(gp.ok()) << gp.status().message();
  const std::vector<Bytes> inputs = DefaultInputs(*g);
  EXPECT_TRUE(RunsIdentically(*g, *g, gp->liveness, gp->plan, inputs));
}

}  // namespace
}  // namespace memfold
