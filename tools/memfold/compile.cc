// `memfold compile`: a planned model as a bare-metal C++ tree (compile/codegen.h), and with
// --run its build for an emulated Cortex-M, run under QEMU, outputs compared with the host's
// proven planned run, RAM and flash measured on the binary (compile/device_build.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "memfold/compile/codegen.h"
#include "memfold/compile/device_build.h"
#include "memfold/exec/checked_run.h"
#include "memfold/exec/executor.h"
#include "memfold/io/sha256.h"
#include "memfold/io/text.h"
#include "memfold/plan/shared_storage.h"
#include "progress.h"

namespace memfold::cli {
namespace {

using Json = nlohmann::ordered_json;

// The C name of a model: --name, else its file's stem or its zoo spec.
std::string ModelName(const CompileOptions& options) {
  if (options.name) return CIdentifier(*options.name);
  const std::string& model = options.common.model;
  if (model.rfind("zoo:", 0) == 0) return CIdentifier(model.substr(4));
  return CIdentifier(std::filesystem::path(model).stem().string());
}

// Bytes the model's constants and persistent state take on the board.
struct StaticBytes {
  int64_t constants = 0;
  int64_t state = 0;
};

StaticBytes CountStatic(const Graph& g) {
  StaticBytes counted;
  const SharedStorage shared = ComputeSharedStorage(g);
  for (ValueId v = 0; v < g.num_values(); ++v) {
    if (shared.root[static_cast<size_t>(v)] != v) continue;
    if (shared.persistent[static_cast<size_t>(v)]) {
      counted.state += g.value(v).bytes();
    } else if (g.value(v).is_constant()) {
      counted.constants += g.value(v).bytes();
    }
  }
  return counted;
}

// Exit 1 naming both sizes when the model cannot fit the board at all.
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

// How far a float32 output of the device is from the host's: largest |difference| and ulps.
struct FloatDifference {
  double max_abs = 0;
  int64_t max_ulp = 0;
};

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

Json OutputsJson(const Graph& g, const std::vector<Bytes>& outputs,
                 const std::vector<Bytes>& host) {
  Json out = Json::array();
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const Value& v = g.value(g.outputs[k]);
    Json entry = {{"name", v.name},
                  {"dtype", DTypeName(v.dtype)},
                  {"shape", v.shape},
                  {"sha256", Sha256Hex(outputs[k].data(), outputs[k].size())},
                  {"values", FirstValues(v, outputs[k], 16)},
                  {"identical_to_host", outputs[k] == host[k]}};
    if (v.dtype == DType::kF32) {
      const FloatDifference d = CompareFloats(outputs[k], host[k]);
      entry["max_abs_difference"] = d.max_abs;
      entry["max_ulp_difference"] = d.max_ulp;
    }
    out.push_back(entry);
  }
  return out;
}

// The figures of a run on the board, measured on the binary and on the target.
struct Measured {
  std::map<std::string, int64_t> sections;
  int64_t arena = 0, other_ram = 0, stack = 0, flash = 0;
  int64_t ram() const { return arena + other_ram + stack; }
};

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

struct Compiled {
  std::string name;
  Graph original;  // as loaded: the reference of the checked host run
  ChosenPlan chosen;
  std::vector<Bytes> inputs;
  StaticBytes counted;
};

void PrintRun(const CompileOptions& options, const Compiled& c, const Measured& m,
              const std::vector<Bytes>& outputs, const std::vector<Bytes>& host) {
  std::cout << "ran " << c.name << " on the emulated " << FindBoard(options.target)->machine << " ("
            << options.target << (options.poison ? ", arena poisoned" : "") << ")\n";
  const Graph& g = c.chosen.graph;
  for (size_t k = 0; k < outputs.size(); ++k) {
    std::cout << "  output " << g.value(g.outputs[k]).name << " sha256 "
              << Sha256Hex(outputs[k].data(), outputs[k].size()) << "\n  first values "
              << FirstValues(g.value(g.outputs[k]), outputs[k], 16).dump() << "\n";
    if (outputs[k] != host[k] && g.value(g.outputs[k]).dtype == DType::kF32) {
      const FloatDifference d = CompareFloats(outputs[k], host[k]);
      std::cout << "  differs from the host by at most " << d.max_abs << " (" << d.max_ulp
                << " ulp): the target's libm rounds expf/tanhf/erff differently\n";
    }
  }
  TextTable table({"measured on the binary", ">bytes"});
  table.Add({"arena (.arena)", GroupDigits(m.arena)});
  table.Add({"other static data (.data + .bss)", GroupDigits(m.other_ram)});
  table.Add({"stack high-water mark", GroupDigits(m.stack)});
  table.Add({"RAM total", GroupDigits(m.ram())});
  table.Add({"flash (code + constants)", GroupDigits(m.flash)});
  std::cout << table.Render()
            << "identical to the host's planned run: " << (outputs == host ? "yes" : "no") << "\n";
}

int RunOnDevice(const CompileOptions& options, const Compiled& c) {
  const Board& board = *FindBoard(options.target);
  if (Status tools = CheckToolchain(true); !tools.ok()) return Fail(tools.message(), kExitFailed);
  const Graph& g = c.chosen.graph;
  Phase host("run on the host in the planned arena, every read compared");
  Result<CheckedRun> reference =
      RunChecked(c.original, g, c.chosen.plan.liveness, c.chosen.plan.plan, c.inputs);
  if (!reference.ok()) return Fail(reference.status().message(), kExitFailed);
  if (!reference->identical()) {
    return Fail(options.common.model + ": the planned run differs from the unplanned one at " +
                    DescribeDifference(*reference->first_difference),
                kExitFailed);
  }
  host.Done(std::to_string(reference->values_checked) + " reads compared");
  Phase build("build for " + board.machine);
  Result<std::string> elf = BuildElf({.dir = options.output,
                                      .name = c.name,
                                      .poison = options.poison,
                                      .cache_dir = options.cache.value_or("")},
                                     board);
  if (!elf.ok()) return Fail(elf.status().message(), kExitFailed);
  Result<std::map<std::string, int64_t>> sections = SectionSizes(*elf);
  if (!sections.ok()) return Fail(sections.status().message(), kExitFailed);
  build.Done(*elf);
  Phase emulate("run under qemu-system-arm -M " + board.machine);
  Result<DeviceRun> ran = RunOnBoard(*elf, board, g.outputs.size());
  if (!ran.ok()) return Fail(ran.status().message(), kExitFailed);
  emulate.Done("stack " + GroupDigits(ran->stack_bytes) + " B");
  const Measured m = Measure(*sections, ran->stack_bytes);
  const bool identical = ran->outputs == reference->planned.outputs;
  const bool agrees = Agrees(g, ran->outputs, reference->planned.outputs);
  if (options.common.json) {
    Json sizes = Json::object();
    for (const auto& [section, bytes] : m.sections) sizes[section] = bytes;
    std::cout << JsonText(
                     Json{{"model", options.common.model},
                          {"planner", options.planner},
                          {"target", options.target},
                          {"board", board.machine},
                          {"dir", options.output},
                          {"elf", *elf},
                          {"poisoned", options.poison},
                          {"arena_bytes", m.arena},
                          {"planned_arena_bytes", c.chosen.plan.plan.arena_bytes},
                          {"static_bytes", m.other_ram},
                          {"stack_bytes", m.stack},
                          {"ram_bytes", m.ram()},
                          {"flash_bytes", m.flash},
                          {"constants_bytes", c.counted.constants},
                          {"sections", sizes},
                          {"outputs", OutputsJson(g, ran->outputs, reference->planned.outputs)},
                          {"identical_to_host", identical},
                          {"agrees_with_host", agrees}})
              << "\n";
  } else {
    PrintRun(options, c, m, ran->outputs, reference->planned.outputs);
  }
  if (!agrees) {
    return Fail(options.common.model + ": the outputs on the " + board.machine +
                    " differ from the host's planned run",
                kExitFailed);
  }
  return kExitOk;
}

}  // namespace

