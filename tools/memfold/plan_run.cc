// `memfold plan` and `memfold run`.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "memfold/exec/checked_run.h"
#include "memfold/exec/executor.h"
#include "memfold/exec/run_memory.h"
#include "memfold/io/arena_svg.h"
#include "memfold/io/curve_svg.h"
#include "memfold/io/file.h"
#include "memfold/io/sha256.h"
#include "memfold/io/text.h"
#include "memfold/passes/best_plan.h"
#include "memfold/pipeline/export.h"
#include "memfold/placement/portfolio.h"
#include "memfold/placement/problem_csv.h"
#include "memfold/plan/plan_graph.h"
#include "progress.h"

namespace memfold::cli {
namespace {

using Json = nlohmann::ordered_json;

std::string PeakOpName(const Graph& g, int32_t peak_time) {
  if (peak_time == 0) return "(graph inputs)";
  const Node& n = g.node(g.schedule[static_cast<size_t>(peak_time - 1)]);
  return n.name + " (" + n.op + ", op " + std::to_string(peak_time - 1) + ")";
}

// The value a buffer holds, or "scratch of NODE" for a kernel's scratch buffer.
std::string BufferName(const Graph& g, const GraphPlan& gp, int32_t id) {
  const ValueId v = gp.liveness.value_of[static_cast<size_t>(id)];
  if (v != kNoValue) return g.value(v).name;
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    for (int32_t r : gp.liveness.scratch_of[static_cast<size_t>(n)]) {
      if (r == id) return "scratch of " + g.node(n).name;
    }
  }
  return "scratch";
}

Json BuffersJson(const Graph& g, const GraphPlan& gp) {
  Json buffers = Json::array();
  for (const BufferRequest& r : gp.liveness.requests) {
    buffers.push_back({{"value", BufferName(g, gp, r.id)},
                       {"offset", gp.plan.offsets[static_cast<size_t>(r.id)]},
                       {"bytes", r.bytes},
                       {"first", r.first},
                       {"last", r.last},
                       {"overlap_bytes", OverlapBytes(gp, r.id)}});
  }
  return buffers;
}

void PrintPlanTable(const Graph& g, const GraphPlan& gp) {
  TextTable table({"value", ">offset", ">bytes", ">first", ">last"});
  for (const BufferRequest& r : gp.liveness.requests) {
    table.Add({BufferName(g, gp, r.id), GroupDigits(gp.plan.offsets[static_cast<size_t>(r.id)]),
               GroupDigits(r.bytes), std::to_string(r.first), std::to_string(r.last)});
  }
  std::cout << table.Render() << "\n";
}

// run --json's `first_difference`: null when the runs agree at every read.
Json DifferenceJson(const std::optional<ReadDifference>& d) {
  if (!d) return nullptr;
  return {{"check", d->check},
          {"operator_index", d->position < 0 ? Json(nullptr) : Json(d->position)},
          {"operator", d->op_name},
          {"op", d->op},
          {"value", d->value_name},
          {"planned_hash", d->actual_hash},
          {"unplanned_hash", d->expected_hash},
          {"detail", d->detail}};
}

}  // namespace

Json FirstValues(const Value& v, const Bytes& bytes, int64_t count) {
  Json values = Json::array();
  const int64_t n = std::min(count, v.elements());
  for (int64_t k = 0; k < n; ++k) {
    const std::byte* p = bytes.data() + k * ElementBytes(v.dtype);
    auto read = [p, &values](auto sample) {
      std::memcpy(&sample, p, sizeof(sample));
      values.push_back(sample);
    };
    if (!VisitElementType(v.dtype, read)) return values;  // packed bits: nothing to show
  }
  return values;
}

Json StepsJson(const std::vector<BestStep>& steps) {
  Json out = Json::array();
  for (const BestStep& s : steps) {
    out.push_back(
        {{"step", s.name}, {"arena_bytes", s.arena_bytes}, {"ms", s.ms}, {"detail", s.detail}});
  }
  return out;
}

void PrintSteps(const std::vector<BestStep>& steps) {
  std::cout << "step      arena           ms  what it did\n";
  for (const BestStep& s : steps) {
    std::cout << s.name << std::string(10 - std::min<size_t>(9, s.name.size()), ' ')
              << std::string(12 - std::min<size_t>(11, HumanBytes(s.arena_bytes).size()), ' ')
              << HumanBytes(s.arena_bytes) << "  "
              << std::string(
                     9 - std::min<size_t>(8, std::to_string(static_cast<int64_t>(s.ms)).size()),
                     ' ')
              << static_cast<int64_t>(s.ms) << "  " << s.detail << "\n";
  }
}

