// The `best` pipeline (passes/best_plan.h) on every shared .tflite model and every zoo inference
// model in float and int8 at small sizes: each step is no larger than the one before, the plan
// verifies, and the re-ordered and split graph, run in its arena, gives bit for bit the outputs
// of the model as loaded, run unplanned.
#include "memfold/passes/best_plan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "memfold/exec/checked_run_test_util.h"
#include "memfold/exec/executor.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/plan/plan_graph.h"
#include "tests/test_models.h"

namespace memfold {
namespace {

std::vector<std::string> Models() {
  std::vector<std::string> models = testing::SmallZooModels();
  for (const std::string& file : testing::SharedModelFiles()) models.push_back(file);
  return models;
}

class Best : public ::testing::TestWithParam<std::string> {};

TEST_P(Best, StepsNeverGrowAndTheRewrittenGraphRunsBitIdentically) {
  const Result<Graph> model = LoadModel(GetParam());
  ASSERT_TRUE(model.ok()) << model.status().message();
  const Result<BestPlan> best = PlanBest(*model);
  ASSERT_TRUE(best.ok()) << best.status().message();
  ASSERT_EQ(best->steps.size(), 6u);
  for (size_t k = 2; k < best->steps.size(); ++k) {
    EXPECT_LE(best->steps[k].arena_bytes, best->steps[k - 1].arena_bytes) << best->steps[k].name;
  }
  EXPECT_LE(best->steps[1].arena_bytes, best->steps[0].arena_bytes);  // "best" includes greedy
  EXPECT_EQ(best->plan.plan.arena_bytes, best->steps.back().arena_bytes);
  EXPECT_LE(best->recompute_fraction, 0.10);
  EXPECT_EQ(best->graph.outputs.size(), model->outputs.size());
  const std::vector<Bytes> inputs = DefaultInputs(*model);
  if (const Status runnable = CheckRunnable(*model, inputs); !runnable.ok()) {
    // The one shared model memfold cannot execute: an Ethos-U command stream.
    ASSERT_NE(GetParam().find("_vela"), std::string::npos) << runnable.message();
    GTEST_SKIP() << runnable.message();
  }
  EXPECT_TRUE(RunsIdentically(*model, best->graph, best->plan.liveness, best->plan.plan, inputs));
}

// The objectives on KWS, where splitting's smallest arena costs most extra work: memory keeps
// the smallest arena; balanced stays within 5 % of it with no more extra work (here less);
// speed adds none. Each plan verifies and runs bit-identically.
// The split search spends the budget it is given (on SqueezeNet the rounds around the peak
// reach the smallest arena with 2.3 % more FLOPs at 10 %, with 1.9 % at 2 %, and the segment
// search with none): memory searches smaller budgets too and keeps the cheaper of equal arenas,
// so a wider budget never costs more work for the same arena.
TEST(BestObjective, MemoryBreaksArenaTiesByExtraWork) {
  const Result<Graph> model = LoadModel("zoo:squeezenet,res=48");
  ASSERT_TRUE(model.ok()) << model.status().message();
  const Result<BestPlan> wide = PlanBest(*model);
  const Result<BestPlan> narrow = PlanBest(*model, {.max_recompute = 0.02});
  ASSERT_TRUE(wide.ok() && narrow.ok());
  ASSERT_EQ(wide->plan.plan.arena_bytes, narrow->plan.plan.arena_bytes);
  EXPECT_LE(wide->recompute_fraction, narrow->recompute_fraction);
}

TEST(BestObjective, BalancedTradesAtMostFivePercentForLessWork) {
  const std::string kws = (std::filesystem::path(MEMFOLD_SHARED_DIR) / "models" / "mlcommons-tiny" /
                           "kws_ref_model.tflite")
                              .string();
  if (!std::filesystem::exists(kws)) GTEST_SKIP() << kws << " not present";
  const Result<Graph> model = LoadModel(kws);
  ASSERT_TRUE(model.ok()) << model.status().message();
  std::map<Objective, BestPlan> plans;
  for (Objective o : {Objective::kMemory, Objective::kBalanced, Objective::kSpeed}) {
    Result<BestPlan> plan = PlanBest(*model, {.objective = o});
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    EXPECT_TRUE(RunsIdentically(*model, plan->graph, plan->plan.liveness, plan->plan.plan,
                                DefaultInputs(*model)))
        << ObjectiveName(o);
    plans.emplace(o, *std::move(plan));
  }
  const BestPlan& memory = plans.at(Objective::kMemory);
  const BestPlan& balanced = plans.at(Objective::kBalanced);
  const BestPlan& speed = plans.at(Objective::kSpeed);
  EXPECT_LE(static_cast<double>(balanced.plan.plan.arena_bytes),
            static_cast<double>(memory.plan.plan.arena_bytes) * (1 + kBalancedArenaSlack));
  EXPECT_LT(balanced.recompute_fraction, memory.recompute_fraction);
  EXPECT_EQ(speed.recompute_fraction, 0.0);
  EXPECT_LE(memory.plan.plan.arena_bytes, balanced.plan.plan.arena_bytes);
  EXPECT_LE(balanced.plan.plan.arena_bytes, speed.plan.plan.arena_bytes);
  ASSERT_TRUE(ParseObjective("balanced").ok());
  EXPECT_EQ(*ParseObjective("speed"), Objective::kSpeed);
  EXPECT_FALSE(ParseObjective("fast").ok());
}

// The models that concatenate (the shared .tflite files do not).
std::vector<std::string> ConcatModels() {
  std::vector<std::string> models;
  for (const char* zoo :
       {"cnn", "squeezenet,res=48", "densenet121,res=32", "inception_v3,res=75"}) {
    models.push_back(std::string("zoo:") + zoo);
    models.push_back(std::string("zoo:") + zoo + ",dtype=i8");
  }
  return models;
}

class ConcatViews : public ::testing::TestWithParam<std::string> {};

// Every concatenation asked to be a view, whether or not that is smaller, under a plain and an
// overlapping planner: inputs written in place (in rows along inner axes) give the same bits.
TEST_P(ConcatViews, RunBitIdentically) {
  const Result<Graph> model = LoadModel(GetParam());
  ASSERT_TRUE(model.ok()) << model.status().message();
  Graph viewed = *model;
  ASSERT_GT(MarkConcatViews(&viewed), 0);
  const std::vector<Bytes> inputs = DefaultInputs(*model);
  for (const char* planner : {"greedy", "diagonal"}) {
    const Result<GraphPlan> plan = PlanGraph(viewed, planner);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    EXPECT_TRUE(RunsIdentically(*model, viewed, plan->liveness, plan->plan, inputs)) << planner;
  }
}

std::string TestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param.rfind("zoo:", 0) == 0
                         ? info.param.substr(4)
                         : std::filesystem::path(info.param).stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(EveryModel, Best, ::testing::ValuesIn(Models()), TestName);
INSTANTIATE_TEST_SUITE_P(Concatenating, ConcatViews, ::testing::ValuesIn(ConcatModels()), TestName);

}  // namespace
}  // namespace memfold
