// Runs the memfold program (or any shell command) the way a user would and captures what it
// printed: the helper every test of the command line shares. Header-only, for test targets.
// Safe to call from several threads at once: each call captures into files of its own.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace memfold::testing {

struct Outcome {
  int code;
  std::string out;
  std::string err;
  nlohmann::json Json() const { return nlohmann::json::parse(out); }
};

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline Outcome RunShell(const std::string& command) {
  static std::atomic<int> calls{0};
  const std::string call = std::to_string(::getpid()) + "_" + std::to_string(calls++);
  const auto dir = std::filesystem::temp_directory_path();
  const auto out = dir / ("memfold_run_out_" + call), err = dir / ("memfold_run_err_" + call);
  const int status = std::system((command + " >" + out.string() + " 2>" + err.string()).c_str());
  Outcome outcome{WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFile(out), ReadFile(err)};
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return outcome;
}

// `prefix memfold args`, the prefix for the shell (e.g. a ulimit).
inline Outcome Memfold(const std::string& args, const std::string& prefix = "") {
  return RunShell(prefix + std::string(MEMFOLD_BINARY) + " " + args);
}

}  // namespace memfold::testing
