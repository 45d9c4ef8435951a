// `memfold report MODEL -o report.html`: one self-contained HTML page about a model. Every
// model gets its summary (ops, values, parameters, inputs and outputs, op histogram). An
// inference model then gets every planner's numbers (arena, lower bound, verified, plan time),
// the picture of the best plan's arena and each operator's safe overlap O_s by the analytic,
// algorithmic and trace methods; a training model (IsTrainingModel) gets the none / mirror /
// echo comparison and the live-memory picture of its training step instead. The page is
// gathered here and rendered by io/report.
#include "memfold/io/report.h"

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "memfold/exec/overlap_trace.h"
#include "memfold/io/arena_svg.h"
#include "memfold/io/text.h"
#include "memfold/io/training_svg.h"
#include "memfold/passes/best_plan.h"
#include "memfold/placement/verify_plan.h"
#include "memfold/plan/plan_graph.h"
#include "progress.h"

namespace memfold::cli {
namespace {

using Json = nlohmann::ordered_json;

const std::vector<std::string> kReportPlanners = {"naive", "greedy", "greedy_stable", "diagonal",
                                                  "best"};

std::string TensorShape(const Value& v) {
  return std::string(DTypeName(v.dtype)) + " " + ShapeString(v.shape);
}

ReportSection Summary(const Graph& g) {
  int64_t parameters = 0, weight_bytes = 0, activation_bytes = 0;
  for (const Value& v : g.values()) {
    if (v.is_constant() || v.role == Role::kWeight) {
      parameters += v.elements();
      weight_bytes += v.bytes();
    } else {
      activation_bytes += v.bytes();
    }
  }
  ReportSection s{.id = "summary", .title = "Model"};
  s.paragraphs.push_back(GroupDigits(static_cast<int64_t>(g.schedule.size())) + " operators, " +
                         GroupDigits(g.num_values()) + " values, " + GroupDigits(parameters) +
                         " parameters (" + HumanBytes(weight_bytes) + " of constants), " +
                         HumanBytes(activation_bytes) +
                         " of activations if nothing shared memory.");
  ReportTable io{.caption = "Inputs and outputs", .header = {"", "name", "type"}};
  for (ValueId v : g.inputs) io.rows.push_back({"input", g.value(v).name, TensorShape(g.value(v))});
  for (ValueId v : g.outputs)
    io.rows.push_back({"output", g.value(v).name, TensorShape(g.value(v))});
  std::map<std::string, int> histogram;
  for (NodeId id : g.schedule) ++histogram[g.node(id).op];
  ReportTable ops{.caption = "Operators", .header = {"op", ">count"}};
  for (const auto& [op, count] : histogram) ops.rows.push_back({op, std::to_string(count)});
  s.tables = {io, ops};
  return s;
}

std::string Chose(const PlannedProgram& p) {
  std::string chose = p.plan().plan.planner;
  if (p.reordered()) chose += ", re-ordered";
  if (p.concat()) chose += ", copy-free concatenations";
  if (p.split()) chose += ", split (" + SignedFixed(100 * p.recompute_fraction(), 2) + " % FLOPs)";
  return chose;
}

// Every planner's plan, verified again here; the best plan is kept for the picture.
ReportSection Planners(const Graph& g, std::optional<PlannedProgram>* best) {
  ReportSection s{.id = "planners", .title = "Planners"};
  s.paragraphs.push_back(
      "Each plan is checked by the independent verifier: no two buffers that are live at the same "
      "step share a "
      "byte, except an output and the input that dies at its operator, by at most the proven safe "
      "overlap O_s.");
  ReportTable t{.header = {"planner", "chose", ">arena", ">arena B", ">lower bound B",
                           ">saving vs naive", "verified", ">plan ms"}};
  std::vector<std::string> planners = kReportPlanners;
  if (!g.offline_offsets.empty()) planners.insert(planners.end() - 1, "offline");
  int64_t naive = 0;
  for (const std::string& name : planners) {
    Phase phase("plan " + name);
    const auto start = std::chrono::steady_clock::now();
    Result<PlannedProgram> chosen = PlanProgram(g, {.planner = name});
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!chosen.ok()) {
      t.rows.push_back(
          {name, "", "", "", "", "", "no: " + chosen.status().message(), Fixed(ms, 1)});
      continue;
    }
    const GraphPlan* planned = &chosen->plan();
    const Status verified = VerifyPlan(planned->liveness.requests, planned->plan);
    const int64_t arena = planned->plan.arena_bytes;
    if (name == "naive") naive = arena;
    const double saving =
        naive > 0 ? 100.0 * static_cast<double>(naive - arena) / static_cast<double>(naive) : 0;
    t.rows.push_back({name, Chose(*chosen), HumanBytes(arena), GroupDigits(arena),
                      GroupDigits(planned->lower_bound), Fixed(saving, 1) + " %",
                      verified.ok() ? "yes" : "NO: " + verified.message(), Fixed(ms, 1)});
    phase.Done(HumanBytes(arena));
    if (name == "best") *best = std::move(chosen).value();
  }
  s.tables.push_back(std::move(t));
  return s;
}

ReportSection ArenaPicture(const std::string& model, const Graph& g, const GraphPlan& best) {
  Phase phase("draw the arena");
  ReportSection s{.id = "arena", .title = "Arena of the best plan"};
  s.paragraphs.push_back(
      "x: the schedule (step 0 holds the graph inputs, step i + 1 runs operator i); y: byte offset "
      "in the arena. "
      "Each rectangle is one buffer over its lifetime; hover for its name, size, offset and "
      "lifetime. Hatched: "
      "bytes an output shares with the input that dies at its operator (diagonal memory "
      "optimisation).");
  s.svg = ArenaSvg(g, best, model + ", best plan (" + best.plan.planner + ")");
  return s;
}

std::string OrDash(const std::optional<int64_t>& v) { return v ? GroupDigits(*v) : "-"; }

ReportSection Overlaps(const Graph& g) {
  Phase phase("safe-overlap analysis (analytic, algorithmic, trace)");
  const OverlapReport report = AnalyseOverlaps(g);
  phase.Done();
  ReportSection s{.id = "overlap", .title = "Safe overlap O_s per operator"};
  s.paragraphs.push_back(
      "How many bytes of an operator's output may overlap the start of its input, by three "
      "methods: analytic "
      "(closed form, a lower bound), algorithmic (the kernel's loop nest replayed computing "
      "offsets only) and "
      "trace (the real kernel run with every access recorded). '-': the method has no model for "
      "the operator.");
  s.paragraphs.push_back("Time: analytic " + Fixed(report.analytic_ms, 2) + " ms, algorithmic " +
                         Fixed(report.algorithmic_ms, 2) + " ms, trace " +
                         Fixed(report.trace_ms, 2) + " ms.");
  ReportTable t{.header = {">#", "op", "name", ">output B", ">O_s analytic", ">O_s algorithmic",
                           ">O_s trace"}};
  for (const NodeOverlap& n : report.nodes) {
    const Node& node = g.node(n.node);
    t.rows.push_back({std::to_string(n.position), node.op, node.name, GroupDigits(n.output_bytes),
                      OrDash(n.analytic), OrDash(n.algorithmic), OrDash(n.trace)});
  }
  s.tables.push_back(std::move(t));
  return s;
}

Result<std::vector<ReportSection>> TrainingSections(const std::string& model, const Graph& g) {
  Result<std::vector<PlannedTraining>> every =
      PlanAllStrategies(TrainingSource{g, std::nullopt}, TrainingConfig{}, "mxnet");
  if (!every.ok()) return Status::Error(model + ": " + every.status().message());
  const std::vector<PlannedTraining>& planned = *every;
  ReportSection table{.id = "strategies", .title = "Recomputation strategies"};
  table.paragraphs.push_back(
      "One training step (forward, backward, SGD-with-momentum update) planned under each strategy "
      "with MXNet's "
      "storage planner placed in one arena: none (no recomputation), mirror (Chen et al., as in "
      "MXNet) and echo. "
      "Memory is attributed at the peak step; reduction is against none.");
  const StrategyTable compared = CompareStrategies(planned);
  table.tables.push_back({.header = compared.header, .rows = compared.rows});
  Phase phase("draw the training step");
  ReportSection picture{.id = "training", .title = "Live memory over the training step"};
  picture.paragraphs.push_back(
      "Live bytes at every step of the schedule, stacked by kind, one panel per strategy on one "
      "scale; right: the "
      "peak's bytes by data structure (Echo's Figure 4). Hover for values.");
  picture.svg = StrategiesSvg(model, planned);
  return std::vector<ReportSection>{std::move(table), std::move(picture)};
}

Result<Report> BuildReport(const std::string& model) {
  Phase load("load " + model);
  MF_ASSIGN_OR_RETURN(Graph g, LoadModel(model));
  load.Done(std::to_string(g.schedule.size()) + " ops");
  const std::string name =
      model.rfind("zoo:", 0) == 0 ? model : std::filesystem::path(model).filename().string();
  Report report{.title = "memfold report: " + name, .subtitle = "Model: " + model};
  report.sections.push_back(Summary(g));
  if (IsTrainingModel(g)) {
    MF_ASSIGN_OR_RETURN(std::vector<ReportSection> sections, TrainingSections(name, g));
    for (ReportSection& s : sections) report.sections.push_back(std::move(s));
    return report;
  }
  std::optional<PlannedProgram> best;
  report.sections.push_back(Planners(g, &best));
  if (best) report.sections.push_back(ArenaPicture(name, best->graph(), best->plan()));
  report.sections.push_back(Overlaps(g));
  return report;
}

}  // namespace

int ReportCommand(const ReportOptions& options) {
  Result<Report> report = BuildReport(options.common.model);
  if (!report.ok()) return Fail(report.status().message());
  Phase render("write " + options.output);
  const std::string html = RenderHtml(*report);
  Status written = WriteFile(options.output, html);
  if (!written.ok()) return Fail(written.message());
  render.Done(HumanBytes(static_cast<int64_t>(html.size())));
  Json sections = Json::array();
  std::string titles;
  for (const ReportSection& s : report->sections) {
    sections.push_back(s.id);
    titles += (titles.empty() ? "" : ", ") + s.title;
  }
  if (options.common.json) {
    std::cout << JsonText(Json{{"model", options.common.model},
                               {"output", options.output},
                               {"bytes", html.size()},
                               {"sections", sections}})
              << "\n";
  } else if (GetVerbosity() != Verbosity::kQuiet) {
    std::cout << "wrote " << options.output << " (" << HumanBytes(static_cast<int64_t>(html.size()))
              << "): " << titles << "\n";
  }
  return kExitOk;
}

}  // namespace memfold::cli
