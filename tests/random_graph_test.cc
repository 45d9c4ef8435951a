// Property test over 1,000 random DAGs: every planner's plan verifies, the lower bound is
// <= greedy <= naive, diagonal <= greedy, and running inside the planned arena (with dead
// memory poisoned, inputs overlapped by their outputs up to the proven safe overlap) gives
// outputs bit-identical to the unplanned run, also after random re-scheduling.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "memfold/exec/checked_run_test_util.h"
#include "memfold/exec/executor.h"
#include "memfold/ir/verify.h"
#include "memfold/ops/builder.h"
#include "memfold/placement/lower_bound.h"
#include "memfold/placement/verify_plan.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {
namespace {

class RandomGraphMaker {
 public:
  explicit RandomGraphMaker(uint32_t seed) : rng_(seed), b_("random", seed) {}

  Graph Make() {
    const int64_t h = Pick(2, 6), w = Pick(2, 6);
    pool_.push_back(b_.Input("x", {1, h, w, Pick(1, 4)}));
    if (Pick(0, 1)) pool_.push_back(b_.Input("x2", {1, h, w, Pick(1, 4)}));
    const int ops = static_cast<int>(Pick(1, 14));
    for (int i = 0; i < ops; ++i) AddRandomOp(i);
    std::vector<ValueId> outputs = {pool_.back()};
    if (pool_.size() > 2 && Pick(0, 1))
      outputs.push_back(
          pool_[static_cast<size_t>(Pick(1, static_cast<int64_t>(pool_.size()) - 2))]);
    if (outputs.size() == 2 && outputs[0] == outputs[1]) outputs.pop_back();
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

  ValueId SameShapeAs(ValueId v) {
    std::vector<ValueId> matches;
    for (ValueId u : pool_) {
      if (b_.shape(u) == b_.shape(v)) matches.push_back(u);
    }
    return matches[static_cast<size_t>(Pick(0, static_cast<int64_t>(matches.size()) - 1))];
  }

  void AddRandomOp(int i) {
    const std::string name = "n" + std::to_string(i);
    const ValueId x = Any();
    const Shape s = b_.shape(x);
    ValueId y = kNoValue;
    switch (Pick(0, 9)) {
      case 0: {
        static const char* kUnary[] = {"relu", "relu6",      "tanh", "sigmoid",
                                       "neg",  "hard_swish", "exp"};
        y = b_.Op(kUnary[Pick(0, 6)], {x}, {}, name);
        break;
      }
      case 1: {
        static const char* kBinary[] = {"add", "sub", "mul", "max", "min"};
        y = b_.Op(kBinary[Pick(0, 4)], {x, SameShapeAs(x)}, {}, name);
        break;
      }
      case 2: {  // broadcast against a per-channel constant
        y = b_.Op("mul", {x, b_.Weight(name + "/scale", {s[3]}, 1.0f)}, {}, name);
        break;
      }
      case 3: {
        const int64_t k = Pick(0, 1) ? 3 : 1;
        const ValueId f = b_.Weight(name + "/w", {Pick(1, 5), k, k, s[3]}, 0.5f);
        y = b_.Op("conv2d", {x, f}, ConvAttrs(Pick(1, 2), "relu"), name);
        break;
      }
      case 4: {
        const ValueId f = b_.Weight(name + "/w", {1, 3, 3, s[3] * Pick(1, 2)}, 0.5f);
        y = b_.Op("depthwise_conv2d", {x, f}, ConvAttrs(1, "none"), name);
        break;
      }
      case 5: {
        std::vector<ValueId> parts = {x};
        for (ValueId u : pool_) {
          if (u != x && b_.shape(u)[1] == s[1] && b_.shape(u)[2] == s[2] && parts.size() < 3)
            parts.push_back(u);
        }
        Attrs a;
        a.Set("axis", int64_t{3});
        y = b_.Op("concat", parts, a, name);
        break;
      }
      case 6: {
        y = b_.Op(Pick(0, 1) ? "max_pool2d" : "avg_pool2d", {x},
                  PoolAttrs(2, 2, Pick(1, 2), "same"), name);
        break;
      }
      case 7: {  // reshape round trip: the alias shares its input's buffer
        Attrs flat;
        flat.Set("shape", std::vector<int64_t>{1, -1});
        const ValueId r = b_.Op("reshape", {x}, flat, name + "/flat");
        Attrs back;
        back.Set("shape", s);
        y = b_.Op("tanh", {b_.Op("reshape", {r}, back, name + "/back")}, {}, name);
        break;
      }
      case 8: {
        Attrs a;
        a.Set("paddings", std::vector<int64_t>{0, 0, 1, 0, 0, 1, 0, 0});
        a.Set("value", 0.5);
        y = b_.Op("pad", {x}, a, name);
        break;
      }
      default: {
        Attrs a;
        a.Set("perm", std::vector<int64_t>{0, 2, 1, 3});
        y = b_.Op("transpose", {x}, a, name);
        break;
      }
    }
    ASSERT_TRUE(b_.ok());
    pool_.push_back(y);
  }

  std::mt19937 rng_;
  GraphBuilder b_;
  std::vector<ValueId> pool_;
};

// A random topological order: repeatedly run a random ready node.
void Reschedule(Graph* g, std::mt19937* rng) {
  std::vector<char> ready(static_cast<size_t>(g->num_values()), 0);
  for (ValueId v = 0; v < g->num_values(); ++v)
    ready[static_cast<size_t>(v)] = g->value(v).producer == kNoNode;
  std::vector<NodeId> pending = g->schedule, order;
  while (!pending.empty()) {
    std::vector<size_t> runnable;
    for (size_t i = 0; i < pending.size(); ++i) {
      const Node& n = g->node(pending[i]);
      if (std::all_of(n.inputs.begin(), n.inputs.end(),
                      [&](ValueId v) { return ready[static_cast<size_t>(v)] != 0; }))
        runnable.push_back(i);
    }
    const size_t pick =
        runnable[std::uniform_int_distribution<size_t>(0, runnable.size() - 1)(*rng)];
    for (ValueId out : g->node(pending[pick]).outputs) ready[static_cast<size_t>(out)] = 1;
    order.push_back(pending[pick]);
    pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(pick));
  }
  g->schedule = order;
}

TEST(RandomGraphs, PlansVerifyAndRunBitIdentically) {
  std::mt19937 rng(2024);
  int64_t total_nodes = 0;
  for (uint32_t seed = 0; seed < 1000; ++seed) {
    Graph g = RandomGraphMaker(seed).Make();
    if (seed % 2 == 1) Reschedule(&g, &rng);
    ASSERT_TRUE(VerifyGraph(g).ok()) << "seed " << seed;
    total_nodes += g.num_nodes();
    const std::vector<Bytes> inputs = DefaultInputs(g);
    int64_t naive = 0, greedy = 0, diagonal = 0, bound = 0;
    for (const char* planner : {"naive", "greedy", "diagonal", "smallest"}) {
      Result<GraphPlan> gp = PlanGraph(g, planner);
      ASSERT_TRUE(gp.ok()) << "seed " << seed << " " << planner << ": " << gp.status().message();
      ASSERT_TRUE(VerifyPlan(gp->liveness.requests, gp->plan).ok());
      EXPECT_LE(LowerBoundForAnyOverlap(gp->liveness.requests), gp->plan.arena_bytes)
          << "seed " << seed << " " << planner;
      ASSERT_TRUE(RunsIdentically(g, g, gp->liveness, gp->plan, inputs))
          << "seed " << seed << " planner " << planner;
      if (std::string(planner) == "naive") naive = gp->plan.arena_bytes;
      if (std::string(planner) == "greedy") greedy = gp->plan.arena_bytes;
      if (std::string(planner) == "diagonal") diagonal = gp->plan.arena_bytes;
      bound = gp->lower_bound;
    }
    EXPECT_LE(bound, greedy) << "seed " << seed;
    EXPECT_LE(greedy, naive) << "seed " << seed;
    EXPECT_LE(diagonal, greedy) << "seed " << seed;
  }
  EXPECT_GT(total_nodes, 5000);  // the generator really builds non-trivial graphs
}

// The bound for any verified overlaps: at a step, the buffers created then and those dying
// then may share bytes, pairwise within neither group; buffers living through share none.
TEST(LowerBounds, AnyOverlapCountsTheLargerOfCreatedAndDying) {
  auto request = [](int32_t id, int64_t bytes, int32_t first, int32_t last) {
    return BufferRequest{.id = id, .bytes = bytes, .first = first, .last = last};
  };
  // An in-place chain a -> b -> c beside a buffer d live throughout.
  const std::vector<BufferRequest> chain = {request(0, 96, 0, 1), request(1, 96, 1, 2),
                                            request(2, 64, 2, 3), request(3, 48, 0, 3)};
  EXPECT_EQ(LowerBoundForAnyOverlap(chain), 144);
  EXPECT_EQ(LowerBound(chain), 240);
  // Two outputs created at step 1 over one dying 96 B input: they are disjoint, 144 B.
  const std::vector<BufferRequest> fork = {request(0, 96, 0, 1), request(1, 64, 1, 2),
                                           request(2, 80, 1, 2)};
  EXPECT_EQ(LowerBoundForAnyOverlap(fork), 144);
  // A buffer live only at its own step (scratch) is left out.
  const std::vector<BufferRequest> scratch = {request(0, 96, 0, 2), request(1, 512, 1, 1)};
  EXPECT_EQ(LowerBoundForAnyOverlap(scratch), 96);
}

}  // namespace
}  // namespace memfold
