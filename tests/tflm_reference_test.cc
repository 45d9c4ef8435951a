// Every shared .tflite model and anchor against what TensorFlow Lite Micro itself planned and
// computed (tests/golden/tflm_reference.json, which scripts/tflm_reference.py generates from
// TFLM's Python interpreter): the greedy arena equals TFLM's planned head size, scratch buffers
// included, and the outputs for the contract's default input are bit-identical to TFLM's and to
// memfold's own unplanned run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "memfold/exec/checked_run_test_util.h"
#include "memfold/exec/executor.h"
#include "memfold/io/sha256.h"
#include "memfold/passes/best_plan.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {
namespace {

const std::filesystem::path kShared = MEMFOLD_SHARED_DIR;

nlohmann::json Reference() {
  std::ifstream in(std::filesystem::path(MEMFOLD_SOURCE_DIR) / "tests" / "golden" /
                   "tflm_reference.json");
  return nlohmann::json::parse(in)["models"];
}

std::filesystem::path ModelPath(const std::string& file) {
  for (const char* folder : {"models", "anchors"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(kShared / folder)) {
      if (entry.path().filename() == file) return entry.path();
    }
  }
  return {};
}

class TflmReference : public ::testing::TestWithParam<std::string> {};

TEST_P(TflmReference, GreedyArenaEqualsTflmHeadSize) {
  const nlohmann::json ref = Reference()[GetParam()];
  if (!ref["ok"].get<bool>()) GTEST_SKIP() << "TFLM itself refuses this model: " << ref["error"];
  Result<Graph> g = LoadModel(ModelPath(GetParam()).string());
  ASSERT_TRUE(g.ok()) << g.status().message();
  if (!g->offline_offsets.empty()) {
    GTEST_SKIP() << "TFLM places this model by the file's own offline plan, not its greedy planner "
                    "(see TfliteReader.VelaOfflinePlanIsReadAndRefused)";
  }
  Result<GraphPlan> gp = PlanGraph(*g, "greedy");
  ASSERT_TRUE(gp.ok()) << gp.status().message();
  EXPECT_EQ(gp->plan.arena_bytes, ref["head_bytes"].get<int64_t>());
}

TEST_P(TflmReference, OutputsAreBitIdenticalToTflm) {
  const nlohmann::json ref = Reference()[GetParam()];
  if (!ref["ok"].get<bool>()) GTEST_SKIP() << "TFLM itself refuses this model: " << ref["error"];
  Result<Graph> g = LoadModel(ModelPath(GetParam()).string());
  ASSERT_TRUE(g.ok()) << g.status().message();
  Result<GraphPlan> gp = PlanGraph(*g, "greedy");
  ASSERT_TRUE(gp.ok());
  const std::vector<Bytes> inputs = DefaultInputs(*g);
  EXPECT_TRUE(RunsIdentically(*g, *g, gp->liveness, gp->plan, inputs));
  Result<RunOutputs> planned = RunPlanned(*g, gp->liveness, gp->plan, inputs);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  ASSERT_EQ(planned->outputs.size(), ref["outputs"].size());
  for (size_t k = 0; k < planned->outputs.size(); ++k) {
    const Bytes& out = planned->outputs[k];
    EXPECT_EQ(Sha256Hex(out.data(), out.size()), ref["outputs"][k]["sha256"].get<std::string>())
        << "output " << k << "; TFLM's first values: " << ref["outputs"][k]["values"].dump();
  }
}

std::vector<std::string> ModelNames() {
  std::vector<std::string> names;
  const nlohmann::json models = Reference();
  for (auto it = models.begin(); it != models.end(); ++it) names.push_back(it.key());
  return names;
}

std::string TestName(const ::testing::TestParamInfo<std::string>& model) {
  std::string name = model.param.substr(0, model.param.find('.'));
  for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(SharedModels, TflmReference, ::testing::ValuesIn(ModelNames()), TestName);

// MCUNet's 320 KB ImageNet model (../shared/anchors) has tiny negative per-channel filter
// scales, which TFLM accepts: the multipliers of some round to zero, others are negative, and
// those layers run the reference loops (int8_simd.h HasSimdRecords). Its best plan (split into
// bands) runs checked read by read, to TFLM's output.
TEST(TflmAnchor, NegativeFilterScalesRunAsInTflm) {
  const std::string file = "mcunet-320kb-1mb_imagenet.tflite";
  Result<Graph> g = LoadModel(ModelPath(file).string());
  ASSERT_TRUE(g.ok()) << g.status().message();
  int negative = 0;
  for (ValueId v = 0; v < static_cast<ValueId>(g->num_values()); ++v) {
    if (const auto& q = g->value(v).quant; q.has_value()) {
      for (float scale : q->scale) negative += scale < 0.0f ? 1 : 0;
    }
  }
  EXPECT_GT(negative, 100);
  const std::vector<Bytes> inputs = DefaultInputs(*g);
  Result<BestPlan> best = PlanBest(*g);
  ASSERT_TRUE(best.ok()) << best.status().message();
  EXPECT_TRUE(best->split);
  EXPECT_TRUE(RunsIdentically(*g, best->graph, best->plan.liveness, best->plan.plan, inputs));
  Result<RunOutputs> planned =
      RunPlanned(best->graph, best->plan.liveness, best->plan.plan, inputs);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  ASSERT_EQ(planned->outputs.size(), 1u);
  EXPECT_EQ(Sha256Hex(planned->outputs[0].data(), planned->outputs[0].size()),
            Reference()[file]["outputs"][0]["sha256"].get<std::string>());
}

}  // namespace
}  // namespace memfold
