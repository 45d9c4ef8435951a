// Property test over 1,000 random training graphs: what Echo's own graph achieves against the
// baseline and Mirror before the never-worse check, that the check keeps the smallest graph
// (and how often it had to), and on every tenth graph that the three strategies train to
// bit-identical gradients.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <random>

#include "memfold/exec/training.h"
#include "memfold/io/sha256.h"
#include "memfold/ops/builder.h"
#include "memfold/passes/recompute.h"
#include "memfold/passes/training_plan.h"
#include "memfold/placement/lower_bound.h"

namespace memfold {
namespace {

Graph RandomTrainingGraph(uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  GraphBuilder b("random", seed);
  const int64_t width = 4 * pick(1, 4);
  std::vector<ValueId> pool = {b.Input("x", {2, width})};
  const int ops = pick(2, 16);
  for (int i = 0; i < ops; ++i) {
    const std::string name = "n" + std::to_string(i);
    const ValueId x = pool[static_cast<size_t>(pick(0, static_cast<int>(pool.size()) - 1))];
    const ValueId y = pool[static_cast<size_t>(pick(0, static_cast<int>(pool.size()) - 1))];
    ValueId out = kNoValue;
    switch (pick(0, 6)) {
      case 0:
        out = b.Op("fully_connected", {x, b.LayerWeight(name + "/w", {width, width}, width)}, {},
                   name);
        break;
      case 1:
        out = b.Op("add", {x, y}, {}, name);
        break;
      case 2:
        out = b.Op("mul", {x, y}, {}, name);
        break;
      case 3:
        out = b.Op("tanh", {x}, {}, name);
        break;
      case 4:
        out = b.Op("relu", {x}, {}, name);
        break;
      case 5:
        out = b.Op("sigmoid", {x}, {}, name);
        break;
      default: {
        Attrs a;
        a.Set("rate", 0.25);
        a.Set("seed", int64_t{i});
        out = b.Op("dropout", {x}, a, name);
      }
    }
    pool.push_back(out);
  }
  // Everything produced feeds the loss, through one weight so the graph always trains.
  ValueId sum = b.Op("fully_connected", {pool.back(), b.LayerWeight("head", {width, width}, width)},
                     {}, "head");
  for (size_t k = 1; k + 1 < pool.size(); ++k)
    sum = b.Op("add", {sum, pool[k]}, {}, "sum" + std::to_string(k));
  const ValueId target = b.Constant(
      "target", {2, width}, std::vector<float>(static_cast<size_t>(2 * width), 0.5f), Role::kState);
  return std::move(b.Finish({b.Op("mse_loss", {sum, target}, {}, "loss", "loss")})).value();
}

// Echo's own graph, before the never-worse check, against the baseline and Mirror; the graph
// the check keeps; and how often the check had to fall back.
TEST(RandomTrainingGraphs, EchoOwnGraphAndFallbacks) {
  int own_below_none = 0, own_equal_none = 0, own_above_none = 0, own_above_mirror = 0;
  double worst_excess = 0;  // Echo's own graph over the baseline, as a fraction of it
  std::map<std::string, int> kept;
  for (uint32_t seed = 0; seed < 1000; ++seed) {
    std::string hash;
    int64_t total[3] = {0, 0, 0};
    int k = 0;
    PlannedTraining echo;
    for (const char* strategy : {"none", "mirror", "echo"}) {
      Result<PlannedTraining> p = PlanTraining(RandomTrainingGraph(seed), strategy);
      ASSERT_TRUE(p.ok()) << "seed " << seed << ": " << p.status().message();
      total[k++] = p->profile.breakdown.total();
      if (seed % 10 == 0) {
        Trainer trainer(p->graph, p->training.grads, p->plan);
        Result<StepResult> step = trainer.Step(TrainingInputs(p->graph));
        ASSERT_TRUE(step.ok()) << "seed " << seed << " " << strategy << ": "
                               << step.status().message();
        const std::string h = Sha256Hex(step->gradients);
        if (hash.empty()) hash = h;
        ASSERT_EQ(h, hash) << "seed " << seed << " " << strategy;
      }
      if (std::string(strategy) == "echo") echo = std::move(p).value();
    }
    const int64_t none = total[0], mirror = total[1], own = echo.echo_own_bytes;
    ++kept[echo.chosen_strategy()];
    own_below_none += own < none;
    own_equal_none += own == none;
    own_above_none += own > none;
    worst_excess =
        std::max(worst_excess, static_cast<double>(own - none) / static_cast<double>(none));
    own_above_mirror += own > mirror;
    // The check keeps the smallest of the three: Mirror's only when strictly below Echo's,
    // the baseline unless something is strictly below it.
    const std::string keep = std::min(own, mirror) >= none ? "none"
                             : mirror < own                ? "mirror"
                                                           : "echo";
    EXPECT_EQ(echo.chosen_strategy(), keep) << "seed " << seed;
    EXPECT_EQ(echo.fell_back, keep == "none") << "seed " << seed;
    EXPECT_EQ(total[2], keep == "echo" ? own : keep == "mirror" ? mirror : none) << "seed " << seed;
  }
  std::cout << "Echo's own graph: below the baseline on " << own_below_none
            << " of 1,000 random graphs, equal on " << own_equal_none << ", above on "
            << own_above_none << " (above Mirror on " << own_above_mirror << "); kept: echo "
            << kept["echo"] << ", mirror " << kept["mirror"] << ", baseline " << kept["none"]
            << "\n";
  RecordProperty("echo_own_below_baseline", own_below_none);
  RecordProperty("fell_back_to_mirror", kept["mirror"]);
  RecordProperty("fell_back_to_baseline", kept["none"]);
  // Measured: Echo's own graph is below the baseline on 134 graphs, equal on 437 (nothing
  // worth recomputing), above on 429 by at most 9.9 % (a clone's small output live at the
  // backward peak: these graphs' tensors are 32-128 B); above Mirror's on 8. The never-worse
  // check keeps the baseline on 866 and Echo's graph on 134.
  EXPECT_GE(own_below_none, 120);
  EXPECT_LE(worst_excess, 0.12);
  EXPECT_LE(own_above_mirror, 16);
}

// The floor Echo uses to skip planning Mirror's graph, for Mirror's choice and random ones:
// below every verified plan of the rewritten graph (greedy, MXNet's, diagonal overlaps), and
// close to the same bound taken on the rewritten graph itself.
TEST(RandomTrainingGraphs, RecomputedArenaFloorIsBelowEveryPlan) {
  std::mt19937 rng(7);
  double floors = 0, rewritten_floors = 0;
  for (uint32_t seed = 0; seed < 300; ++seed) {
    Graph g = RandomTrainingGraph(seed);
    const TrainingGraph t = std::move(BuildTrainingGraph(&g)).value();
    const Liveness live = ComputeLiveness(g);
    for (int trial = 0; trial < 3; ++trial) {
      std::vector<char> choice = MirrorChoice(g, t);
      for (size_t pos = 0; trial > 0 && pos < t.forward_nodes; ++pos) {
        const NodeId id = g.schedule[pos];
        choice[static_cast<size_t>(id)] = !MustNotRecompute(g, g.node(id)) && rng() % 2 == 0;
      }
      const int64_t floor = RecomputedArenaFloor(g, t, live, choice);
      Graph rewritten = g;
      ASSERT_TRUE(ApplyRecomputation(&rewritten, t, choice).ok());
      for (const char* planner : {"mxnet", "greedy", "diagonal"}) {
        Result<GraphPlan> gp = PlanGraph(rewritten, planner);
        ASSERT_TRUE(gp.ok()) << gp.status().message();
        EXPECT_LE(floor, gp->plan.arena_bytes)
            << "seed " << seed << " trial " << trial << " " << planner;
      }
      floors += static_cast<double>(floor);
      rewritten_floors +=
          static_cast<double>(LowerBoundForAnyOverlap(ComputeLiveness(rewritten).requests));
    }
  }
  EXPECT_GE(floors, 0.8 * rewritten_floors);  // a floor that skips, not just a valid one
  std::cout << "RecomputedArenaFloor / the floor of the rewritten graph: "
            << floors / rewritten_floors << "\n";
}

}  // namespace
}  // namespace memfold
