// `memfold compile --run` on QEMU's emulated MPS2 AN386 (Cortex-M4): the models of the issue
// under greedy, diagonal and best plans with the arena poisoned, outputs compared with the
// host's proven planned run and with TensorFlow Lite Micro's own (../shared/reference), RAM
// and flash read off the binary; and a deliberately wrong overlap, which the device must get
// exactly as wrong as the host executor does. Needs the cross toolchain and QEMU
// (scripts/install-deps.sh installs them); the kernel library is built once by the
// device_library fixture and shared through MEMFOLD_DEVICE_CACHE.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "memfold/compile/codegen.h"
#include "memfold/compile/device_build.h"
#include "memfold/exec/executor.h"
#include "memfold/exec/overlap_trace.h"
#include "memfold/ops/registry.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/plan/plan_graph.h"
#include "tests/lstm_model.h"
#include "tests/program_runner.h"
#include "tests/vision_ops_model.h"

namespace memfold {
namespace {

using testing::Memfold;

const std::string kShared = MEMFOLD_SHARED_DIR;
const std::string kCache = MEMFOLD_DEVICE_CACHE;

std::string TreeDir(const std::string& name) {
  return (std::filesystem::path(MEMFOLD_DEVICE_TREES) / name).string();
}

// The outputs TFLM computed for a shared model, by sha256 (empty for zoo models).
std::vector<std::string> TflmSha256(const std::string& model) {
  if (model.rfind("zoo:", 0) == 0) return {};
  std::ifstream in(kShared + "/reference/tflm_reference.json");
  const nlohmann::json reference = nlohmann::json::parse(in);
  std::vector<std::string> sha;
  const auto& entry = reference["models"][std::filesystem::path(model).filename().string()];
  for (const auto& o : entry["outputs"]) sha.push_back(o["sha256"]);
  return sha;
}

struct Case {
  std::string model;
  std::string planner;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.model << " --planner " << c.planner; }

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  const std::string& model = info.param.model;
  const std::string name =
      model.rfind("zoo:", 0) == 0 ? model.substr(4) : std::filesystem::path(model).stem().string();
  return CIdentifier(name) + "_" + info.param.planner;
}

class IssueModelOnDevice : public ::testing::TestWithParam<Case> {};

TEST_P(IssueModelOnDevice, PoisonedArenaOutputsEqualTheHostAndTflm) {
  const Case& c = GetParam();
  const std::string dir = TreeDir(CaseName(::testing::TestParamInfo<Case>(c, 0)));
  const auto out = Memfold("compile '" + c.model + "' --planner " + c.planner + " -o " + dir +
                           " --run --poison --json --cache " + kCache);
  ASSERT_EQ(out.code, 0) << out.err;
  const nlohmann::json run = out.Json();
  EXPECT_TRUE(run["identical_to_host"].get<bool>());
  EXPECT_TRUE(run["poisoned"].get<bool>());
  // One static arena of exactly the planned size, and RAM is everything static plus the stack
  // measured on the target.
  EXPECT_EQ(run["arena_bytes"], run["planned_arena_bytes"]);
  EXPECT_EQ(run["ram_bytes"].get<int64_t>(), run["arena_bytes"].get<int64_t>() +
                                                 run["static_bytes"].get<int64_t>() +
                                                 run["stack_bytes"].get<int64_t>());
  EXPECT_GT(run["stack_bytes"].get<int64_t>(), 64);
  EXPECT_LT(run["stack_bytes"].get<int64_t>(), 16 << 10);
  EXPECT_GT(run["flash_bytes"].get<int64_t>(), run["constants_bytes"].get<int64_t>());
  const std::vector<std::string> tflm = TflmSha256(c.model);
  for (size_t k = 0; k < tflm.size(); ++k) EXPECT_EQ(run["outputs"][k]["sha256"], tflm[k]) << k;
  // The host's own run of the same plan prints the same outputs.
  const auto host = Memfold("run '" + c.model + "' --planner " + c.planner + " --json");
  ASSERT_EQ(host.code, 0) << host.err;
  for (size_t k = 0; k < run["outputs"].size(); ++k)
    EXPECT_EQ(run["outputs"][k]["sha256"], host.Json()["outputs"][k]["sha256"]) << k;
}

std::vector<Case> Cases() {
  const std::vector<std::string> models = {
      kShared + "/models/mlcommons-tiny/vww_96_int8.tflite",
      kShared + "/models/mlcommons-tiny/kws_ref_model.tflite",
      kShared + "/models/tflite-micro/person_detect.tflite",
      kShared + "/models/mlcommons-tiny/pretrainedResnet_quant.tflite",
      kShared + "/models/mlcommons-tiny/ad01_int8.tflite",
      "zoo:mobilenet_v1,alpha=0.25,res=128,dtype=i8"};
  std::vector<Case> cases;
  for (const std::string& m : models) {
    for (const char* p : {"greedy", "diagonal", "best"}) cases.push_back({m, p});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(IssueModels, IssueModelOnDevice, ::testing::ValuesIn(Cases()), CaseName);

TEST(DeviceRuns, PersonDetectBestRunsInItsPlannedArena) {
  const std::string model = kShared + "/models/tflite-micro/person_detect.tflite";
  const auto out = Memfold("compile " + model + " --planner best --objective memory -o " +
                           TreeDir("person_detect_best_plain") + " --run --json --cache " + kCache);
  ASSERT_EQ(out.code, 0) << out.err;
  const nlohmann::json run = out.Json();
  EXPECT_EQ(run["objective"], "memory");  // compile's default, balanced, trades 1 % for speed
  const auto planned = Memfold("plan " + model + " --planner best --json");
  ASSERT_EQ(planned.code, 0) << planned.err;
  EXPECT_EQ(run["arena_bytes"], planned.Json()["arena_bytes"]);
  EXPECT_EQ(run["sections"][".arena"], planned.Json()["arena_bytes"]);
  EXPECT_EQ(run["outputs"][0]["sha256"], TflmSha256("person_detect.tflite")[0]);
  EXPECT_FALSE(run["poisoned"].get<bool>());
}

// A streamed input on the device: the image stays in flash and the harness's camera delivers
// the rows of each box a tile asks for (memfold_<name>_invoke_from); the poisoned arena holds
// only the boxes, RAM is the streamed arena plus statics and stack, and the outputs are TFLM's.
TEST(DeviceRuns, StreamedInputRunsFromACameraWithTflmsOutputs) {
  const std::string model = kShared + "/models/tflite-micro/person_detect.tflite";
  const auto out =
      Memfold("compile " + model + " --planner best --stream-input -o " +
              TreeDir("person_detect_streamed") + " --run --poison --json --cache " + kCache);
  ASSERT_EQ(out.code, 0) << out.err;
  const nlohmann::json run = out.Json();
  EXPECT_TRUE(run["identical_to_host"].get<bool>());
  EXPECT_EQ(run["outputs"][0]["sha256"], TflmSha256("person_detect.tflite")[0]);
  const int64_t arena = run["arena_bytes"].get<int64_t>();
  EXPECT_LE(run["ram_bytes"].get<int64_t>(), arena + (16 << 10));
  // Every byte of the 96x96 image was delivered at least once (halo rows again where tiles
  // overlap), and the arena is below the best plan that holds the image resident.
  EXPECT_GE(run["fetched_bytes"].get<int64_t>(), 96 * 96);
  const auto resident = Memfold("plan " + model + " --planner best --objective balanced --json");
  ASSERT_EQ(resident.code, 0) << resident.err;
  EXPECT_LT(arena, resident.Json()["arena_bytes"].get<int64_t>());
}

TEST(DeviceRuns, FloatLogitsAreBitIdenticalAndSoftmaxDiffersOnlyByTheTargetsExpf) {
  auto out = Memfold("compile zoo:cnn,head=logits --planner best -o " + TreeDir("cnn_logits") +
                     " --run --poison --json --cache " + kCache);
  ASSERT_EQ(out.code, 0) << out.err;
  EXPECT_TRUE(out.Json()["identical_to_host"].get<bool>());
  out = Memfold("compile zoo:cnn --planner best -o " + TreeDir("cnn_softmax") +
                " --run --poison --json --cache " + kCache);
  ASSERT_EQ(out.code, 0) << out.err;
  const nlohmann::json softmax = out.Json()["outputs"][0];
  EXPECT_LE(softmax["max_ulp_difference"].get<int64_t>(), 4);
  EXPECT_TRUE(out.Json()["agrees_with_host"].get<bool>());
}

TEST(DeviceRuns, TheOperatorsAddedForConverterOutputRunOnTheDevice) {
  std::filesystem::create_directories(MEMFOLD_DEVICE_TREES);
  const std::pair<const char*, Bytes> models[] = {
      {"vision_ops", testing::VisionOpsFile().value()},
      {"movement_ops", testing::MovementOpsFile().value()},
      {"logic_ops", testing::LogicOpsFile().value()},
      {"geometry_ops", testing::GeometryOpsFile().value()},
      {"geometry_ops_i8", testing::GeometryOpsI8File().value()},
      {"lstm_kws_i8", testing::LstmKeywordFile({}).value()},
      {"lstm_kws_f32", testing::LstmKeywordFile({.dtype = DType::kF32}).value()}};
  for (const auto& [name, bytes] : models) {
    const std::string file = TreeDir(std::string(name) + ".tflite");
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    for (const char* planner : {"diagonal", "best"}) {
      const auto out = Memfold("compile " + file + " --planner " + planner + " -o " +
                               TreeDir(std::string(name) + "_" + planner) +
                               " --run --poison --json --cache " + kCache);
      ASSERT_EQ(out.code, 0) << out.err;
      EXPECT_TRUE(out.Json()["agrees_with_host"].get<bool>()) << name << " " << planner;
    }
  }
}

// A plan that overlaps an operator's output with its input far beyond O_s: the host executor,
// poisoning as always, computes a wrong result, and the device must compute the very same
// wrong bytes (same kernels, same access order, same homes) — so a wrong overlap shows up on
// the device exactly as on the host.
TEST(DeviceRuns, AWrongOverlapGoesWrongOnTheDeviceExactlyAsOnTheHost) {
  const std::string model = kShared + "/models/mlcommons-tiny/kws_ref_model.tflite";
  const Graph graph = LoadModel(model).value();
  const GraphPlan gp = PlanGraph(graph, "greedy", {.refine = true}).value();
  const std::vector<Bytes> inputs = DefaultInputs(graph);
  const RunOutputs unplanned = RunUnplanned(graph, inputs).value();
  std::optional<Plan> wrong;
  std::optional<RunOutputs> host;
  for (size_t pos = 0; pos < graph.schedule.size() && !wrong; ++pos) {
    const Node& node = graph.node(graph.schedule[pos]);
    if (node.op != "depthwise_conv2d" && node.op != "conv2d") continue;
    const int32_t out = gp.liveness.buffer_of[static_cast<size_t>(node.outputs[0])];
    const int32_t in = gp.liveness.buffer_of[static_cast<size_t>(node.inputs[0])];
    Plan moved = gp.plan;
    moved.offsets[static_cast<size_t>(out)] = gp.plan.offsets[static_cast<size_t>(in)];
    const RunOutputs planned = RunPlanned(graph, gp.liveness, moved, inputs).value();
    if (planned.outputs == unplanned.outputs) continue;
    wrong = moved;
    host = planned;
  }
  ASSERT_TRUE(wrong.has_value()) << "no operator of kws_ref_model can be overlapped wrongly";
  const std::string dir = TreeDir("kws_wrong_overlap");
  const Board& board = *FindBoard("cortex-m4");
  auto files = GenerateModel(graph, gp.liveness, *wrong, {"kws", model, "wrong"}).value();
  files.push_back(GenerateHarness(graph, {"kws", model, "wrong"}, inputs));
  ASSERT_TRUE(WriteTree(dir, files, board, "kws").ok());
  const Result<std::string> elf =
      BuildElf({.dir = dir, .name = "kws", .poison = true, .cache_dir = kCache}, board);
  ASSERT_TRUE(elf.ok()) << elf.status().message();
  const Result<DeviceRun> ran =
      RunOnBoard(*elf, board, graph.outputs.size(), graph.schedule.size());
  ASSERT_TRUE(ran.ok()) << ran.status().message();
  EXPECT_NE(ran->outputs, unplanned.outputs);
  EXPECT_EQ(ran->outputs, host->outputs);
}

}  // namespace
}  // namespace memfold
