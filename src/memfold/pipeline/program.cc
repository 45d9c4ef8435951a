#include "memfold/pipeline/program.h"

#include <algorithm>

#include "memfold/io/file.h"
#include "memfold/passes/stream_inputs.h"
#include "memfold/plan/strategies.h"

namespace memfold {
namespace {

constexpr std::string_view kBest = "best";

}  // namespace

std::vector<ProgramPlanner> ProgramPlanners() {
  std::vector<ProgramPlanner> rows;
  for (const Strategy& s : Strategies()) rows.push_back({std::string(s.name), false});
  rows.push_back({std::string(kBest), true});  // passes/best_plan.h
  return rows;
}

Result<PlannedProgram> PlanProgram(Graph source, const PlanRequest& request) {
  const std::vector<ProgramPlanner> rows = ProgramPlanners();
  const auto row = std::find_if(rows.begin(), rows.end(),
                                [&](const ProgramPlanner& r) { return r.name == request.planner; });
  if (row == rows.end()) {
    std::string names;
    for (const ProgramPlanner& r : rows) names += (names.empty() ? "" : ", ") + r.name;
    return Status::Error("unknown planner '" + request.planner + "'; choose one of " + names);
  }
  PlannedProgram program;
  program.planner_ = request.planner;
  program.streamed_ = request.best.stream_input;
  if (row->rewrites) {
    MF_ASSIGN_OR_RETURN(BestPlan best, PlanBest(source, request.best));
    program.graph_ = std::move(best.graph);
    program.plan_ = std::move(best.plan);
    program.steps_ = std::move(best.steps);
    program.reordered_ = best.reordered;
    program.concat_ = best.concat;
    program.split_ = best.split;
    program.recompute_fraction_ = best.recompute_fraction;
  } else {
    program.graph_ = source;
    if (request.best.stream_input) StreamInputs(&program.graph_);
    MF_ASSIGN_OR_RETURN(program.plan_, PlanGraph(program.graph_, row->name,
                                                 {.refine = true, .prove_seconds = kProveSeconds}));
  }
  program.source_ = std::move(source);
  return program;
}

Result<CheckedRun> RunChecked(const PlannedProgram& program, const std::vector<Bytes>& inputs) {
  return RunChecked(program.source(), program.graph(), program.liveness(), program.plan().plan,
                    inputs);
}

Result<std::vector<Bytes>> ModelInputs(const Graph& graph, const std::optional<std::string>& file) {
  if (!file) return DefaultInputs(graph);
  MF_ASSIGN_OR_RETURN(const std::string data, ReadWholeFile(*file, "the input file"));
  int64_t needed = 0;
  for (ValueId v : graph.inputs) needed += graph.value(v).bytes();
  if (static_cast<int64_t>(data.size()) != needed) {
    return Status::Error(*file + ": holds " + std::to_string(data.size()) +
                         " bytes; the model's inputs need " + std::to_string(needed) +
                         " (raw little-endian, inputs in order)");
  }
  std::vector<Bytes> inputs;
  size_t at = 0;
  for (ValueId v : graph.inputs) {
    const auto size = static_cast<size_t>(graph.value(v).bytes());
    const auto* begin = reinterpret_cast<const std::byte*>(data.data()) + at;
    inputs.emplace_back(begin, begin + size);
    at += size;
  }
  return inputs;
}

}  // namespace memfold
