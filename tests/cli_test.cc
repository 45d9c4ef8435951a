// End-to-end tests of the memfold program: the CONTRACT.md commands, JSON keys and exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace {

struct Outcome {
  int code;
  std::string out;
  std::string err;
  nlohmann::json Json() const { return nlohmann::json::parse(out); }
};

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Outcome Memfold(const std::string& args) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto out = dir / ("memfold_cli_out_" + std::to_string(::getpid()));
  const auto err = dir / ("memfold_cli_err_" + std::to_string(::getpid()));
  const std::string command = std::string(MEMFOLD_BINARY) + " " + args + " >" + out.string() + " 2>" + err.string();
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFile(out), ReadFile(err)};
}

TEST(Cli, PlanMobileNetV2GreedyJson) {
  const Outcome r = Memfold("plan zoo:mobilenet_v2 --planner greedy --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = r.Json();
  EXPECT_EQ(j["planner"], "greedy");
  EXPECT_EQ(j["arena_bytes"], 6021120);
  EXPECT_EQ(j["lower_bound_bytes"], 6021120);
  EXPECT_EQ(j["verified"], true);
  ASSERT_GT(j["buffers"].size(), 60u);
  for (const char* key : {"value", "offset", "bytes", "first", "last", "overlap_bytes"}) {
    EXPECT_TRUE(j["buffers"][0].contains(key)) << key;
  }
  EXPECT_EQ(j["buffers"][0]["value"], "input");
  EXPECT_EQ(j["buffers"][0]["bytes"], 224 * 224 * 3 * 4);
}

TEST(Cli, RunMobileNetV2IsIdenticalToUnplanned) {
  const Outcome r = Memfold("run zoo:mobilenet_v2 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = r.Json();
  EXPECT_EQ(j["identical_to_unplanned"], true);
  EXPECT_EQ(j["arena_bytes"], 6021120);
  ASSERT_EQ(j["outputs"].size(), 1u);
  const auto& o = j["outputs"][0];
  EXPECT_EQ(o["name"], "Predictions");
  EXPECT_EQ(o["dtype"], "f32");
  EXPECT_EQ(o["shape"], nlohmann::json::array({1, 1001}));
  EXPECT_EQ(o["sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(o["values"].size(), 16u);
}

TEST(Cli, BudgetReportsFitAndPeakOperator) {
  Outcome r = Memfold("plan zoo:mobilenet_v2 --budget 1M --json");
  EXPECT_EQ(r.code, 1);  // the work failed: the model does not fit
  auto j = r.Json();
  EXPECT_EQ(j["fits"], false);
  EXPECT_EQ(j["budget_bytes"], 1 << 20);
  EXPECT_NE(j["peak_op"].get<std::string>().find("expanded_conv_1/depthwise"), std::string::npos);
  r = Memfold("plan zoo:mobilenet_v2 --budget 6M --json");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.Json()["fits"], true);
}

TEST(Cli, InspectJsonKeys) {
  const Outcome r = Memfold("inspect zoo:cnn --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = r.Json();
  for (const char* key : {"ops", "values", "inputs", "outputs", "op_histogram"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["inputs"][0]["shape"], nlohmann::json::array({1, 32, 32, 3}));
  EXPECT_EQ(j["op_histogram"]["conv2d"], 4);
  EXPECT_EQ(j["op_histogram"]["concat"], 1);
}

TEST(Cli, ZooListsModelsWithDefaults) {
  const Outcome r = Memfold("zoo --json");
  ASSERT_EQ(r.code, 0);
  const auto j = r.Json();
  bool found = false;
  for (const auto& m : j["models"]) {
    if (m["name"] == "mobilenet_v2") {
      found = true;
      EXPECT_EQ(m["keys"]["res"]["default"], "224");
    }
  }
  EXPECT_TRUE(found);
  EXPECT_NE(Memfold("zoo").out.find("zoo:mobilenet_v1"), std::string::npos);
}

TEST(Cli, HumanOutputShowsSizesAndVerification) {
  const Outcome r = Memfold("plan zoo:mobilenet_v2");
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("5.74 MiB (6,021,120 B)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verified     yes"), std::string::npos);
}

TEST(Cli, InputFileIsUsedAndChecked) {
  const auto path = std::filesystem::temp_directory_path() / "memfold_cli_input.bin";
  {
    std::ofstream f(path, std::ios::binary);
    const std::string zeros(64 * 4, '\0');  // zoo:mlp takes [1, 64] float32
    f << zeros;
  }
  const Outcome with_file = Memfold("run zoo:mlp --json --input " + path.string());
  ASSERT_EQ(with_file.code, 0) << with_file.err;
  const Outcome defaults = Memfold("run zoo:mlp --json");
  EXPECT_NE(with_file.Json()["outputs"][0]["sha256"], defaults.Json()["outputs"][0]["sha256"]);
  {
    std::ofstream f(path, std::ios::binary);
    f << "short";
  }
  const Outcome bad = Memfold("run zoo:mlp --input " + path.string());
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("holds 5 bytes; the model's inputs need 256"), std::string::npos) << bad.err;
}

TEST(Cli, TrainPlanOnlyJsonKeys) {
  const Outcome r = Memfold("train zoo:resnet,size=tiny --plan-only --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = r.Json();
  for (const char* key : {"strategy", "total_bytes", "breakdown", "by_layer_type", "recomputed_nodes",
                          "forward_flops", "recompute_flops", "plan_ms"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  for (const char* key : {"feature_maps", "weights", "gradients", "optimizer", "workspace"}) {
    EXPECT_TRUE(j["breakdown"].contains(key)) << key;
  }
  int64_t sum = 0;
  for (const auto& [key, bytes] : j["breakdown"].items()) sum += bytes.get<int64_t>();
  EXPECT_EQ(sum, j["total_bytes"].get<int64_t>());
  EXPECT_EQ(j["strategy"], "none");
  EXPECT_FALSE(j.contains("loss"));
}

TEST(Cli, TrainStepsReportLossAndGradientHash) {
  const Outcome a = Memfold("train zoo:transformer,size=tiny --steps 3 --json");
  ASSERT_EQ(a.code, 0) << a.err;
  const auto j = a.Json();
  EXPECT_EQ(j["losses"].size(), 3u);
  EXPECT_LT(j["losses"][2].get<double>(), j["losses"][0].get<double>());
  EXPECT_EQ(j["grad_sha256"].get<std::string>().size(), 64u);
  // Deterministic: the same run gives the same gradients.
  EXPECT_EQ(Memfold("train zoo:transformer,size=tiny --steps 3 --json").Json()["grad_sha256"], j["grad_sha256"]);
}

TEST(Cli, FitFindsTheLargestBatchWithinBudget) {
  const Outcome r = Memfold("fit zoo:mlp --budget 1M --vary batch --strategy none --json");
  EXPECT_EQ(r.code, 2);  // zoo:mlp has no loss: not a training model
  const Outcome fit = Memfold("fit zoo:resnet,size=tiny --budget 4M --vary batch --strategy echo --json");
  ASSERT_EQ(fit.code, 0) << fit.err;
  const auto j = fit.Json();
  EXPECT_EQ(j["strategy"], "echo");
  EXPECT_EQ(j["vary"], "batch");
  const int64_t batch = j["max_value"].get<int64_t>();
  ASSERT_GT(batch, 0);
  EXPECT_LE(j["total_bytes"].get<int64_t>(), 4 << 20);
  // One more does not fit: the answer is the largest.
  const Outcome more = Memfold("train zoo:resnet,size=tiny,batch=" + std::to_string(batch + 1) + " --strategy echo --plan-only --json");
  ASSERT_EQ(more.code, 0);
  EXPECT_GT(more.Json()["total_bytes"].get<int64_t>(), 4 << 20);
}

// Bad usage and bad input: exit 2 and one line on stderr saying what to do.
TEST(Cli, BadInputExitsTwoWithOneLine) {
  struct Case { const char* args; const char* message; };
  const Case cases[] = {
      {"plan zoo:nonexistent", "unknown zoo model 'nonexistent'"},
      {"plan zoo:mlp,foo=1", "unknown key 'foo=1'"},
      {"plan zoo:mlp,layers=-1", "layers=-1 is not an integer in"},
      {"plan /no/such/model.tflite", "no such file"},
      {"plan zoo:mlp --planner magic", "--planner"},
      {"plan zoo:mlp --budget lots", "--budget lots is not a size"},
      {"run zoo:mlp --input /no/such/input.bin", "cannot open the input file"},
      {"frobnicate", "frobnicate"},
      {"", "A subcommand is required"},
      {"plan", "MODEL is required"},
      {"train zoo:mlp --plan-only", "first output is a float32 scalar loss"},
      {"train zoo:resnet,depth=42 --plan-only", "depth"},
      {"train zoo:nmt,size=big --plan-only", "size=big is not one of full, tiny"},
      {"train zoo:nmt,size=tiny --strategy magic", "--strategy"},
  };
  for (const Case& c : cases) {
    const Outcome r = Memfold(c.args);
    EXPECT_EQ(r.code, 2) << c.args;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << " -> " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.args << " -> " << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args;
  }
}

}  // namespace
