// The memfold command-line program: one function per subcommand. Each returns the process
// exit code (CONTRACT.md: 0 success, 1 the work failed, 2 bad usage or bad input) and prints
// either a human-readable report or, with --json, one JSON object on stdout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memfold/ir/graph.h"
#include "memfold/io/model_loader.h"
#include "memfold/ir/status.h"

namespace memfold::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitBadInput = 2;

struct CommonOptions {
  std::string model;
  bool json = false;
};

struct PlanOptions {
  CommonOptions common;
  std::string planner = "greedy";
  std::optional<std::string> budget;
  std::optional<std::string> emit_tflite;
  std::optional<std::string> emit_c;
};

struct RunOptions {
  CommonOptions common;
  std::string planner = "greedy";
  std::optional<std::string> input_file;
};

struct TrainOptions {
  CommonOptions common;
  std::string strategy = "none";
  bool plan_only = false;
  int steps = 0;
  std::string optimizer = "sgd_momentum";
  double learning_rate = 0.01;
  std::string planner = "mxnet";
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
int InspectCommand(const CommonOptions& options);
int PlanCommand(const PlanOptions& options);
int RunCommand(const RunOptions& options);
int OverlapCommand(const CommonOptions& options);
int CompareCommand(const std::vector<std::string>& models, bool json);

// Prints "memfold: MESSAGE" on stderr and returns `code`.
int Fail(const std::string& message, int code = kExitBadInput);

}  // namespace memfold::cli
