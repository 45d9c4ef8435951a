#include "fuzz/fuzz_entry.h"

#include <string>
#include <vector>

#include "fuzz/command_outputs.h"
#include "memfold/exec/checked_run.h"
#include "memfold/exec/executor.h"
#include "memfold/ops/registry.h"
#include "memfold/passes/best_plan.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/placement/verify_plan.h"
#include "memfold/plan/plan_graph.h"

namespace memfold::fuzz {
namespace {

Status Bug(const std::string& what) { return Status::Error("memfold bug: " + what); }

// CONTRACT.md: a rejection is one line naming the file and what is wrong.
Status CheckRejectionMessage(const Status& rejection) {
  const std::string& message = rejection.message();
  const std::string prefix = std::string(kFuzzLabel) + ": ";
  if (message.rfind(prefix, 0) != 0)
    return Bug("a rejection does not name the file: '" + message + "'");
  if (message.size() == prefix.size()) return Bug("a rejection says nothing after the file name");
  if (message.find('\n') != std::string::npos)
    return Bug("a rejection spans several lines: '" + message + "'");
  return Status::Ok();
}

Result<GraphPlan> PlanAndVerify(const Graph& g, std::string_view planner, OverlapSource source) {
  Result<GraphPlan> gp = PlanGraph(g, planner, {.overlaps = source});
  if (!gp.ok())
    return Bug("planner '" + std::string(planner) +
               "' failed on a loaded model: " + gp.status().message());
  Status verified = VerifyPlan(gp->liveness.requests, gp->plan);
  if (!verified.ok())
    return Bug("the " + std::string(planner) + " plan fails VerifyPlan: " + verified.message());
  if (gp->plan.arena_bytes < gp->lower_bound) {
    return Bug("the " + std::string(planner) + " arena (" + std::to_string(gp->plan.arena_bytes) +
               " B) is below the lower bound (" + std::to_string(gp->lower_bound) + " B)");
  }
  return gp;
}

// The offline plan may be the file's fault (unsafe offsets); the message must then say so.
Status CheckOfflinePlan(const Graph& g, OverlapSource source) {
  if (g.offline_offsets.empty()) return Status::Ok();
  Result<GraphPlan> gp = PlanGraph(g, "offline", {.overlaps = source});
  if (!gp.ok()) {
    if (gp.status().message().rfind("the model's offline plan is unsafe", 0) == 0)
      return Status::Ok();
    return Bug("offline planning failed: " + gp.status().message());
  }
  Status verified = VerifyPlan(gp->liveness.requests, gp->plan);
  if (!verified.ok()) return Bug("the offline plan fails VerifyPlan: " + verified.message());
  return Status::Ok();
}

// Bytes an unplanned run allocates at most (every non-constant value, every arena buffer) and
// the FLOPs it computes.
bool SmallEnoughToRun(const Graph& g, const Liveness& live) {
  int64_t bytes = 0;
  for (const Value& v : g.values()) bytes += v.is_constant() ? 0 : v.bytes();
  for (const BufferRequest& r : live.requests) bytes += r.bytes;
  double flops = 0;
  for (NodeId n : g.schedule) flops += NodeCost(g, g.node(n)).flops;
  return bytes <= kMaxRunBytes && flops <= kMaxRunFlops;
}

// A plan and the graph it is for: the model as loaded, or with its concatenations as views.
struct PlannedGraph {
  const Graph* graph;
  const GraphPlan* plan;
};

Status RunAndCompare(const Graph& g, const std::vector<PlannedGraph>& plans) {
  const std::vector<Bytes> inputs = DefaultInputs(g);
  for (const auto& [graph, gp] : plans) {
    const std::string what = gp->plan.planner + (graph == &g ? "" : " (concatenation views)");
    Result<CheckedRun> run = RunChecked(g, *graph, gp->liveness, gp->plan, inputs);
    if (!run.ok())
      return Bug("a runnable model fails to run checked in the " + what +
                 " arena: " + run.status().message());
    if (!run->identical()) {
      return Bug("the " + what + " plan differs from the unplanned run: " +
                 DescribeDifference(*run->first_difference));
    }
  }
  return Status::Ok();
}

}  // namespace

std::string_view StageName(Stage stage) {
  switch (stage) {
    case Stage::kRejected:
      return "rejected";
    case Stage::kPlanned:
      return "planned";
    case Stage::kExecuted:
      return "executed";
  }
  return "?";
}

Result<Stage> RunTfliteInput(std::span<const uint8_t> bytes) {
  const auto* begin = reinterpret_cast<const std::byte*>(bytes.data());
  Result<Graph> loaded = LoadTflite(Bytes(begin, begin + bytes.size()), kFuzzLabel);
  if (!loaded.ok()) {
    MF_RETURN_IF_ERROR(CheckRejectionMessage(loaded.status()));
    MF_RETURN_IF_ERROR(CheckCommandOutputs(bytes, false));
    return Stage::kRejected;
  }
  const Graph& g = *loaded;
  MF_ASSIGN_OR_RETURN(GraphPlan greedy, PlanAndVerify(g, "greedy", OverlapSource::kAlgorithmic));
  const bool small = SmallEnoughToRun(g, greedy.liveness);
  const OverlapSource source = small ? OverlapSource::kAlgorithmic : OverlapSource::kAnalytic;
  MF_ASSIGN_OR_RETURN(GraphPlan diagonal, PlanAndVerify(g, "diagonal", source));
  if (diagonal.plan.arena_bytes > greedy.plan.arena_bytes)
    return Bug("the diagonal arena is larger than greedy's");
  MF_RETURN_IF_ERROR(CheckOfflinePlan(g, source));
  GraphPlan searched = diagonal;
  if (small) {  // the placement-order search of the commands (its replays are bounded too)
    MF_RETURN_IF_ERROR(RefinePlan(g, &searched));
    if (searched.plan.arena_bytes > diagonal.plan.arena_bytes)
      return Bug("the placement-order search made the diagonal arena larger");
  }
  std::vector<PlannedGraph> plans = {{&g, &greedy}, {&g, &diagonal}, {&g, &searched}};
  Graph viewed = g;
  GraphPlan viewed_greedy, viewed_diagonal;
  if (MarkConcatViews(&viewed) > 0) {
    MF_ASSIGN_OR_RETURN(viewed_greedy,
                        PlanAndVerify(viewed, "greedy", OverlapSource::kAlgorithmic));
    MF_ASSIGN_OR_RETURN(viewed_diagonal, PlanAndVerify(viewed, "diagonal", source));
    plans.push_back({&viewed, &viewed_greedy});
    plans.push_back({&viewed, &viewed_diagonal});
  }
  const bool executable = small && CheckRunnable(g, DefaultInputs(g)).ok();
  if (executable) MF_RETURN_IF_ERROR(RunAndCompare(g, plans));
  MF_RETURN_IF_ERROR(CheckCommandOutputs(bytes, executable));
  return executable ? Stage::kExecuted : Stage::kPlanned;
}

}  // namespace memfold::fuzz
