// A planned program on a micro-controller: the tree `memfold compile` writes (the generated
// model and harness, compile/codegen.h, in a tree of compile/device_build.h), whether it fits
// the board at all, and with a run its build, its run under QEMU and its outputs compared with
// the host's proven planned run, RAM and flash measured on the binary.
//
// Preconditions: the program is an inference model whose operators have device kernels
// (CheckCompilable says which do not). Cost: code generation is O(model); a run is the cross
// build and the emulation (bounded by compile/device_build.h's timeouts).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/compile/codegen.h"
#include "memfold/compile/device_build.h"
#include "memfold/exec/checked_run.h"
#include "memfold/pipeline/program.h"

namespace memfold {

// Bytes the model's constants (flash) and persistent state (RAM) take on the board.
struct StaticBytes {
  int64_t constants = 0;
  int64_t state = 0;
};

// Whether a program can go on a board, and what it takes there.
struct DeviceFit {
  // The code generator can express it: every operator has a device kernel, offsets fit 32 bits.
  Status compilable;
  // It fits at all (checked when compilable): constants within the flash, arena, state and
  // stack within the RAM; the error names both sizes.
  Status fits;
  StaticBytes counted;
  bool ok() const { return compilable.ok() && fits.ok(); }
};
DeviceFit CheckDeviceFit(const PlannedProgram& program, const Board& board);

// The most operators a plan of `graph` may have for its compiled tables to fit the board's
// flash beside the constants, the harness's `inputs`, the kernels' prepared data (shared by an
// operator's tiles) and the code (BestOptions::max_steps for `memfold compile`). An estimate:
// 192 B of tables per operator (measured 120 to 170 B on MobileNet v2's split plans) and
// 96 KiB of code (36 KiB measured). O(nodes + values).
int64_t MaxOperatorsInFlash(const Graph& graph, const std::vector<Bytes>& inputs,
                            const Board& board);

// Generates the tree's model and harness (run on `inputs`) and writes it under `dir`. Errors:
// the first failed check of `fit` (CheckDeviceFit of this program and board), the writer's.
Result<std::vector<GeneratedFile>> CompileProgram(const PlannedProgram& program,
                                                  const DeviceFit& fit,
                                                  const CodegenOptions& codegen,
                                                  const std::vector<Bytes>& inputs,
                                                  const Board& board, const std::string& dir);

// How far a float32 output of the device is from the host's: largest |difference| and ulps.
struct FloatDifference {
  double max_abs = 0;
  int64_t max_ulp = 0;
};
FloatDifference CompareFloats(const Bytes& device, const Bytes& host);

// The figures of a run on the board, measured on the binary and on the target.
struct Measured {
  std::map<std::string, int64_t> sections;
  int64_t arena = 0, other_ram = 0, stack = 0, flash = 0;
  int64_t ram() const { return arena + other_ram + stack; }
};

struct BoardRun {
  CheckedRun host;  // the host's planned run, every read compared with the unplanned one
  std::string elf;
  Measured measured;
  std::vector<Bytes> outputs;  // the device's
  bool identical = false;      // the device's outputs are the host's, bit for bit
  bool agrees = false;         // ... or float32 outputs within the targets' libm rounding
  // Executed instructions of `invoke` on the emulated core, in all and per schedule step
  // (compile/device_build.h DeviceRun).
  int64_t instructions = 0;
  std::vector<int64_t> step_instructions;
  int64_t fetched_bytes = -1;  // streamed inputs: bytes the harness's camera delivered
};

// Runs the program on the host (checked) and the tree `build` names on `board` under QEMU.
// Errors: a host run that differs from the unplanned one, a missing toolchain, a failed build
// or emulation.
Result<BoardRun> RunProgramOnBoard(const PlannedProgram& program, const std::vector<Bytes>& inputs,
                                   const BuildOptions& build, const Board& board);

}  // namespace memfold
