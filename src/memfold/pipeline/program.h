// The one library entry point of inference planning: a model goes in, one verified, immutable
// planned program comes out, and every consumer — the checked run, the code generator, the
// .tflite and C exporters, pictures, reports, the command line and Python — only reads it.
//
// A program holds the model as loaded (the reference every checked run compares against), the
// graph after the planner's rewrites (re-ordered, copy-free concatenations, split, streamed
// inputs), its liveness (with the storage sharing derived once, plan/liveness.h), the verified
// placement and the trace of the planner's decisions (each step of `best` with the arena it
// reached and what it did). Where each value lives follows from liveness and placement
// (plan/planned_layout.h), which the executor and the code generator both derive from them.
//
// The planners a user can name are rows of one table (ProgramPlanners): every placement
// strategy of plan/strategies.h plans the graph as it is; `best` runs the rewriting pipeline of
// passes/best_plan.h. Cost: the chosen planner's.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/exec/checked_run.h"
#include "memfold/ir/graph.h"
#include "memfold/passes/best_plan.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {

struct PlanRequest {
  std::string planner = "greedy";  // a row of ProgramPlanners()
  BestOptions best;                // `best`'s splitting budget; stream_input for every planner
};

class PlannedProgram;

// One way to plan a program, by name.
struct ProgramPlanner {
  std::string name;
  bool rewrites = false;  // may change the graph (re-order, views, split), not only place it
};
std::vector<ProgramPlanner> ProgramPlanners();

// Plans `source` as `request` asks. Errors: an unknown planner (the message lists every name),
// a graph that fails verification, an unverifiable plan.
Result<PlannedProgram> PlanProgram(Graph source, const PlanRequest& request);

class PlannedProgram {
 public:
  const Graph& source() const { return source_; }  // as loaded: the checked runs' reference
  const Graph& graph() const { return graph_; }    // what runs in the arena
  const GraphPlan& plan() const { return plan_; }  // liveness and the verified placement
  const Liveness& liveness() const { return plan_.liveness; }
  int64_t arena_bytes() const { return plan_.plan.arena_bytes; }
  const std::string& planner() const { return planner_; }        // the row asked for
  const std::vector<BestStep>& steps() const { return steps_; }  // the planner's decisions
  // Whether graph() differs from source() beyond placement, and how.
  bool rewritten() const { return reordered_ || concat_ || split_ || streamed_; }
  bool reordered() const { return reordered_; }
  bool concat() const { return concat_; }
  bool split() const { return split_; }
  double recompute_fraction() const { return recompute_fraction_; }  // splitting's extra FLOPs

 private:
  friend Result<PlannedProgram> PlanProgram(Graph source, const PlanRequest& request);
  PlannedProgram() = default;

  Graph source_;
  Graph graph_;
  GraphPlan plan_;
  std::string planner_;
  std::vector<BestStep> steps_;
  bool reordered_ = false;
  bool streamed_ = false;  // graph inputs streamed (passes/stream_inputs.h)
  bool concat_ = false;
  bool split_ = false;
  double recompute_fraction_ = 0;
};

// The program run in its arena (dead memory poisoned) and its source unplanned, compared at
// every read (exec/checked_run.h). A difference is the result, not an error.
Result<CheckedRun> RunChecked(const PlannedProgram& program, const std::vector<Bytes>& inputs);

// The model's inputs: CONTRACT.md's default, or raw little-endian bytes from `file` (inputs in
// order); an error says how many bytes the model needs.
Result<std::vector<Bytes>> ModelInputs(const Graph& graph, const std::optional<std::string>& file);

}  // namespace memfold