// --emit-tflite: the model's file with the plan as its offline plan (pipeline/export.h).
Status EmitTflite(const PlanOptions& options, const PlannedProgram& chosen) {
  MF_ASSIGN_OR_RETURN(Bytes file, TfliteWithPlan(options.common.model, chosen));
  return WriteFile(*options.emit_tflite,
                   std::string(reinterpret_cast<const char*>(file.data()), file.size()));
}

// --emit-c: the arena size and every value's offset (pipeline/export.h).
Status EmitC(const PlanOptions& options, const PlannedProgram& chosen) {
  MF_ASSIGN_OR_RETURN(std::string header, CHeaderOfPlan(options.common.model, chosen));
  return WriteFile(*options.emit_c, header);
}

// The title of a plan's picture: the model (its file name for .tflite paths) and the planner.
// A zoo spec as given, a file by its name.
std::string ModelLabel(const std::string& model) {
  return model.rfind("zoo:", 0) == 0 ? model : std::filesystem::path(model).filename().string();
}

std::string PictureTitle(const PlanOptions& options, const GraphPlan& gp) {
  return ModelLabel(options.common.model) + ", " + options.planner +
         (options.planner == gp.plan.planner ? "" : " (chose " + gp.plan.planner + ")") + " plan";
}

Result<int64_t> BudgetBytes(const std::optional<std::string>& budget) {
  int64_t bytes = 0;
  if (budget && !ParseByteSize(*budget, &bytes))
    return Status::Error("--budget " + *budget + " is not a size; use bytes or K/M/G/T, e.g. 256K");
  return bytes;
}

Status WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out)
    return Status::Error(path +
                         ": cannot write the file (check the directory exists and is writable)");
  return Status::Ok();
}

// `plan --pareto`: the curve of verified plans, each run checked.
int ParetoCommand(const PlanOptions& options) {
  if (options.planner != "best") return Fail("--pareto needs --planner best");
  if (options.budget || options.emit_tflite || options.emit_c)
    return Fail("--pareto draws a curve; --budget, --emit-tflite and --emit-c take one plan");
  Phase load("load " + options.common.model);
  Result<Graph> loaded = LoadModel(options.common.model, options.common.input_layout);
  if (!loaded.ok()) return Fail(loaded.status().message());
  load.Done(std::to_string(loaded->schedule.size()) + " ops");
  const std::vector<Bytes> inputs = DefaultInputs(*loaded);
  const Status runnable = CheckRunnable(*loaded, inputs);
  Phase planning("plan the curve");
  Result<std::vector<BestPlan>> curve = PlanBestCurve(*loaded, options.best, options.pareto_points);
  if (!curve.ok()) return Fail(curve.status().message(), kExitFailed);
  planning.Done(std::to_string(curve->size()) + " plans, verified");
  Json points = Json::array();
  std::vector<CurvePoint> drawn;
  for (const BestPlan& point : *curve) {
    Json row = {{"arena_bytes", point.plan.plan.arena_bytes},
                {"lower_bound_bytes", point.plan.lower_bound},
                {"recompute_fraction", point.recompute_fraction},
                {"overhead_factor", 1 + point.recompute_fraction},
                {"verified", true},
                {"split", point.steps.back().detail}};
    if (runnable.ok()) {
      Phase checked("run the " + HumanBytes(point.plan.plan.arena_bytes) + " plan checked");
      Result<CheckedRun> run =
          RunChecked(*loaded, point.graph, point.plan.liveness, point.plan.plan, inputs);
      if (!run.ok()) return Fail(run.status().message(), kExitFailed);
      if (!run->identical()) {
        return Fail(options.common.model + ": the " + HumanBytes(point.plan.plan.arena_bytes) +
                        " plan's run differs from the unplanned one at " +
                        DescribeDifference(*run->first_difference) + "; the plan is unsafe",
                    kExitFailed);
      }
      row["values_checked"] = run->values_checked;
      row["identical_to_unplanned"] = true;
    }
    drawn.push_back(
        {1 + point.recompute_fraction, point.plan.plan.arena_bytes,
         GroupDigits(point.plan.plan.arena_bytes) + " B: " + point.steps.back().detail});
    points.push_back(std::move(row));
  }
  if (options.svg) {
    Status written =
        WriteFile(*options.svg,
                  CurveSvg(ModelLabel(options.common.model) + ": " + std::to_string(drawn.size()) +
                               " verified plans, arena against extra work" +
                               (options.best.stream_input ? " (input streamed)" : ""),
                           drawn));
    if (!written.ok()) return Fail(written.message());
  }
  if (options.common.json) {
    std::cout << JsonText(Json{{"model", options.common.model},
                               {"stream_input", options.best.stream_input},
                               {"max_recompute", options.best.max_recompute},
                               {"checked", runnable.ok()},
                               {"pareto", points}})
              << "\n";
    return kExitOk;
  }
  std::cout << "overhead  arena B     lower bound B  checked  split\n";
  for (const Json& row : points) {
    char line[64];
    std::snprintf(line, sizeof(line), "%-8.3f  %-10s  %-13s  %-7s  ",
                  row["overhead_factor"].get<double>(),
                  GroupDigits(row["arena_bytes"].get<int64_t>()).c_str(),
                  GroupDigits(row["lower_bound_bytes"].get<int64_t>()).c_str(),
                  row.contains("identical_to_unplanned") ? "yes" : "-");
    std::cout << line << row["split"].get<std::string>() << "\n";
  }
  if (!runnable.ok()) std::cout << "not run: " << runnable.message() << "\n";
  return kExitOk;
}

