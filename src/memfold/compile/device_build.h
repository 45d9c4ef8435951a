// Building and running a compiled tree on an emulated micro-controller: the source tree
// (generated model + the embedded freestanding sources + a Makefile), the cross build with
// Debian's arm-none-eabi toolchain (the kernels' objects built once per source version into a
// cache and shared by every model), the run under qemu-system-arm with semihosting, and the
// binary's sizes from arm-none-eabi-size.
//
// Failures that are the environment's (a missing toolchain, a model that does not fit the
// board) are Status errors whose message names the package or both sizes. Runs external
// programs; each step is bounded by a timeout.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/compile/codegen.h"

namespace memfold {

// A board QEMU emulates and how to build for it.
struct Board {
  std::string target;         // what --target names, e.g. "cortex-m4"
  std::string machine;        // QEMU's -M, e.g. "mps2-an386"
  std::string arch;           // compiler flags selecting the core and FPU
  int64_t flash_bytes;        // code memory
  int64_t ram_bytes;          // data memory
  int64_t stack_bytes;        // reserved for the stack by the linker script
  std::string linker_script;  // in the tree
  // QEMU runs with -icount shift=0 (virtual time advances 1 ns per executed instruction), and the
  // harness times `invoke` with a timer of this many ticks per virtual second.
  int64_t timer_hz;
  int64_t instructions_per_tick() const { return 1'000'000'000 / timer_hz; }
};

// The board for a --target, or null. Boards() lists them.
const Board* FindBoard(const std::string& target);
std::vector<std::string> BoardTargets();

// Writes the tree: `generated` files, every embedded source and the Makefile, under `dir`.
Status WriteTree(const std::string& dir, const std::vector<GeneratedFile>& generated,
                 const Board& board, const std::string& name);

// Checks the cross toolchain (and, when `run`, QEMU) is installed; the error names the Debian
// packages to install.
Status CheckToolchain(bool run);

struct BuildOptions {
  std::string dir;   // the tree WriteTree wrote
  std::string name;  // the model's C name
  bool poison = false;
  std::string cache_dir;  // where kernel libraries are kept; empty: $MEMFOLD_CACHE,
                          // $XDG_CACHE_HOME/memfold or ~/.cache/memfold
};

// Builds DIR/build/<name>.elf; returns its path.
Result<std::string> BuildElf(const BuildOptions& options, const Board& board);

// Bytes per section of an ELF file (arm-none-eabi-size -A).
Result<std::map<std::string, int64_t>> SectionSizes(const std::string& elf);

struct DeviceRun {
  std::vector<Bytes> outputs;  // one per model output
  int64_t stack_bytes = 0;     // high-water mark measured on the target
  // Instructions executed by `invoke` in all, and by each step of the schedule (each counts
  // one timer read; a count is a multiple of Board::instructions_per_tick()).
  int64_t instructions = 0;
  std::vector<int64_t> step_instructions;
  int64_t fetched_bytes = -1;  // bytes of streamed inputs the harness's source delivered; -1: none
};

// The QEMU command line that runs `elf` on `board` (instruction counting on, semihosting).
std::string QemuCommand(const Board& board, const std::string& elf);

// Runs the harness under QEMU and reads back what it reported for `num_outputs` outputs and
// `num_steps` steps.
Result<DeviceRun> RunOnBoard(const std::string& elf, const Board& board, size_t num_outputs,
                             size_t num_steps);

}  // namespace memfold
