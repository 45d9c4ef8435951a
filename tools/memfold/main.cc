// memfold: plans and proves the memory of neural networks. See README.md and CONTRACT.md.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <new>

#include "commands.h"
#include "memfold/ops/kernels/host/host_gemm.h"
#include "memfold/plan/plan_graph.h"
#include "progress.h"

namespace {

using memfold::cli::kExitBadInput;

void AddModelArgs(CLI::App* command, memfold::cli::CommonOptions* common) {
  command->add_option("MODEL", common->model, "a .tflite file or zoo:NAME[,key=value...]")
      ->required();
  command->add_flag("--json", common->json, "print one JSON object instead of tables");
}

// --input-layout: the image inputs as the model declares them, or NHWC (an ONNX model's NCHW
// inputs made channels-last, passes/input_layout.h).
void AddInputLayout(CLI::App* command, memfold::cli::CommonOptions* common) {
  command
      ->add_option_function<std::string>(
          "--input-layout",
          [common](const std::string& name) {
            common->input_layout = *memfold::ParseInputLayout(name);  // checked below
          },
          "model: the inputs as the model declares them (default); nhwc: an ONNX model's NCHW "
          "image inputs become NHWC, so a camera's rows stream in as they come and the first "
          "layers split")
      ->check(CLI::IsMember({"model", "nhwc"}));
}

// Every planning strategy by name, and best: the pipeline that also re-orders operators,
// makes concatenations copy-free and splits operators into row bands.
CLI::Option* AddPlannerOption(CLI::App* command, std::string* planner) {
  std::vector<std::string> names;
  for (const memfold::ProgramPlanner& row : memfold::ProgramPlanners()) names.push_back(row.name);
  std::string list;
  for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
  return command
      ->add_option("--planner", *planner,
                   "best also re-orders operators and splits them into row bands; offline is the "
                   "file's own plan. One of: " +
                       list)
      ->check(CLI::IsMember(names));
}

// The recomputation strategies, and `all` (compare them).
std::vector<std::string> StrategiesOrAll() {
  std::vector<std::string> names = memfold::cli::RecomputationNames();
  names.push_back("all");
  return names;
}

// --max-recompute for --planner best: a fraction in [0, 3]; --objective (its default is the one
// `options` holds: memory for plan and run, balanced for compile, where speed counts too).
void AddBestOptions(CLI::App* command, memfold::BestOptions* options) {
  command
      ->add_option_function<std::string>(
          "--objective",
          [options](const std::string& name) {
            options->objective = *memfold::ParseObjective(name);  // checked below
          },
          std::string("--planner best: the smallest arena (memory), the least extra work "
                      "(speed), or the least extra work within 5 % of the smallest arena "
                      "(balanced); default ") +
              memfold::ObjectiveName(options->objective))
      ->check(CLI::IsMember({"memory", "balanced", "speed"}));
  command->add_flag("--stream-input", options->stream_input,
                    "the graph input is not resident: the runtime fetches the rows or patches "
                    "split regions read from the caller (a camera, a decoder)");
  command
      ->add_option("--max-recompute", options->max_recompute,
                   "--planner best: extra FLOPs operation splitting may add, as a fraction of the "
                   "model's (default 0.10)")
      ->check(CLI::Range(0.0, 3.0));
}

// --quiet and --verbose, accepted before the command and after it.
struct VerbosityFlags {
  bool quiet = false;
  bool verbose = false;
};

void AddVerbosityFlags(CLI::App* command, VerbosityFlags* flags) {
  CLI::Option* quiet = command->add_flag(
      "-q,--quiet", flags->quiet, "errors only: no progress lines, no timings, no 'wrote' summary");
  CLI::Option* verbose =
      command->add_flag("--verbose", flags->verbose, "print the time of every phase on stderr");
  quiet->excludes(verbose);
}

bool IsCommand(CLI::App& app, const std::string& name) {
  for (const CLI::App* command : app.get_subcommands({})) {
    if (command->get_name() == name) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  // Once, before anything runs: restart with OpenBLAS's kernels matched to this CPU when its
  // load-time detection fell back to generic ones (BetterBlasCoreType). If the restart fails,
  // memfold runs on with the generic kernels.
  if (const std::string core = memfold::BetterBlasCoreType(); !core.empty()) {
    setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
    execv("/proc/self/exe", argv);
  }
  CLI::App app{"memfold: makes neural networks need less memory, and proves it"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "memfold 0.1");

  bool zoo_json = false;
  CLI::App* zoo =
      app.add_subcommand("zoo", "list the built-in reference models, keys and defaults");
  zoo->add_flag("--json", zoo_json, "print JSON");

  memfold::cli::CommonOptions inspect_options;
  std::optional<std::string> inspect_write;
  CLI::App* inspect =
      app.add_subcommand("inspect", "summarise a model: ops, values, inputs, outputs");
  AddModelArgs(inspect, &inspect_options);
  AddInputLayout(inspect, &inspect_options);
  inspect->add_option("--write-tflite", inspect_write,
                      "also write the model (a zoo model too) as a .tflite file with memfold's "
                      "TFLite writer");

  memfold::cli::PlanOptions plan_options;
  CLI::App* plan = app.add_subcommand("plan", "plan the tensor arena and verify the plan");
  AddModelArgs(plan, &plan_options.common);
  AddInputLayout(plan, &plan_options.common);
  AddPlannerOption(plan, &plan_options.planner);
  AddBestOptions(plan, &plan_options.best);
  plan->add_option("--budget", plan_options.budget,
                   "arena budget, e.g. 256K, 1M; exit 1 if it does not fit");
  plan->add_option("--emit-tflite", plan_options.emit_tflite,
                   "write the model with the plan as TFLM's OfflineMemoryAllocation");
  plan->add_option("--export-problem", plan_options.export_problem,
                   "write the plan's placement problem (buffers, lifetimes, sizes, alignment, "
                   "overlap allowances) as CSV for `memfold place`");
  plan->add_option("--emit-c", plan_options.emit_c,
                   "write a C header with the arena size and tensor offsets");
  plan->add_option("--svg", plan_options.svg,
                   "draw the arena (buffers over the schedule, overlaps, peak) as an SVG file; "
                   "with --pareto, the curve");
  plan->add_flag("--pareto", plan_options.pareto,
                 "--planner best: the verified plans no other beats in both arena and extra "
                 "FLOPs, up to --max-recompute, each run checked against the unplanned model");
  plan->add_option("--pareto-points", plan_options.pareto_points,
                   "--pareto: points of the segment search's curve to build (default 12)")
      ->check(CLI::Range(1, 64));

  memfold::cli::CommonOptions overlap_options;
  CLI::App* overlap = app.add_subcommand(
      "overlap",
      "safe overlap O_s of every operator by the analytic, algorithmic and trace methods");
  AddModelArgs(overlap, &overlap_options);

  std::vector<std::string> compare_models;
  bool compare_json = false;
  CLI::App* compare = app.add_subcommand(
      "compare", "every planner's arena, lower bounds and diagonal saving for several models");
  compare->add_option("MODEL", compare_models, "models (.tflite files or zoo:NAME)")->required();
  compare->add_flag("--json", compare_json, "print one JSON object");

  memfold::cli::TrainOptions train_options;
  CLI::App* train = app.add_subcommand(
      "train", "plan (and with --steps run) a training step: footprint, breakdown, loss");
  AddModelArgs(train, &train_options.common);
  train->add_option("--export-problem", train_options.export_problem,
                    "write the training step's placement problem (the chosen strategy's plan) as "
                    "CSV for `memfold place`");
  train
      ->add_option(
          "--strategy", train_options.strategy,
          "none (baseline), mirror (Chen et al.), echo, or all (compare the three; plans only)")
      ->check(CLI::IsMember(StrategiesOrAll()));
  train->add_flag("--plan-only", train_options.plan_only, "plan without executing");
  train->add_option("--steps", train_options.steps, "training steps to execute")
      ->check(CLI::Range(0, 1000000));
  train->add_option("--optimizer", train_options.optimizer, "sgd_momentum or adam")
      ->check(CLI::IsMember({"sgd_momentum", "adam"}));
  train->add_option("--lr", train_options.learning_rate, "learning rate")
      ->check(CLI::PositiveNumber);
  train
      ->add_option("--planner", train_options.planner,
                   "mxnet (default), greedy, mxnet_or_greedy (the smaller), or another planner")
      ->check(CLI::IsMember(memfold::StrategyNames()));
  train->add_option("--svg", train_options.svg,
                    "draw live memory over the step for none, mirror and echo as an SVG file");

  memfold::cli::FitOptions fit_options;
  CLI::App* fit = app.add_subcommand(
      "fit", "the largest batch or depth whose training step fits a memory budget");
  AddModelArgs(fit, &fit_options.common);
  fit->add_option("--budget", fit_options.budget, "memory budget, e.g. 11G")->required();
  fit->add_option("--vary", fit_options.vary, "batch or layers")
      ->check(CLI::IsMember({"batch", "layers"}));
  fit->add_option("--strategy", fit_options.strategy, "none, mirror or echo (default: all three)")
      ->check(CLI::IsMember(memfold::cli::RecomputationNames()));

  memfold::cli::RunOptions run_options;
  CLI::App* run = app.add_subcommand(
      "run", "run the model inside the planned arena; compare with an unplanned run");
  AddModelArgs(run, &run_options.common);
  AddInputLayout(run, &run_options.common);
  AddPlannerOption(run, &run_options.planner);
  AddBestOptions(run, &run_options.best);
  run->add_option("--input", run_options.input_file,
                  "raw little-endian input bytes (default: CONTRACT.md's input)");

  memfold::cli::CompileOptions compile_options;
  CLI::App* compile = app.add_subcommand(
      "compile",
      "write the planned model as bare-metal C++; --run builds it for an emulated "
      "Cortex-M, runs it and measures RAM and flash");
  AddModelArgs(compile, &compile_options.common);
  AddInputLayout(compile, &compile_options.common);
  AddPlannerOption(compile, &compile_options.planner);
  compile_options.best.objective = memfold::Objective::kBalanced;
  AddBestOptions(compile, &compile_options.best);
  compile->add_option("--budget", compile_options.budget,
                      "arena budget, e.g. 256K; exit 1 if the plan does not fit");
  compile->add_option("-o,--output", compile_options.output, "directory of the source tree")
      ->required();
  compile->add_option("--target", compile_options.target, "the board's core (cortex-m4)");
  compile->add_option("--name", compile_options.name,
                      "C name of the model: memfold_NAME_invoke (default: the file's)");
  compile->add_option("--input", compile_options.input_file,
                      "raw little-endian input bytes for the run (default: CONTRACT.md's input)");
  compile->add_option("--cache", compile_options.cache,
                      "where built device libraries are kept (default: ~/.cache/memfold)");
  compile->add_flag("--run", compile_options.run,
                    "build with arm-none-eabi-gcc, run under qemu-system-arm, compare with the "
                    "host, measure RAM and flash");
  compile->add_flag("--poison", compile_options.poison,
                    "fill and poison the arena on the target as the host executor does");

  bool ops_json = false, ops_markdown = false;
  CLI::App* ops = app.add_subcommand(
      "ops", "operator coverage: every TFLite builtin, what memfold reads, runs and models");
  ops->add_flag("--json", ops_json, "print one JSON object");
  ops->add_flag("--markdown", ops_markdown, "print the table in Markdown (docs/operators.md)");

  memfold::cli::ReportOptions report_options;
  CLI::App* report = app.add_subcommand(
      "report",
      "write one self-contained HTML page: summary, planners, pictures, O_s or strategies");
  AddModelArgs(report, &report_options.common);
  report->add_option("-o,--output", report_options.output, "the HTML file to write")->required();

  memfold::cli::PlaceOptions place_options;
  CLI::App* place = app.add_subcommand(
      "place", "place a buffer problem (MiniMalloc's CSV: id,lower,upper,size) in one arena");
  place->add_option("FILE", place_options.problem, "the problem's CSV file")->required();
  place->add_option("--capacity", place_options.capacity,
                    "stop at the first placement within this many bytes (e.g. 1048576 or 1M)");
  place->add_option("--time-limit", place_options.time_limit,
                    "the exact solver's budget (default 10): 500 million units of work per "
                    "second, so the answer does not depend on the machine, and at most twice "
                    "that, plus a second, in wall time");
  place->add_option("-o,--output", place_options.output,
                    "write the rows with an offset column to this CSV file");
  place->add_flag("--json", place_options.json, "print one JSON object");

  VerbosityFlags verbosity;
  AddVerbosityFlags(&app, &verbosity);
  for (CLI::App* command : app.get_subcommands({})) AddVerbosityFlags(command, &verbosity);

  if (argc > 1 && argv[1][0] != '-' && !IsCommand(app, argv[1])) {
    std::cerr << "memfold: unknown command '" << argv[1]
              << "'; commands are zoo, inspect, plan, overlap, run, compare, train, fit, report, "
                 "place (see memfold --help)\n";
    return kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "memfold: " << e.what() << " (see memfold --help)\n";
    return kExitBadInput;
  }
  try {  // a model larger than memory is an error message, never an abort
    memfold::cli::SetVerbosity(verbosity.quiet     ? memfold::cli::Verbosity::kQuiet
                               : verbosity.verbose ? memfold::cli::Verbosity::kVerbose
                                                   : memfold::cli::Verbosity::kNormal);
    if (zoo->parsed()) return memfold::cli::ZooCommand(zoo_json);
    if (report->parsed()) return memfold::cli::ReportCommand(report_options);
    if (plan->parsed()) return memfold::cli::PlanCommand(plan_options);
    if (run->parsed()) return memfold::cli::RunCommand(run_options);
    if (compile->parsed()) return memfold::cli::CompileCommand(compile_options);
    if (ops->parsed()) return memfold::cli::OpsCommand(ops_json, ops_markdown);
    if (overlap->parsed()) return memfold::cli::OverlapCommand(overlap_options);
    if (compare->parsed()) return memfold::cli::CompareCommand(compare_models, compare_json);
    if (train->parsed()) return memfold::cli::TrainCommand(train_options);
    if (fit->parsed()) return memfold::cli::FitCommand(fit_options);
    if (place->parsed()) return memfold::cli::PlaceCommand(place_options);
    return memfold::cli::InspectCommand(inspect_options, inspect_write);
  } catch (const std::bad_alloc&) {
    return memfold::cli::Fail(
        "out of memory: the model needs more than this machine has; choose a smaller configuration "
        "(`memfold plan` plans without running)",
        memfold::cli::kExitFailed);
  }
}