int PlanCommand(const PlanOptions& options) {
  if (options.pareto) return ParetoCommand(options);
  if (options.common.input_layout != InputLayout::kAsDeclared &&
      (options.emit_tflite || options.emit_c))
    return Fail(
        "--emit-tflite and --emit-c plan the file as it is; --input-layout nhwc changes "
        "its input (use `memfold compile` or `inspect --write-tflite` for the NHWC model)");
  const Result<int64_t> parsed_budget = BudgetBytes(options.budget);
  if (!parsed_budget.ok()) return Fail(parsed_budget.status().message());
  const int64_t budget = *parsed_budget;
  Phase load("load " + options.common.model);
  Result<Graph> loaded = LoadModel(options.common.model, options.common.input_layout);
  if (!loaded.ok()) return Fail(loaded.status().message());
  load.Done(std::to_string(loaded->schedule.size()) + " ops");
  Phase planning("plan " + options.planner);
  Result<PlannedProgram> planned = PlanProgram(std::move(*loaded), {options.planner, options.best});
  if (!planned.ok()) return Fail(planned.status().message(), kExitFailed);
  const Graph& g = planned->graph();
  const GraphPlan& gp = planned->plan();
  planning.Done(HumanBytes(gp.plan.arena_bytes) + ", verified");
  if (options.emit_tflite) {
    Phase phase("write " + *options.emit_tflite);
    Status written = EmitTflite(options, *planned);
    if (!written.ok()) return Fail(written.message());
  }
  if (options.emit_c) {
    Phase phase("write " + *options.emit_c);
    Status written = EmitC(options, *planned);
    if (!written.ok()) return Fail(written.message());
  }
  if (options.svg) {
    Phase phase("write " + *options.svg);
    Status written = WriteFile(*options.svg, ArenaSvg(g, gp, PictureTitle(options, gp)));
    if (!written.ok()) return Fail(written.message());
  }
  if (options.export_problem) {
    Phase phase("write " + *options.export_problem);
    const PlacementProblem problem = ProblemFromRequests(gp.liveness.requests);
    Status written =
        WriteFile(*options.export_problem, WritePlacementCsv(problem, gp.plan.offsets));
    if (!written.ok()) return Fail(written.message());
  }
  const bool fits = !options.budget || gp.plan.arena_bytes <= budget;
  if (options.common.json) {
    Json out = {{"model", options.common.model},
                {"planner", options.planner},
                {"chosen_planner", gp.plan.planner},
                {"arena_bytes", gp.plan.arena_bytes},
                {"lower_bound_bytes", gp.lower_bound},
                {"verified", true},
                {"optimal", gp.optimal},
                {"gap_to_lower_bound", GapToLowerBound(gp.plan.arena_bytes, gp.lower_bound)},
                {"buffers", BuffersJson(g, gp)}};
    if (!planned->steps().empty()) {
      out["steps"] = StepsJson(planned->steps());
      out["rewritten"] = planned->rewritten();
      out["recompute_fraction"] = planned->recompute_fraction();
      out["stream_input"] = options.best.stream_input;
      out["objective"] = memfold::ObjectiveName(options.best.objective);
    }
    if (options.budget) {
      out["budget_bytes"] = budget;
      out["fits"] = fits;
      out["peak_op"] = PeakOpName(g, gp.peak_time);
    }
    std::cout << JsonText(out) << "\n";
  } else {
    PrintPlanTable(g, gp);
    if (!planned->steps().empty()) PrintSteps(planned->steps());
    std::cout << "planner      " << options.planner
              << (options.planner == gp.plan.planner ? "" : " (chose " + gp.plan.planner + ")")
              << "\n"
              << "arena        " << HumanBytes(gp.plan.arena_bytes) << " ("
              << GroupDigits(gp.plan.arena_bytes) << " B)\n"
              << "lower bound  " << HumanBytes(gp.lower_bound) << " ("
              << GroupDigits(gp.lower_bound) << " B)"
              << (MeetsLowerBound(gp.liveness.requests, gp.plan.arena_bytes, gp.lower_bound)
                      ? ": the arena is optimal"
                      : ", the arena " +
                            Fixed(100 * GapToLowerBound(gp.plan.arena_bytes, gp.lower_bound), 2) +
                            " % above it" +
                            (gp.optimal ? ", and proven optimal for this schedule" : ""))
              << "\n"
              << "peak at      " << PeakOpName(g, gp.peak_time) << "\n"
              << "verified     yes (no two live buffers overlap)\n";
    if (options.budget) {
      const int64_t margin = budget - gp.plan.arena_bytes;
      std::cout << "budget       " << HumanBytes(budget) << ": "
                << (fits ? "fits with " + HumanBytes(margin) + " to spare"
                         : "does NOT fit, " + HumanBytes(-margin) + " over")
                << "\n";
    }
  }
  if (!fits) {
    const auto [arena, limit] = DistinctSizes(gp.plan.arena_bytes, budget);
    return Fail(options.common.model + ": the " + arena + " arena does not fit the " + limit +
                    " budget; try --planner best, or a smaller model",
                kExitFailed);
  }
  return kExitOk;
}

