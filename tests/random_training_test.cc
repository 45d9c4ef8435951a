// Property test over 1,000 random training graphs: Echo's footprint is never above the
// baseline's or Mirror's, and on every tenth graph the three strategies train to bit-identical
// gradients.
#include <gtest/gtest.h>

#include <random>

#include "memfold/exec/training.h"
#include "memfold/zoo/builder.h"

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
      case 0: out = b.Op("fully_connected", {x, b.LayerWeight(name + "/w", {width, width}, width)}, {}, name); break;
      case 1: out = b.Op("add", {x, y}, {}, name); break;
      case 2: out = b.Op("mul", {x, y}, {}, name); break;
      case 3: out = b.Op("tanh", {x}, {}, name); break;
      case 4: out = b.Op("relu", {x}, {}, name); break;
      case 5: out = b.Op("sigmoid", {x}, {}, name); break;
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
  ValueId sum = b.Op("fully_connected", {pool.back(), b.LayerWeight("head", {width, width}, width)}, {}, "head");
  for (size_t k = 1; k + 1 < pool.size(); ++k) sum = b.Op("add", {sum, pool[k]}, {}, "sum" + std::to_string(k));
  const ValueId target = b.Constant("target", {2, width}, std::vector<float>(static_cast<size_t>(2 * width), 0.5f), Role::kState);
  return std::move(b.Finish({b.Op("mse_loss", {sum, target}, {}, "loss", "loss")})).value();
}

TEST(RandomTrainingGraphs, EchoNeverAboveBaselineOrMirror) {
  int echo_saved = 0;  // graphs where Echo beat the baseline: the property is not vacuous
  for (uint32_t seed = 0; seed < 1000; ++seed) {
    std::string hash;
    int64_t total[3] = {0, 0, 0};
    int k = 0;
    for (const char* strategy : {"none", "mirror", "echo"}) {
      Result<PlannedTraining> p = PlanTraining(RandomTrainingGraph(seed), strategy);
      ASSERT_TRUE(p.ok()) << "seed " << seed << ": " << p.status().message();
      total[k++] = p->profile.breakdown.total();
      if (seed % 10 != 0) continue;
      Trainer trainer(p->graph, p->training, p->plan);
      Result<StepResult> step = trainer.Step(TrainingInputs(p->graph));
      ASSERT_TRUE(step.ok()) << "seed " << seed << " " << strategy << ": " << step.status().message();
      const std::string h = GradientSha256(*step);
      if (hash.empty()) hash = h;
      ASSERT_EQ(h, hash) << "seed " << seed << " " << strategy;
    }
    EXPECT_LE(total[2], total[0]) << "seed " << seed;
    EXPECT_LE(total[2], total[1]) << "seed " << seed;
    echo_saved += total[2] < total[0];
  }
  EXPECT_GT(echo_saved, 100);
}

}  // namespace
}  // namespace memfold