int CompileCommand(const CompileOptions& options) {
  const Board* board = FindBoard(options.target);
  if (board == nullptr) {
    std::string known;
    for (const std::string& t : BoardTargets()) known += (known.empty() ? "" : ", ") + t;
    return Fail("--target " + options.target + " is not a board memfold builds for; use " + known);
  }
  const Result<int64_t> parsed_budget = BudgetBytes(options.budget);
  if (!parsed_budget.ok()) return Fail(parsed_budget.status().message());
  const int64_t budget = *parsed_budget;
  Phase load("load " + options.common.model);
  Result<Graph> loaded = LoadModel(options.common.model);
  if (!loaded.ok()) return Fail(loaded.status().message());
  if (IsTrainingModel(*loaded)) {
    return Fail(options.common.model +
                ": a training model; memfold compile builds inference models for devices");
  }
  load.Done(std::to_string(loaded->schedule.size()) + " ops");
  Compiled c;
  c.name = ModelName(options);
  Result<std::vector<Bytes>> inputs = ReadInputs(*loaded, options.input_file);
  if (!inputs.ok()) return Fail(inputs.status().message());
  c.inputs = std::move(*inputs);
  if (Status runnable = CheckRunnable(*loaded, c.inputs); !runnable.ok())
    return Fail(options.common.model + ": " + runnable.message());
  c.original = std::move(*loaded);
  if (options.best.stream_input) {
    return Fail(
        "--stream-input: compiled code does not fetch input boxes from a callback yet; "
        "compile without it (the input is then resident in the arena)");
  }
  Phase planning("plan " + options.planner);
  Result<ChosenPlan> chosen = MakePlan(c.original, options.planner, options.best);
  if (!chosen.ok()) return Fail(chosen.status().message(), kExitFailed);
  c.chosen = std::move(*chosen);
  const int64_t arena = c.chosen.plan.plan.arena_bytes;
  planning.Done(HumanBytes(arena) + ", verified");
  if (options.budget && arena > budget) {
    const auto [needed, limit] = DistinctSizes(arena, budget);
    return Fail(options.common.model + ": the " + needed + " arena does not fit the " + limit +
                    " budget; try --planner best",
                kExitFailed);
  }
  const Graph& g = c.chosen.graph;
  if (Status compilable = CheckCompilable(g, arena); !compilable.ok())
    return Fail(options.common.model + ": " + compilable.message());
  c.counted = CountStatic(g);
  if (Status fits = CheckFitsBoard(c.counted, arena, *board); !fits.ok())
    return Fail(options.common.model + ": " + fits.message(), kExitFailed);
  Phase generate("write " + options.output);
  const CodegenOptions codegen{c.name, options.common.model, options.planner};
  Result<std::vector<GeneratedFile>> files =
      GenerateModel(g, c.chosen.plan.liveness, c.chosen.plan.plan, codegen);
  if (!files.ok()) return Fail(files.status().message());
  files->push_back(GenerateHarness(g, codegen, c.inputs));
  if (Status written = WriteTree(options.output, *files, *board, c.name); !written.ok())
    return Fail(written.message());
  generate.Done(std::to_string(files->size()) + " generated files");
  if (options.run) return RunOnDevice(options, c);
  if (options.common.json) {
    std::cout << JsonText(Json{{"model", options.common.model},
                               {"planner", options.planner},
                               {"target", options.target},
                               {"dir", options.output},
                               {"name", c.name},
                               {"arena_bytes", arena},
                               {"constants_bytes", c.counted.constants},
                               {"state_bytes", c.counted.state}})
              << "\n";
  } else {
    std::cout << "wrote " << options.output << ": memfold_" << c.name << "_invoke in model/"
              << c.name << ".cc, a " << GroupDigits(arena) << " B arena, "
              << GroupDigits(c.counted.constants) << " B of constants\n"
              << "build and run: make -C " << options.output << " run  (or memfold compile ... "
              << "--run)\n";
  }
  return kExitOk;
}

}  // namespace memfold::cli