int RunCommand(const RunOptions& options) {
  Phase load("load " + options.common.model);
  Result<Graph> loaded = LoadModel(options.common.model, options.common.input_layout);
  if (!loaded.ok()) return Fail(loaded.status().message());
  load.Done(std::to_string(loaded->schedule.size()) + " ops");
  Status fits_memory = CheckRunFitsInMemory(*loaded);  // before anything large is allocated
  if (!fits_memory.ok())
    return Fail(options.common.model + ": " + fits_memory.message(), kExitFailed);
  Result<std::vector<Bytes>> inputs = ModelInputs(*loaded, options.input_file);
  if (!inputs.ok()) return Fail(inputs.status().message());
  Status runnable = CheckRunnable(*loaded, *inputs);
  if (!runnable.ok()) return Fail(options.common.model + ": " + runnable.message());
  Phase planning("plan " + options.planner);
  Result<PlannedProgram> program = PlanProgram(std::move(*loaded), {options.planner, options.best});
  if (!program.ok()) return Fail(program.status().message(), kExitFailed);
  const Graph& g = program->source();
  const GraphPlan* planned = &program->plan();
  planning.Done(HumanBytes(planned->plan.arena_bytes) + ", verified");
  // The planned run executes the (possibly re-ordered and split) graph the plan is for; the
  // reference is the model as loaded, unplanned; every read is compared (exec/checked_run.h).
  Phase checked_run("run in the planned arena and unplanned, every read compared");
  Result<CheckedRun> run = RunChecked(*program, *inputs);
  if (!run.ok()) return Fail(run.status().message(), kExitFailed);
  checked_run.Done(std::to_string(run->values_checked) + " reads compared");
  const bool identical = run->identical();
  const std::vector<Bytes>& shown = identical ? run->planned.outputs : run->unplanned.outputs;
  Json outputs = Json::array();
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const Value& v = g.value(g.outputs[k]);
    const Bytes& bytes = shown[k];
    outputs.push_back({{"name", v.name},
                       {"dtype", DTypeName(v.dtype)},
                       {"shape", v.shape},
                       {"sha256", Sha256Hex(bytes.data(), bytes.size())},
                       {"values", FirstValues(v, bytes, 16)}});
  }
  if (options.common.json) {
    std::cout << JsonText(Json{{"model", options.common.model},
                               {"planner", options.planner},
                               {"arena_bytes", planned->plan.arena_bytes},
                               {"outputs", outputs},
                               {"values_checked", run->values_checked},
                               {"operators_traced", run->operators_traced},
                               {"first_difference", DifferenceJson(run->first_difference)},
                               {"identical_to_unplanned", identical}})
              << "\n";
  } else {
    std::cout << "ran " << options.common.model << " in a " << HumanBytes(planned->plan.arena_bytes)
              << " arena (" << options.planner << " plan, dead memory poisoned)\n";
    for (const Json& o : outputs) {
      std::cout << "  output " << o["name"].get<std::string>() << " "
                << o["dtype"].get<std::string>() << " sha256 " << o["sha256"].get<std::string>()
                << "\n  first values " << o["values"].dump() << "\n";
    }
    std::cout << "checked " << GroupDigits(run->values_checked)
              << " reads against the unplanned run (value hash and byte owner at every read; "
              << run->operators_traced << " overlapping operators traced)\n";
    if (!identical)
      std::cout << "first difference: " << DescribeDifference(*run->first_difference) << "\n";
    std::cout << "identical to the unplanned run: " << (identical ? "yes" : "NO") << "\n";
  }
  if (!identical) {
    return Fail(options.common.model + ": the planned run differs from the unplanned one at " +
                    DescribeDifference(*run->first_difference) + "; the plan is unsafe",
                kExitFailed);
  }
  return kExitOk;
}

}  // namespace memfold::cli
