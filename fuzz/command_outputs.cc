#include "fuzz/command_outputs.h"

#include <unistd.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tools/memfold/commands.h"
#include "tools/memfold/progress.h"

namespace memfold::fuzz {
namespace {

namespace fs = std::filesystem;

Status Bug(const std::string& what) { return Status::Error("memfold bug: " + what); }

// Sends std::cout and std::cerr to strings while it lives.
class Captured {
 public:
  Captured() : saved_out_(std::cout.rdbuf(out.rdbuf())), saved_err_(std::cerr.rdbuf(err.rdbuf())) {}
  ~Captured() {
    std::cout.rdbuf(saved_out_);
    std::cerr.rdbuf(saved_err_);
  }
  Captured(const Captured&) = delete;
  Captured& operator=(const Captured&) = delete;

  std::ostringstream out, err;

 private:
  std::streambuf* saved_out_;
  std::streambuf* saved_err_;
};

// A file in the temporary directory named for this process, removed when done.
class TempFile {
 public:
  explicit TempFile(const std::string& suffix)
      : path_(fs::temp_directory_path() / ("memfold_fuzz_" + std::to_string(::getpid()) + suffix)) {
  }
  ~TempFile() {
    std::error_code ignored;
    fs::remove(path_, ignored);
  }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

// Runs one command and checks what it printed against the contract.
Status CheckCommand(const std::string& what, bool json, const std::function<int()>& command) {
  int code = 0;
  std::string out, err;
  {
    Captured captured;
    try {
      code = command();
    } catch (const std::exception& e) {
      return Bug(what + " threw: " + e.what());
    }
    out = captured.out.str();
    err = captured.err.str();
  }
  if (code < 0 || code > 2) return Bug(what + " exited with " + std::to_string(code));
  if (code != 0 && (err.rfind("memfold: ", 0) != 0 ||
                    std::count(err.begin(), err.end(), '\n') != 1 || err.back() != '\n')) {
    return Bug(what + " failed without one 'memfold: ' line on stderr: '" + err + "'");
  }
  if (json && code == 0 && out.empty()) return Bug(what + " --json printed nothing");
  if (json && !out.empty() && !nlohmann::json::accept(out)) {
    return Bug(what + " --json printed invalid JSON (or not UTF-8)");
  }
  return Status::Ok();
}

}  // namespace

Status CheckCommandOutputs(std::span<const uint8_t> bytes, bool executable) {
  const TempFile model(".tflite"), svg(".svg"), html(".html");
  {
    std::ofstream file(model.path(), std::ios::binary);
    file.write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    if (!file) return Status::Ok();  // no room for the file: nothing to check here
  }
  const cli::Verbosity verbosity = cli::GetVerbosity();
  cli::SetVerbosity(cli::Verbosity::kQuiet);
  Status status = Status::Ok();
  for (const bool json : {false, true}) {
    const std::string mode = json ? " (json)" : " (text)";
    const cli::CommonOptions common{model.path(), json};
    auto check = [&](const std::string& what, const std::function<int()>& command) {
      if (status.ok()) status = CheckCommand(what + mode, json, command);
    };
    check("inspect", [&] { return cli::InspectCommand(common, std::nullopt); });
    check("plan", [&] { return cli::PlanCommand({.common = common, .svg = svg.path()}); });
    if (!executable) continue;
    check("plan --planner diagonal", [&] {
      return cli::PlanCommand({.common = common, .planner = "diagonal", .svg = svg.path()});
    });
    check("overlap", [&] { return cli::OverlapCommand(common); });
    check("run --planner diagonal",
          [&] { return cli::RunCommand({.common = common, .planner = "diagonal"}); });
    check("compare", [&] { return cli::CompareCommand({model.path()}, json); });
    if (json)
      check("report",
            [&] { return cli::ReportCommand({.common = common, .output = html.path()}); });
  }
  cli::SetVerbosity(verbosity);
  return status;
}

}  // namespace memfold::fuzz
