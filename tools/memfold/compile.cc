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
#include "memfold/io/sha256.h"
#include "memfold/io/text.h"
#include "memfold/ops/runnable.h"
#include "memfold/pipeline/device.h"
#include "memfold/pipeline/program.h"
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

// Every step of the schedule: its position, node, operator and executed instructions.
Json InstructionsByOp(const Graph& g, const std::vector<int64_t>& step_instructions) {
  Json out = Json::array();
  for (size_t pos = 0; pos < g.schedule.size() && pos < step_instructions.size(); ++pos) {
    const Node& node = g.node(g.schedule[pos]);
    out.push_back({{"step", pos},
                   {"name", node.name},
                   {"op", node.op},
                   {"instructions", step_instructions[pos]}});
  }
  return out;
}

struct Compiled {
  std::string name;
  const PlannedProgram& program;
  std::vector<Bytes> inputs;
  StaticBytes counted;
};

void PrintRun(const CompileOptions& options, const Compiled& c, const BoardRun& run) {
  const Measured& m = run.measured;
  const std::vector<Bytes>& outputs = run.outputs;
  const std::vector<Bytes>& host = run.host.planned.outputs;
  std::cout << "ran " << c.name << " on the emulated " << FindBoard(options.target)->machine << " ("
            << options.target << (options.poison ? ", arena poisoned" : "") << ")\n";
  const Graph& g = c.program.graph();
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
  std::cout << table.Render() << "instructions per inference: " << GroupDigits(run.instructions)
            << "\n"
            << "identical to the host's planned run: " << (outputs == host ? "yes" : "no") << "\n";
}

// The ELF's flash by what it holds: the code, the model's weights, the harness's test input
// (main.cc), the program's tables (the rest of .rodata: descriptors, shapes, attributes,
// prepared records, poison ranges, with newlib's few constants), initialised data.
Json FlashByPart(const Measured& m, const Compiled& c) {
  auto size = [&](const char* name) {
    auto it = m.sections.find(name);
    return it == m.sections.end() ? int64_t{0} : it->second;
  };
  int64_t input = 0;
  for (const Bytes& bytes : c.inputs) input += static_cast<int64_t>(bytes.size());
  const int64_t code = size(".vectors") + size(".text") + size(".ARM.exidx") + size(".ARM.extab") +
                       size(".init_array");
  return Json{{"code", code},
              {"weights", c.counted.constants},
              {"input", input},
              {"tables", size(".rodata") - c.counted.constants - input},
              {"data", size(".data")}};
}

int RunOnDevice(const CompileOptions& options, const Compiled& c) {
  const Board& board = *FindBoard(options.target);
  if (Status tools = CheckToolchain(true); !tools.ok()) return Fail(tools.message(), kExitFailed);
  Phase phase("run on the host (every read compared), build for and run on " + board.machine);
  Result<BoardRun> ran = RunProgramOnBoard(c.program, c.inputs,
                                           {.dir = options.output,
                                            .name = c.name,
                                            .poison = options.poison,
                                            .cache_dir = options.cache.value_or("")},
                                           board);
  if (!ran.ok()) return Fail(options.common.model + ": " + ran.status().message(), kExitFailed);
  phase.Done("stack " + GroupDigits(ran->measured.stack) + " B");
  const Graph& g = c.program.graph();
  const Measured& m = ran->measured;
  const std::vector<Bytes>& host = ran->host.planned.outputs;
  if (options.common.json) {
    Json sizes = Json::object();
    for (const auto& [section, bytes] : m.sections) sizes[section] = bytes;
    std::cout << JsonText(Json{{"model", options.common.model},
                               {"planner", options.planner},
                               {"objective", memfold::ObjectiveName(options.best.objective)},
                               {"target", options.target},
                               {"board", board.machine},
                               {"dir", options.output},
                               {"elf", ran->elf},
                               {"poisoned", options.poison},
                               {"arena_bytes", m.arena},
                               {"planned_arena_bytes", c.program.arena_bytes()},
                               {"static_bytes", m.other_ram},
                               {"stack_bytes", m.stack},
                               {"ram_bytes", m.ram()},
                               {"flash_bytes", m.flash},
                               {"constants_bytes", c.counted.constants},
                               {"flash_by_part", FlashByPart(m, c)},
                               {"sections", sizes},
                               {"outputs", OutputsJson(g, ran->outputs, host)},
                               {"identical_to_host", ran->identical},
                               {"agrees_with_host", ran->agrees},
                               {"stream_input", options.best.stream_input},
                               {"fetched_bytes", ran->fetched_bytes},
                               {"instructions", ran->instructions},
                               {"instructions_by_op", InstructionsByOp(g, ran->step_instructions)}})
              << "\n";
  } else {
    PrintRun(options, c, *ran);
  }
  if (!ran->agrees) {
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
  Result<Graph> loaded = LoadModel(options.common.model, options.common.input_layout);
  if (!loaded.ok()) return Fail(loaded.status().message());
  if (IsTrainingModel(*loaded)) {
    return Fail(options.common.model +
                ": a training model; memfold compile builds inference models for devices");
  }
  load.Done(std::to_string(loaded->schedule.size()) + " ops");
  Result<std::vector<Bytes>> inputs = ModelInputs(*loaded, options.input_file);
  if (!inputs.ok()) return Fail(inputs.status().message());
  if (Status runnable = CheckRunnable(*loaded, *inputs); !runnable.ok())
    return Fail(options.common.model + ": " + runnable.message());
  Phase planning("plan " + options.planner);
  BestOptions best = options.best;
  best.max_steps = MaxOperatorsInFlash(*loaded, *inputs, *board);
  Result<PlannedProgram> program = PlanProgram(std::move(*loaded), {options.planner, best});
  if (!program.ok()) return Fail(program.status().message(), kExitFailed);
  const int64_t arena = program->arena_bytes();
  planning.Done(HumanBytes(arena) + ", verified");
  if (options.budget && arena > budget) {
    const auto [needed, limit] = DistinctSizes(arena, budget);
    return Fail(options.common.model + ": the " + needed + " arena does not fit the " + limit +
                    " budget; try --planner best",
                kExitFailed);
  }
  const DeviceFit fit = CheckDeviceFit(*program, *board);
  if (!fit.compilable.ok()) return Fail(options.common.model + ": " + fit.compilable.message());
  if (!fit.fits.ok()) return Fail(options.common.model + ": " + fit.fits.message(), kExitFailed);
  Compiled c{ModelName(options), *program, std::move(*inputs), fit.counted};
  Phase generate("write " + options.output);
  const CodegenOptions codegen{c.name, options.common.model, options.planner};
  Result<std::vector<GeneratedFile>> files =
      CompileProgram(*program, fit, codegen, c.inputs, *board, options.output);
  if (!files.ok()) return Fail(files.status().message());
  generate.Done(std::to_string(files->size()) + " generated files");
  if (options.run) return RunOnDevice(options, c);
  if (options.common.json) {
    std::cout << JsonText(Json{{"model", options.common.model},
                               {"planner", options.planner},
                               {"objective", memfold::ObjectiveName(options.best.objective)},
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
