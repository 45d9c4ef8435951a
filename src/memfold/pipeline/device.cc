#include "memfold/pipeline/device.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "memfold/io/text.h"
#include "memfold/ops/kernel_args.h"

namespace memfold {
namespace {

// Floats that the target's libm (expf, tanhf, erff) rounds differently from the host's glibc
// may differ by a few units in the last place; more than this is a wrong result.
constexpr int64_t kFloatUlpTolerance = 64;

// Distance in units in the last place between two floats (0 for equal bits).
int64_t UlpDistance(float a, float b) {
  auto ordered = [](float f) {
    int32_t bits = 0;
    std::memcpy(&bits, &f, 4);
    return bits < 0 ? int64_t{std::numeric_limits<int32_t>::min()} - bits : int64_t{bits};
  };
  if (a != a || b != b) return std::numeric_limits<int64_t>::max();  // NaN: no distance
  return std::abs(ordered(a) - ordered(b));
}

// Whether the device's outputs are the host's: bit for bit, or for float32 outputs within
// kFloatUlpTolerance.
bool Agrees(const Graph& g, const std::vector<Bytes>& device, const std::vector<Bytes>& host) {
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    if (device[k] == host[k]) continue;
    if (g.value(g.outputs[k]).dtype != DType::kF32 || device[k].size() != host[k].size())
      return false;
    if (CompareFloats(device[k], host[k]).max_ulp > kFloatUlpTolerance) return false;
  }
  return true;
}

Measured Measure(const std::map<std::string, int64_t>& sections, int64_t stack) {
  Measured m;
  m.sections = sections;
  m.stack = stack;
  auto size = [&](const char* name) {
    auto it = sections.find(name);
    return it == sections.end() ? int64_t{0} : it->second;
  };
  m.arena = size(".arena");
  m.other_ram = size(".data") + size(".bss");
  m.flash = size(".vectors") + size(".text") + size(".rodata") + size(".ARM.exidx") +
            size(".ARM.extab") + size(".init_array") + size(".data");
  return m;
}

// An error naming both sizes when a model cannot fit the board at all.
Status CheckFitsBoard(const StaticBytes& counted, int64_t arena, const Board& board) {
  if (counted.constants > board.flash_bytes) {
    return Status::Error("the model's constants need " + GroupDigits(counted.constants) +
                         " B of flash; the " + board.machine + " has " +
                         GroupDigits(board.flash_bytes) + " B");
  }
  const int64_t ram = arena + counted.state + board.stack_bytes;
  if (ram > board.ram_bytes) {
    return Status::Error("the arena (" + GroupDigits(arena) + " B), state and stack need " +
                         GroupDigits(ram) + " B of RAM; the " + board.machine + " has " +
                         GroupDigits(board.ram_bytes) + " B");
  }
  return Status::Ok();
}

// Bytes of the program's constants and persistent state (those some operator reads: a rewrite
// may leave constants it replaced, such as weights cut into channel groups, unread).
StaticBytes CountStatic(const PlannedProgram& program) {
  const Graph& g = program.graph();
  const SharedStorage& shared = program.liveness().shared;
  const std::vector<std::vector<NodeId>> readers = g.Consumers();
  StaticBytes counted;
  for (ValueId v = 0; v < g.num_values(); ++v) {
    if (shared.root[static_cast<size_t>(v)] != v) continue;
    if (g.value(v).is_constant() && readers[static_cast<size_t>(v)].empty()) continue;
    if (shared.persistent[static_cast<size_t>(v)]) {
      counted.state += g.value(v).bytes();
    } else if (g.value(v).is_constant()) {
      counted.constants += g.value(v).bytes();
    }
  }
  return counted;
}

}  // namespace

DeviceFit CheckDeviceFit(const PlannedProgram& program, const Board& board) {
  DeviceFit fit;
  fit.compilable = CheckCompilable(program.graph(), program.arena_bytes());
  if (!fit.compilable.ok()) return fit;
  fit.counted = CountStatic(program);
  fit.fits = CheckFitsBoard(fit.counted, program.arena_bytes(), board);
  return fit;
}

Result<std::vector<GeneratedFile>> CompileProgram(const PlannedProgram& program,
                                                  const DeviceFit& fit,
                                                  const CodegenOptions& codegen,
                                                  const std::vector<Bytes>& inputs,
                                                  const Board& board, const std::string& dir) {
  MF_RETURN_IF_ERROR(fit.compilable);
  MF_RETURN_IF_ERROR(fit.fits);
  const Graph& g = program.graph();
  MF_ASSIGN_OR_RETURN(std::vector<GeneratedFile> files,
                      GenerateModel(g, program.liveness(), program.plan().plan, codegen));
  files.push_back(GenerateHarness(g, codegen, inputs));
  MF_RETURN_IF_ERROR(WriteTree(dir, files, board, codegen.name));
  return files;
}

int64_t MaxOperatorsInFlash(const Graph& graph, const std::vector<Bytes>& inputs,
                            const Board& board) {
  constexpr int64_t kCodeBytes = 96 << 10, kTableBytesPerOperator = 192;
  int64_t used = kCodeBytes;
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    if (graph.value(v).is_constant()) used += graph.value(v).bytes();
  }
  for (const Bytes& input : inputs) used += static_cast<int64_t>(input.size());
  for (NodeId id : graph.schedule) {
    const size_t prepared = KernelArgsOf(graph, graph.node(id)).prepared.size();
    used += static_cast<int64_t>(sizeof(int32_t) * prepared);
  }
  return std::max<int64_t>(1, (board.flash_bytes - used) / kTableBytesPerOperator);
}

FloatDifference CompareFloats(const Bytes& device, const Bytes& host) {
  FloatDifference d;
  for (size_t i = 0; i + 4 <= device.size() && i + 4 <= host.size(); i += 4) {
    float a = 0, b = 0;
    std::memcpy(&a, device.data() + i, 4);
    std::memcpy(&b, host.data() + i, 4);
    d.max_abs = std::max(d.max_abs, std::abs(static_cast<double>(a) - static_cast<double>(b)));
    d.max_ulp = std::max(d.max_ulp, UlpDistance(a, b));
  }
  return d;
}

Result<BoardRun> RunProgramOnBoard(const PlannedProgram& program, const std::vector<Bytes>& inputs,
                                   const BuildOptions& build, const Board& board) {
  MF_RETURN_IF_ERROR(CheckToolchain(true));
  BoardRun run;
  MF_ASSIGN_OR_RETURN(run.host, RunChecked(program, inputs));
  if (!run.host.identical()) {
    return Status::Error("the planned run differs from the unplanned one at " +
                         DescribeDifference(*run.host.first_difference));
  }
  MF_ASSIGN_OR_RETURN(run.elf, BuildElf(build, board));
  MF_ASSIGN_OR_RETURN(const auto sections, SectionSizes(run.elf));
  const Graph& g = program.graph();
  MF_ASSIGN_OR_RETURN(DeviceRun ran,
                      RunOnBoard(run.elf, board, g.outputs.size(), g.schedule.size()));
  run.measured = Measure(sections, ran.stack_bytes);
  run.instructions = ran.instructions;
  run.step_instructions = std::move(ran.step_instructions);
  run.fetched_bytes = ran.fetched_bytes;
  run.outputs = std::move(ran.outputs);
  run.identical = run.outputs == run.host.planned.outputs;
  run.agrees = Agrees(g, run.outputs, run.host.planned.outputs);
  return run;
}

}  // namespace memfold
