// The memfold command-line program: one function per subcommand. Each returns the process
// exit code (CONTRACT.md: 0 success, 1 the work failed, 2 bad usage or bad input) and prints
// either a human-readable report or, with --json, one JSON object on stdout.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/exec/training.h"
#include "memfold/ir/graph.h"
#include "memfold/joint/joint_graph.h"
#include "memfold/passes/best_plan.h"
#include "memfold/passes/training_plan.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/pipeline/program.h"
#include "memfold/pipeline/training.h"
#include "memfold/plan/plan_graph.h"

namespace memfold::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitBadInput = 2;

struct CommonOptions {
  std::string model;
  bool json = false;
  InputLayout input_layout =
      InputLayout::kAsDeclared;  // --input-layout (inspect, plan, run, compile)
};

struct PlanOptions {
  CommonOptions common;
  std::string planner = "greedy";
  std::optional<std::string> budget;
  std::optional<std::string> emit_tflite;
  std::optional<std::string> emit_c;
  std::optional<std::string> svg;             // the arena picture (io/arena_svg.h), or the curve's
  std::optional<std::string> export_problem;  // the placement problem (placement/problem_csv.h)
  BestOptions best;                           // --planner best: splitting's budget, --stream-input
  bool pareto = false;                        // the memory / extra-work curve (PlanBestCurve)
  int32_t pareto_points = 12;
};

struct RunOptions {
  CommonOptions common;
  std::string planner = "greedy";
  BestOptions best;
  std::optional<std::string> input_file;
};

struct TrainOptions {
  CommonOptions common;
  std::string strategy = "none";  // or "all": none, mirror and echo compared, plans only
  bool plan_only = false;
  int steps = 0;
  std::string optimizer = "sgd_momentum";
  double learning_rate = 0.01;
  std::string planner = "mxnet";
  std::optional<std::string> svg;  // live memory of all three strategies (io/training_svg.h)
  std::optional<std::string> export_problem;  // the chosen plan's placement problem
};

struct CompileOptions {
  CommonOptions common;
  std::string planner = "greedy";
  BestOptions best;
  std::optional<std::string> budget;
  std::string output;                     // the tree's directory
  std::string target = "cortex-m4";       // a board (compile/device_build.h)
  std::optional<std::string> name;        // C name of the model (default: from the file)
  std::optional<std::string> input_file;  // the harness's input (default: CONTRACT.md's)
  std::optional<std::string> cache;       // where device libraries are kept
  bool run = false;                       // build, run under QEMU, measure
  bool poison = false;                    // poison the arena on the target
};

struct ReportOptions {
  CommonOptions common;
  std::string output;
};

struct PlaceOptions {
  std::string problem;  // a placement problem's CSV (placement/problem_csv.h)
  std::optional<std::string> capacity;
  double time_limit = 10;
  std::optional<std::string> output;
  bool json = false;
};

struct FitOptions {
  CommonOptions common;
  std::string budget;
  std::string vary = "batch";
  std::optional<std::string> strategy;
};

int ZooCommand(bool json);
int FitCommand(const FitOptions& options);
int TrainCommand(const TrainOptions& options);
// With `write_tflite`, also writes the model (a zoo model too) as a .tflite file with memfold's
// TFLite writer (io/tflite_graph_writer.h).
int InspectCommand(const CommonOptions& options, const std::optional<std::string>& write_tflite);
int PlanCommand(const PlanOptions& options);
int RunCommand(const RunOptions& options);
int CompileCommand(const CompileOptions& options);
int OpsCommand(bool json, bool markdown);
int OverlapCommand(const CommonOptions& options);
int CompareCommand(const std::vector<std::string>& models, bool json);
int ReportCommand(const ReportOptions& options);
int PlaceCommand(const PlaceOptions& options);

// ---- Shared by train and report (train.cc) ----

// The recomputation strategies' names (passes/training_plan.h), in the order tables show them.
std::vector<std::string> RecomputationNames();

// The training step of `source` planned under each recomputation strategy, with progress.
Result<std::vector<PlannedTraining>> PlanAllStrategies(const TrainingSource& source,
                                                       const TrainingConfig& config,
                                                       const std::string& planner);

// The strategy comparison (issue 6): one row per measure, one column per strategy. A leading
// '>' in a header right-aligns the column (TextTable's and ReportTable's convention).
struct StrategyTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};
StrategyTable CompareStrategies(const std::vector<PlannedTraining>& planned);

// The live-memory picture of every planned strategy, titled with the model's name.
std::string StrategiesSvg(const std::string& model, const std::vector<PlannedTraining>& planned);

// Writes `bytes` to `path`; an error names the file.
Status WriteFile(const std::string& path, const std::string& bytes);

// ---- Shared by plan, run and compile (plan_run.cc) ----

// The bytes of a --budget option (0 when absent); an error says how sizes are written.
Result<int64_t> BudgetBytes(const std::optional<std::string>& budget);

// The first `count` elements of an output, decoded for display.
nlohmann::ordered_json FirstValues(const Value& v, const Bytes& bytes, int64_t count);

// Prints "memfold: MESSAGE" on stderr and returns `code`.
int Fail(const std::string& message, int code = kExitBadInput);

// A command's JSON output, one space per level. Strings are user input (tensor names, file
// paths): bytes that are not UTF-8 become U+FFFD, so the output is always valid JSON.
std::string JsonText(const nlohmann::ordered_json& json);

}  // namespace memfold::cli
