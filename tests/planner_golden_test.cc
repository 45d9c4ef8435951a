// Golden figures of every planner on every shared model and the zoo's inference models (test
// sizes, float and int8), of the best pipeline, of the safe overlaps and of the tiny training
// models under every recomputation strategy: the numbers the documentation reports must not
// move when the code is reorganised. The table was committed before the refactor of issue 13
// (tests/golden/planner_figures.txt); a difference fails with both lines.
//
// Regenerate (only for an intended change, explained in the commit):
//   MEMFOLD_UPDATE_GOLDEN=1 build/release/memfold_tests --gtest_filter=PlannerGolden.*
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "memfold/exec/overlap_trace.h"
#include "memfold/exec/training.h"
#include "memfold/passes/best_plan.h"
#include "memfold/passes/training_plan.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/plan/plan_graph.h"
#include "tests/test_models.h"

namespace memfold {
namespace {

namespace fs = std::filesystem;

const fs::path kGolden = fs::path(MEMFOLD_SOURCE_DIR) / "tests" / "golden" / "planner_figures.txt";

std::vector<std::string> InferenceModels() {
  std::vector<std::string> models = testing::SmallZooModels();
  for (const std::string& file : testing::SharedModelFiles()) models.push_back(file);
  return models;
}

// A model's name in the table: zoo specs as they are, files relative to the shared models.
std::string Label(const std::string& model) {
  if (model.rfind("zoo:", 0) == 0) return model;
  return fs::relative(model, fs::path(MEMFOLD_SHARED_DIR) / "models").string();
}

void AddInferenceFigures(const std::string& model, std::ostringstream* out) {
  const Result<Graph> g = LoadModel(model);
  ASSERT_TRUE(g.ok()) << g.status().message();
  const std::string label = Label(model);
  for (const std::string& planner : StrategyNames()) {
    if (planner == "offline" && g->offline_offsets.empty()) continue;
    const Result<GraphPlan> gp = PlanGraph(*g, planner, {.refine = true});
    *out << label << "\tplan " << planner << "\t";
    if (gp.ok()) {
      *out << gp->plan.arena_bytes << " B, bound " << gp->lower_bound << ", chose "
           << gp->plan.planner << ", peak " << gp->peak_time << "\n";
    } else {
      *out << "error: " << gp.status().message().substr(0, 60) << "\n";
    }
  }
  const Result<BestPlan> best = PlanBest(*g);
  ASSERT_TRUE(best.ok()) << best.status().message();
  *out << label << "\tbest pipeline\t";
  for (const BestStep& step : best->steps) *out << step.name << " " << step.arena_bytes << "; ";
  *out << "nodes " << best->graph.num_nodes() << "\n";
  int64_t analytic = 0, algorithmic = 0;
  for (const NodeOverlap& n : AnalyseOverlaps(*g, false).nodes) {
    analytic += n.analytic.value_or(0);
    algorithmic += n.algorithmic.value_or(0);
  }
  *out << label << "\tO_s sums\tanalytic " << analytic << ", algorithmic " << algorithmic << "\n";
}

void AddTrainingFigures(const std::string& model, std::ostringstream* out) {
  for (const char* strategy : {"none", "mirror", "echo"}) {
    Result<Graph> g = LoadModel(model);
    ASSERT_TRUE(g.ok()) << g.status().message();
    const Result<PlannedTraining> p = PlanTraining(std::move(g).value(), strategy);
    ASSERT_TRUE(p.ok()) << p.status().message();
    *out << model << "\ttrain " << strategy << "\t" << p->profile.breakdown.total() << " B, arena "
         << p->plan.plan.arena_bytes << ", recomputed " << p->recomputed_nodes << ", kept "
         << p->chosen_strategy() << "\n";
  }
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(PlannerGolden, EveryPlannerOnEveryModelIsUnchanged) {
  std::ostringstream out;
  for (const std::string& model : InferenceModels()) {
    ASSERT_NO_FATAL_FAILURE(AddInferenceFigures(model, &out)) << model;
  }
  for (const char* model :
       {"zoo:nmt,size=tiny", "zoo:transformer,size=tiny", "zoo:resnet,size=tiny",
        "zoo:deepspeech2,size=tiny", "zoo:deepspeech2,size=tiny,hidden=32,batch=8"}) {
    ASSERT_NO_FATAL_FAILURE(AddTrainingFigures(model, &out)) << model;
  }
  if (std::getenv("MEMFOLD_UPDATE_GOLDEN") != nullptr) {
    fs::create_directories(kGolden.parent_path());
    std::ofstream(kGolden) << out.str();
    GTEST_SKIP() << "wrote " << kGolden;
  }
  const std::string golden = ReadFile(kGolden);
  ASSERT_FALSE(golden.empty()) << kGolden << " is missing";
  std::istringstream want(golden), got(out.str());
  std::string expected, actual;
  int line = 0;
  while (std::getline(want, expected)) {
    ++line;
    ASSERT_TRUE(std::getline(got, actual)) << "line " << line << " missing: " << expected;
    EXPECT_EQ(actual, expected) << "line " << line;
  }
  EXPECT_FALSE(std::getline(got, actual)) << "extra line: " << actual;
}

}  // namespace
}  // namespace memfold
