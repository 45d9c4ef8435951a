// The instruction counts `memfold compile --run` reports (compile/target/timer.h), checked two
// independent ways: on a loop whose length is known (2 instructions per iteration), and on a
// compiled model against QEMU's own execution log, run one instruction per translation block
// (-singlestep -d exec,nochain: one "Trace" line per executed instruction), counting the lines
// inside the timed entry point.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "memfold/compile/device_build.h"
#include "tests/program_runner.h"

namespace memfold {
namespace {

namespace fs = std::filesystem;
using testing::Memfold;

const std::string kCache = MEMFOLD_DEVICE_CACHE;

std::string TreeDir(const std::string& name) {
  return (fs::path(MEMFOLD_DEVICE_TREES) / name).string();
}

// Runs `command` through the shell and returns its standard output.
std::string Output(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  pclose(pipe);
  return out;
}

TEST(InstructionCount, ATimerTickIsFortyInstructionsOnALoopOfKnownLength) {
  const Board& board = *FindBoard("cortex-m4");
  EXPECT_EQ(board.instructions_per_tick(), 40);
  const std::string dir = TreeDir("known_loop");
  ASSERT_TRUE(WriteTree(dir, {}, board, "known_loop").ok());
  const std::string target = dir + "/target/";
  const std::string elf = dir + "/known_loop.elf";
  const std::string build = "arm-none-eabi-gcc " + board.arch + " -O2 -I" + dir +
                            " -nostartfiles -T " + dir + "/" + board.linker_script + " " +
                            MEMFOLD_SOURCE_DIR "/tests/device/known_loop.c " + target +
                            "semihost.c " + target + "startup.c " + target + "timer.c -o " + elf;
  ASSERT_EQ(std::system(build.c_str()), 0) << build;
  std::istringstream lines(Output(QemuCommand(board, elf) + " 2>&1"));
  std::vector<int64_t> counted;
  std::string tag;
  int64_t ticks = 0;
  while (lines >> tag >> ticks) counted.push_back(ticks * board.instructions_per_tick());
  ASSERT_EQ(counted.size(), 3u);
  // 2 n instructions in the loop, plus the call, return and timer reads (a few instructions),
  // rounded to whole ticks.
  const int64_t lengths[] = {1000, 1000000, 25000000};
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_GE(counted[k], 2 * lengths[k] - 40) << k;
    EXPECT_LE(counted[k], 2 * lengths[k] + 80) << k;
  }
}

// The instructions QEMU's execution log shows inside memfold_<name>_invoke_timed (its first
// instruction up to the next one back in main).
int64_t LoggedInstructions(const std::string& log_file, const std::string& entry) {
  std::ifstream log(log_file);
  std::string line;
  int64_t count = 0;
  bool inside = false;
  while (std::getline(log, line)) {
    if (line.rfind("Trace ", 0) != 0) continue;
    const std::string function = line.substr(line.rfind(' ') + 1);
    if (!inside && function == entry) inside = true;
    if (inside && function == "main") break;
    if (inside) ++count;
  }
  return count;
}

TEST(InstructionCount, ModelCountsAgreeWithQemusExecutionLog) {
  const std::string dir = TreeDir("instructions_ad01");
  const auto out = Memfold("compile " MEMFOLD_SHARED_DIR
                           "/models/mlcommons-tiny/ad01_int8.tflite --name ad01 -o " +
                           dir + " --run --json --cache " + kCache);
  ASSERT_EQ(out.code, 0) << out.err;
  const nlohmann::json run = out.Json();
  const int64_t reported = run["instructions"].get<int64_t>();
  int64_t by_op = 0;
  for (const auto& step : run["instructions_by_op"]) by_op += step["instructions"].get<int64_t>();
  // The steps are inside invoke; each is rounded down to whole ticks.
  EXPECT_LE(by_op, reported);
  EXPECT_GE(by_op, reported * 99 / 100);

  const Board& board = *FindBoard("cortex-m4");
  const std::string log = dir + "/exec.log";
  const std::string traced = QemuCommand(board, run["elf"].get<std::string>()) +
                             " -singlestep -d exec,nochain -D " + log + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(traced.c_str()), 0) << traced;
  const int64_t logged = LoggedInstructions(log, "memfold_ad01_invoke_timed");
  fs::remove(log);
  // The harness reads the timer just outside invoke: a few instructions and the rounding to
  // whole ticks apart.
  EXPECT_GT(logged, 100000);  // the entry point was found: ad01 runs about 0.6 M
  EXPECT_LE(std::abs(reported - logged), 2 * board.instructions_per_tick()) << logged;
}

}  // namespace
}  // namespace memfold
