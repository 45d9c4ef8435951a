// End-to-end tests of the memfold program: the CONTRACT.md commands, JSON keys and exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "memfold/io/tflite_graph_writer.h"
#include "memfold/ops/builder.h"
#include "tests/program_runner.h"

namespace {

using memfold::testing::Memfold;
using memfold::testing::Outcome;
using memfold::testing::ReadFile;

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
  EXPECT_GE(j["values_checked"].get<int64_t>(), 66);  // every operator reads at least one value
  EXPECT_TRUE(j["first_difference"].is_null());
}

// An int8 zoo model under the whole best pipeline (split, re-ordered): every read compared,
// and outputs that vary (the int8 zoo models end at their logits).
TEST(Cli, RunInt8BestComparesEveryReadAndOutputsVary) {
  const Outcome r =
      Memfold("run zoo:mobilenet_v2,alpha=0.35,res=64,dtype=i8 --planner best --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = r.Json();
  EXPECT_EQ(j["identical_to_unplanned"], true);
  EXPECT_TRUE(j["first_difference"].is_null());
  EXPECT_GT(j["values_checked"].get<int64_t>(), 66);  // split bands add reads
  const auto values = j["outputs"][0]["values"].get<std::vector<int>>();
  EXPECT_GT(std::set<int>(values.begin(), values.end()).size(), 4u);
  // The text report says the same (of a plan that takes no splitting search to make).
  const Outcome text =
      Memfold("run zoo:mobilenet_v2,alpha=0.35,res=64,dtype=i8 --planner diagonal");
  EXPECT_NE(text.out.find("reads against the unplanned run"), std::string::npos) << text.out;
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

// --stream-input: the input is fetched box by box; the arena is smaller than resident, the
// split plan runs identically, and plan --json says so; compile writes the entry point that
// takes a source of boxes.
TEST(Cli, StreamInputPlansSmallerAndRunsIdentically) {
  const std::string model = "zoo:mobilenet_v2,alpha=0.35,res=64,dtype=i8";
  const Outcome resident = Memfold("plan " + model + " --planner best --json");
  const Outcome streamed = Memfold("plan " + model + " --planner best --stream-input --json");
  ASSERT_EQ(resident.code, 0) << resident.err;
  ASSERT_EQ(streamed.code, 0) << streamed.err;
  EXPECT_EQ(streamed.Json()["stream_input"], true);
  EXPECT_EQ(resident.Json()["stream_input"], false);
  EXPECT_LT(streamed.Json()["arena_bytes"].get<int64_t>(),
            resident.Json()["arena_bytes"].get<int64_t>());
  EXPECT_LE(streamed.Json()["recompute_fraction"].get<double>(), 0.10);
  const Outcome run = Memfold("run " + model + " --planner best --stream-input --json");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.Json()["identical_to_unplanned"], true);
  EXPECT_EQ(run.Json()["arena_bytes"], streamed.Json()["arena_bytes"]);
  const std::filesystem::path tree = std::filesystem::temp_directory_path() / "mf_stream";
  const Outcome compile = Memfold("compile " + model + " --stream-input -o " + tree.string());
  ASSERT_EQ(compile.code, 0) << compile.err;
  std::ifstream header(tree / "model" / "mobilenet_v2_alpha_0_35_res_64_dtype_i8.h");
  const std::string text((std::istreambuf_iterator<char>(header)), {});
  EXPECT_NE(text.find("memfold_input_source"), std::string::npos) << text;
  EXPECT_NE(text.find("_invoke_from(const memfold_input_source* source"), std::string::npos);
}

// inspect --write-tflite writes a zoo model with memfold's writer; the file reads back the same.
TEST(Cli, InspectWritesTflite) {
  const auto path = std::filesystem::temp_directory_path() / "memfold_cli_written.tflite";
  const std::string model = "zoo:mobilenet_v2,alpha=0.35,res=64,dtype=i8,pads=explicit";
  const Outcome wrote = Memfold("inspect " + model + " --write-tflite " + path.string());
  ASSERT_EQ(wrote.code, 0) << wrote.err;
  const Outcome read = Memfold("inspect " + path.string() + " --json");
  ASSERT_EQ(read.code, 0) << read.err;
  EXPECT_EQ(read.Json()["op_histogram"]["pad"], 5);
  EXPECT_EQ(read.Json()["op_histogram"],
            Memfold("inspect " + model + " --json").Json()["op_histogram"]);
  std::filesystem::remove(path);
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
  EXPECT_NE(bad.err.find("holds 5 bytes; the model's inputs need 256"), std::string::npos)
      << bad.err;
}

TEST(Cli, TrainPlanOnlyJsonKeys) {
  const Outcome r = Memfold("train zoo:resnet,size=tiny --plan-only --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = r.Json();
  for (const char* key : {"strategy", "total_bytes", "breakdown", "by_layer_type",
                          "recomputed_nodes", "forward_flops", "recompute_flops", "plan_ms"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  for (const char* key : {"feature_maps", "weights", "gradients", "optimizer", "workspace"}) {
    EXPECT_TRUE(j["breakdown"].contains(key)) << key;
  }
  int64_t sum = 0;
  for (const auto& [key, bytes] : j["breakdown"].items()) sum += bytes.get<int64_t>();
  EXPECT_EQ(sum, j["total_bytes"].get<int64_t>());
  EXPECT_EQ(j["strategy"], "none");
  EXPECT_EQ(j["chosen_strategy"], "none");
  EXPECT_FALSE(j.contains("loss"));
  // The arena against its lower bound (MXNet's in-place updates counted as overlaps, so the
  // bound is one for this plan), and with --planner diagonal the plan settled by the
  // portfolio: optimal, at the bound or proven.
  const int64_t arena = j["arena_bytes"], bound = j["lower_bound_bytes"];
  EXPECT_GE(arena, bound);
  EXPECT_DOUBLE_EQ(j["gap_to_lower_bound"].get<double>(),
                   static_cast<double>(arena - bound) / static_cast<double>(bound));
  const auto diagonal =
      Memfold("train zoo:resnet,size=tiny --planner diagonal --plan-only --json").Json();
  EXPECT_EQ(diagonal["optimal"], true);
  EXPECT_LE(diagonal["arena_bytes"].get<int64_t>(), arena);
  // Echo's own graph of DeepSpeech2 tiny over 4 frames is above the baseline's, which is kept,
  // and said so.
  const auto echo =
      Memfold("train zoo:deepspeech2,size=tiny,seq=4 --strategy echo --plan-only --json").Json();
  EXPECT_EQ(echo["chosen_strategy"], "none");
  EXPECT_EQ(echo["fell_back_to_baseline"], true);
  EXPECT_GE(echo["echo_own_total_bytes"].get<int64_t>(), echo["total_bytes"].get<int64_t>());
  const auto kept = Memfold("train zoo:nmt,size=tiny --strategy echo --plan-only --json").Json();
  EXPECT_EQ(kept["chosen_strategy"], "echo");
  const Outcome table =
      Memfold("train zoo:deepspeech2,size=tiny,seq=4 --strategy echo --plan-only");
  EXPECT_NE(table.out.find("not less than the baseline, which is kept"), std::string::npos)
      << table.out;
}

TEST(Cli, TrainStepsReportLossAndGradientHash) {
  const Outcome a = Memfold("train zoo:transformer,size=tiny --steps 3 --json");
  ASSERT_EQ(a.code, 0) << a.err;
  const auto j = a.Json();
  EXPECT_EQ(j["losses"].size(), 3u);
  EXPECT_LT(j["losses"][2].get<double>(), j["losses"][0].get<double>());
  EXPECT_EQ(j["grad_sha256"].get<std::string>().size(), 64u);
  // The OS saw at least the planned arena resident (the run poisons all of it), and the
  // planned step's operators took time.
  EXPECT_GE(j["measured_peak_bytes"].get<int64_t>(), j["arena_bytes"].get<int64_t>());
  EXPECT_GT(j["step_ms"].get<double>(), 0.0);
  // Deterministic: the same run gives the same gradients.
  EXPECT_EQ(Memfold("train zoo:transformer,size=tiny --steps 3 --json").Json()["grad_sha256"],
            j["grad_sha256"]);
}

TEST(Cli, FitFindsTheLargestBatchWithinBudget) {
  const Outcome r = Memfold("fit zoo:mlp --budget 1M --vary batch --strategy none --json");
  EXPECT_EQ(r.code, 2);  // zoo:mlp has no loss: not a training model
  const Outcome fit =
      Memfold("fit zoo:resnet,size=tiny --budget 4M --vary batch --strategy echo --json");
  ASSERT_EQ(fit.code, 0) << fit.err;
  const auto j = fit.Json();
  EXPECT_EQ(j["strategy"], "echo");
  EXPECT_EQ(j["vary"], "batch");
  const int64_t batch = j["max_value"].get<int64_t>();
  ASSERT_GT(batch, 0);
  EXPECT_LE(j["total_bytes"].get<int64_t>(), 4 << 20);
  // One more does not fit: the answer is the largest.
  const Outcome more = Memfold("train zoo:resnet,size=tiny,batch=" + std::to_string(batch + 1) +
                               " --strategy echo --plan-only --json");
  ASSERT_EQ(more.code, 0);
  EXPECT_GT(more.Json()["total_bytes"].get<int64_t>(), 4 << 20);
}

// Bad usage and bad input: exit 2 and one line on stderr saying what to do.
TEST(Cli, BadInputExitsTwoWithOneLine) {
  struct Case {
    const char* args;
    const char* message;
  };
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

// ---- Pictures, the strategy table, progress and verbosity (issues 6 and 8) ----

namespace {

std::string TempFile(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("memfold_cli_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// --svg adds a file and changes nothing on stdout.
TEST(Cli, PlanSvgLeavesStdoutUnchanged) {
  const std::string svg = TempFile("plan.svg");
  const Outcome plain = Memfold("plan zoo:cnn --planner diagonal");
  const Outcome drawn = Memfold("plan zoo:cnn --planner diagonal --svg " + svg);
  ASSERT_EQ(drawn.code, 0) << drawn.err;
  EXPECT_EQ(drawn.out, plain.out);
  EXPECT_EQ(drawn.err, "");
  const std::string picture = ReadFile(svg);
  EXPECT_EQ(
      picture.rfind(
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"",
          0),
      0u);
  EXPECT_NE(picture.find("zoo:cnn, diagonal (chose "), std::string::npos);
  EXPECT_NE(picture.find("arena 64.41 KiB"), std::string::npos);  // 65,952 B
  std::filesystem::remove(svg);
  const Outcome bad = Memfold("plan zoo:cnn --svg /no/such/dir/arena.svg");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("/no/such/dir/arena.svg: cannot write the file"), std::string::npos)
      << bad.err;
}

// --strategy all: one object with the three single-strategy objects, in order, each equal to
// what the single strategy prints; and a side-by-side table for people.
TEST(Cli, TrainStrategyAllComparesTheThree) {
  const Outcome all = Memfold("train zoo:nmt,size=tiny --strategy all --plan-only --json");
  ASSERT_EQ(all.code, 0) << all.err;
  const auto j = all.Json();
  ASSERT_EQ(j["strategies"].size(), 3u);
  const char* names[] = {"none", "mirror", "echo"};
  for (size_t k = 0; k < 3; ++k) {
    const auto& s = j["strategies"][k];
    EXPECT_EQ(s["strategy"], names[k]);
    const auto single =
        Memfold(std::string("train zoo:nmt,size=tiny --plan-only --json --strategy ") + names[k])
            .Json();
    for (const auto& [key, value] : single.items()) {
      if (key == "plan_ms") continue;  // a time
      EXPECT_EQ(s[key], value) << names[k] << " " << key;
    }
    EXPECT_EQ(s.size(), single.size()) << names[k];
  }
  const Outcome table = Memfold("train zoo:nmt,size=tiny --strategy all --plan-only");
  ASSERT_EQ(table.code, 0) << table.err;
  for (const char* row :
       {"total", "feature maps", "weights", "gradients", "optimizer state", "workspace",
        "recomputed nodes", "recompute FLOPs (% of forward)", "reduction vs none", "plan ms"}) {
    EXPECT_NE(table.out.find("\n" + std::string(row) + " "), std::string::npos) << row;
  }
  const size_t header = table.out.find("\n\n") + 2;
  const std::string columns = table.out.substr(header, table.out.find('\n', header) - header);
  EXPECT_LT(columns.find(" none"), columns.find(" mirror")) << columns;
  EXPECT_LT(columns.find(" mirror"), columns.find(" echo")) << columns;
  EXPECT_NE(columns.find(" echo"), std::string::npos) << columns;
}

// `--strategy all --steps K`: every strategy's first step checked, then K planned steps of the
// three interleaved; the same gradients under each, a median step and its ratio to none's.
TEST(Cli, TrainAllStrategiesInterleavesTimedSteps) {
  const Outcome r = Memfold("train zoo:nmt,size=tiny --strategy all --steps 3 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto out = r.Json();
  EXPECT_EQ(out["steps"], 3);
  ASSERT_EQ(out["strategies"].size(), 3U);
  const auto none_ms = out["strategies"][0]["step_ms"].get<double>();
  for (const auto& s : out["strategies"]) {
    EXPECT_EQ(s["grad_sha256"], out["strategies"][0]["grad_sha256"]) << s["strategy"];
    ASSERT_EQ(s["step_ms_runs"].size(), 3U) << s["strategy"];
    std::vector<double> runs = s["step_ms_runs"].get<std::vector<double>>();
    std::sort(runs.begin(), runs.end());
    EXPECT_GT(runs.front(), 0.0);
    EXPECT_EQ(s["step_ms"].get<double>(), runs[1]) << s["strategy"];
    EXPECT_DOUBLE_EQ(s["step_vs_none"].get<double>(), s["step_ms"].get<double>() / none_ms);
    EXPECT_TRUE(s.contains("loss") && s.contains("measured_peak_bytes") &&
                s.contains("total_bytes"));
  }
  const Outcome table = Memfold("train zoo:nmt,size=tiny --strategy all --steps 1");
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("step (median)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("\necho "), std::string::npos) << table.out;
}

TEST(Cli, TrainSvgDrawsAllThreeStrategies) {
  const std::string svg = TempFile("train.svg");
  const Outcome r =
      Memfold("train zoo:resnet,size=tiny --plan-only --strategy echo --json --svg " + svg);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.Json()["strategy"], "echo");  // the printed result is still the chosen strategy's
  const std::string picture = ReadFile(svg);
  for (const char* s : {"none", "mirror", "echo"}) {
    EXPECT_NE(picture.find(std::string(s) + ": footprint "), std::string::npos) << s;
  }
  std::filesystem::remove(svg);
}

// Piped stderr carries only errors; --verbose adds one timing line per phase; --quiet leaves
// stdout alone; the two exclude each other; both work before or after the command.
TEST(Cli, QuietAndVerboseFlags) {
  const Outcome normal = Memfold("plan zoo:cnn");
  ASSERT_EQ(normal.code, 0);
  EXPECT_EQ(normal.err, "");
  const Outcome quiet = Memfold("plan zoo:cnn --quiet");
  EXPECT_EQ(quiet.code, 0);
  EXPECT_EQ(quiet.out, normal.out);
  EXPECT_EQ(quiet.err, "");
  for (const char* args : {"plan zoo:cnn --verbose", "--verbose plan zoo:cnn"}) {
    const Outcome verbose = Memfold(args);
    EXPECT_EQ(verbose.code, 0) << args;
    EXPECT_EQ(verbose.out, normal.out) << args;
    EXPECT_NE(verbose.err.find("memfold: load zoo:cnn: "), std::string::npos) << verbose.err;
    EXPECT_NE(verbose.err.find(" ms (11 ops)\nmemfold: plan greedy: "), std::string::npos)
        << verbose.err;
    EXPECT_NE(verbose.err.find(" ms (96.00 KiB, verified)\n"), std::string::npos) << verbose.err;
  }
  const Outcome both = Memfold("plan zoo:cnn --quiet --verbose");
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("excludes"), std::string::npos) << both.err;
  const Outcome failed = Memfold("plan zoo:nonexistent --quiet");
  EXPECT_EQ(failed.code, 2);  // errors still speak
  EXPECT_NE(failed.err.find("unknown zoo model"), std::string::npos);
}

// On a terminal (a pseudo-terminal from script(1)) the fit search shows its tries as progress
// lines, rewritten in place; --quiet hides them.
TEST(Cli, FitShowsProgressOnlyOnATerminal) {
  if (std::system("command -v script >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "script(1) is not installed";
  const std::string fit = std::string(MEMFOLD_BINARY) +
                          " fit zoo:resnet,size=tiny --budget 4M --vary batch --strategy echo";
  const std::string log = TempFile("tty.log");
  auto on_terminal = [&](const std::string& command) {
    std::system(("script -qec '" + command + "' /dev/null >" + log + " 2>&1").c_str());
    return ReadFile(log);
  };
  const std::string shown = on_terminal(fit);
  EXPECT_NE(shown.find("\r\033[Kmemfold: fit: echo, batch=32..."), std::string::npos) << shown;
  EXPECT_NE(shown.find("echo                 36"), std::string::npos)
      << shown;  // the result still prints
  const std::string quiet = on_terminal(fit + " --quiet");
  EXPECT_EQ(quiet.find("memfold: fit:"), std::string::npos) << quiet;
  EXPECT_NE(quiet.find("echo                 36"), std::string::npos) << quiet;
  const Outcome piped =
      Memfold("fit zoo:resnet,size=tiny --budget 4M --vary batch --strategy echo");
  EXPECT_EQ(piped.err, "");
  std::filesystem::remove(log);
}

}  // namespace

// Two branches from x [1,4], each expanded to 256 by a fully-connected layer, passed through
// relu and reduced back to 4; add joins them. The file runs both expansions first; finishing
// one branch first halves the peak (the golden case of passes/schedule_test.cc).
std::string TwoBranchTflite() {
  using namespace memfold;
  GraphBuilder b("two_branches");
  const ValueId x = b.Input("x", {1, 4});
  auto layer = [&](const std::string& name, ValueId in, int64_t out, int64_t depth) {
    return b.Op("fully_connected", {in, b.Weight(name + "/w", {out, depth}, 0.5f)}, {}, name);
  };
  const ValueId a1 = layer("a1", x, 256, 4), b1 = layer("b1", x, 256, 4);
  const ValueId a1r = b.Op("relu", {a1}, {}, "a1r"), b1r = b.Op("relu", {b1}, {}, "b1r");
  const ValueId y = b.Op("add", {layer("a2", a1r, 4, 256), layer("b2", b1r, 4, 256)}, {}, "y");
  Result<Graph> graph = b.Finish({y});
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  Result<Bytes> bytes = GraphToTflite(*graph);
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("memfold_two_branches_" + std::to_string(::getpid()) + ".tflite"))
                               .string();
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes->data()),
             static_cast<std::streamsize>(bytes->size()));
  return path;
}

// A re-ordering is expressible in TFLite: --emit-tflite writes the operators in their new
// order with the best plan as the file's offline plan, which memfold (like TFLM) then follows,
// computing the same bits; --emit-c still refuses (its tensors would not be the file's).
TEST(Cli, BestReorderedModelIsEmittedWithItsPlan) {
  const std::string model = TwoBranchTflite();
  const Outcome plan = Memfold("plan " + model + " --planner best --json");
  ASSERT_EQ(plan.code, 0) << plan.err;
  const auto j = plan.Json();
  EXPECT_EQ(j["rewritten"], true);
  EXPECT_EQ(j["steps"][2]["detail"], "exact search, order changed");
  EXPECT_LT(j["steps"][2]["arena_bytes"].get<int64_t>(),
            j["steps"][1]["arena_bytes"].get<int64_t>());
  const std::string emitted = model + ".reordered.tflite";
  const Outcome emit = Memfold("plan " + model + " --planner best --emit-tflite " + emitted);
  ASSERT_EQ(emit.code, 0) << emit.err;
  const Outcome offline = Memfold("plan " + emitted + " --planner offline --json");
  ASSERT_EQ(offline.code, 0) << offline.err;
  EXPECT_EQ(offline.Json()["arena_bytes"], j["arena_bytes"]);
  const Outcome original_run = Memfold("run " + model + " --json");
  const Outcome emitted_run = Memfold("run " + emitted + " --planner offline --json");
  ASSERT_EQ(original_run.code, 0) << original_run.err;
  ASSERT_EQ(emitted_run.code, 0) << emitted_run.err;
  EXPECT_EQ(emitted_run.Json()["identical_to_unplanned"], true);
  EXPECT_EQ(emitted_run.Json()["outputs"][0]["sha256"],
            original_run.Json()["outputs"][0]["sha256"]);
  const Outcome emit_c = Memfold("plan " + model + " --planner best --emit-c " + emitted + ".h");
  EXPECT_EQ(emit_c.code, 2);
  EXPECT_NE(emit_c.err.find("--emit-tflite for a re-ordered model"), std::string::npos)
      << emit_c.err;
  std::filesystem::remove(model);
  std::filesystem::remove(emitted);
}

// --planner best reports what each step bought, runs bit-identically, and refuses to write a
// rewritten graph into the file it came from.
TEST(Cli, BestPlannerReportsStepsAndRunsIdentically) {
  const std::string model =
      std::string(MEMFOLD_SHARED_DIR) + "/models/tflite-micro/person_detect.tflite";
  const Outcome plan = Memfold("plan " + model + " --planner best --json");
  ASSERT_EQ(plan.code, 0) << plan.err;
  const auto j = plan.Json();
  ASSERT_EQ(j["steps"].size(), 6u);
  EXPECT_EQ(j["steps"][0]["step"], "greedy");
  EXPECT_EQ(j["steps"][3]["step"], "concat");
  EXPECT_EQ(j["steps"][3]["detail"], "no concatenations");
  EXPECT_EQ(j["steps"][4]["step"], "split");
  // The exact solver places the split graph's buffers in less than the split step's plan.
  EXPECT_EQ(j["steps"][5]["step"], "place");
  EXPECT_LT(j["steps"][5]["arena_bytes"].get<int64_t>(),
            j["steps"][4]["arena_bytes"].get<int64_t>());
  EXPECT_EQ(j["steps"][5]["arena_bytes"], j["arena_bytes"]);
  EXPECT_EQ(j["chosen_planner"], "exact");
  EXPECT_LT(j["arena_bytes"].get<int64_t>(), j["steps"][1]["arena_bytes"].get<int64_t>());
  EXPECT_EQ(j["rewritten"], true);
  const Outcome run = Memfold("run " + model + " --planner best --json");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_EQ(run.Json()["identical_to_unplanned"], true);
  EXPECT_EQ(run.Json()["arena_bytes"], j["arena_bytes"]);
  // The refusals to write a split plan, on a file that splits in a fraction of the time.
  const std::string splits =
      (std::filesystem::temp_directory_path() / "memfold_best_cnn.tflite").string();
  ASSERT_EQ(Memfold("inspect zoo:cnn --write-tflite " + splits).code, 0);
  const auto out = std::filesystem::temp_directory_path() / "memfold_best.tflite";
  const Outcome emit = Memfold("plan " + splits + " --planner best --emit-tflite " + out.string());
  EXPECT_EQ(emit.code, 2);
  EXPECT_NE(emit.err.find("--emit-tflite: the best plan splits operators into bands"),
            std::string::npos)
      << emit.err;
  const Outcome emit_c = Memfold("plan " + splits + " --planner best --emit-c " + out.string());
  EXPECT_EQ(emit_c.code, 2);
  EXPECT_NE(emit_c.err.find("--emit-c: the best plan"), std::string::npos) << emit_c.err;
  const Outcome huge =
      Memfold("plan zoo:cnn,batch=9,res=1024,channels=64 --emit-c " + out.string());
  EXPECT_EQ(huge.code, 2);
  EXPECT_NE(huge.err.find("--emit-c: the arena needs"), std::string::npos) << huge.err;
  EXPECT_NE(huge.err.find("beyond the 32-bit offsets"), std::string::npos) << huge.err;
  const Outcome no_split = Memfold("plan " + model + " --planner best --max-recompute 0 --json");
  ASSERT_EQ(no_split.code, 0) << no_split.err;
  EXPECT_GE(no_split.Json()["arena_bytes"].get<int64_t>(), j["arena_bytes"].get<int64_t>());
  std::filesystem::remove(splits);
}
