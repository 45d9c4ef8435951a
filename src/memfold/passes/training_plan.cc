#include "memfold/passes/training_plan.h"

#include <chrono>

#include "memfold/ops/registry.h"
#include "memfold/passes/binarize.h"
#include "memfold/passes/echo.h"
#include "memfold/passes/recompute.h"
#include "memfold/placement/lower_bound.h"

namespace memfold {
namespace {

// Plans with the strategy named `planner` (every recomputation strategy uses the same one),
// settled by the placement portfolio when the strategy is one of memfold's own (ProvePlan).
Result<PlannedTraining> Finish(PlannedTraining p, const std::string& planner) {
  MF_ASSIGN_OR_RETURN(p.plan, PlanGraph(p.graph, planner, {.prove_seconds = kProveSeconds}));
  p.profile = ProfileMemory(p.graph, p.training.forward_nodes, p.plan);
  return p;
}

// `p` without its graph (moved out and back), for the parts a rollback does not restore.
PlannedTraining WithoutGraph(PlannedTraining* p) {
  Graph graph = std::move(p->graph);
  PlannedTraining shell = *p;
  p->graph = std::move(graph);
  return shell;
}

constexpr RecomputationStrategy kRecomputations[] = {
    {"none", Recomputation::kNone},      // every feature map the backward pass reads is kept
    {"mirror", Recomputation::kMirror},  // Chen et al.: every cheap layer's output recomputed
    {"echo", Recomputation::kEcho},      // the footprint of the whole graph decides; never worse
};

double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

std::span<const RecomputationStrategy> RecomputationStrategies() { return kRecomputations; }

Result<const RecomputationStrategy*> FindRecomputation(std::string_view name) {
  std::string names;
  for (const RecomputationStrategy& s : kRecomputations) {
    if (s.name == name) return &s;
    names += (names.empty() ? "" : ", ") + std::string(s.name);
  }
  return Status::Error("strategy must be one of " + names + ", not '" + std::string(name) + "'");
}

std::string_view NameOf(Recomputation kind) {
  for (const RecomputationStrategy& s : kRecomputations) {
    if (s.kind == kind) return s.name;
  }
  return "";
}

Result<PlannedTraining> PlanTraining(Graph forward, const std::string& strategy,
                                     const TrainingConfig& config, const std::string& planner) {
  MF_RETURN_IF_ERROR(FindRecomputation(strategy).status());
  MF_RETURN_IF_ERROR(FindStrategy(planner).status());
  const auto start = std::chrono::steady_clock::now();
  MF_ASSIGN_OR_RETURN(TrainingGraph training, BuildTrainingGraph(&forward, config));
  MF_ASSIGN_OR_RETURN(PlannedTraining p,
                      PlanTrainingStep(std::move(forward), training, strategy, planner));
  p.plan_ms = MillisecondsSince(start);
  return p;
}

Result<PlannedTraining> PlanTrainingStep(Graph graph, const TrainingGraph& training,
                                         const std::string& strategy, const std::string& planner) {
  MF_ASSIGN_OR_RETURN(const RecomputationStrategy* row, FindRecomputation(strategy));
  MF_RETURN_IF_ERROR(FindStrategy(planner).status());
  const auto start = std::chrono::steady_clock::now();
  PlannedTraining base;
  base.graph = std::move(graph);
  base.recomputation = row->kind;
  base.training = training;
  base.recomputed.assign(static_cast<size_t>(base.graph.num_nodes()), 0);
  for (size_t pos = 0; pos < base.training.forward_nodes; ++pos) {
    base.forward_flops += NodeCost(base.graph, base.graph.node(base.graph.schedule[pos])).flops;
  }
  auto with_recomputation = [](PlannedTraining p,
                               const std::vector<char>& choice) -> Result<PlannedTraining> {
    p.recomputed = choice;
    MF_ASSIGN_OR_RETURN(RecomputeResult r, ApplyRecomputation(&p.graph, p.training, choice));
    p.recomputed_nodes = r.recomputed_nodes;
    p.recompute_flops = r.recompute_flops;
    return p;
  };
  PlannedTraining chosen;
  if (row->kind == Recomputation::kNone) {
    MF_ASSIGN_OR_RETURN(chosen, Finish(std::move(base), planner));
    chosen.kept = Recomputation::kNone;
  } else if (row->kind == Recomputation::kMirror) {
    const std::vector<char> choice = MirrorChoice(base.graph, base.training);
    MF_ASSIGN_OR_RETURN(PlannedTraining mirror, with_recomputation(std::move(base), choice));
    MF_ASSIGN_OR_RETURN(chosen, Finish(std::move(mirror), planner));
    chosen.kept = Recomputation::kMirror;
  } else {
    // Echo's choice with 1-bit masks, checked against the baseline (the paper's guarantee) and
    // against Mirror's blanket choice: the smallest plan is kept. A rival is planned only when
    // its footprint floor (from the baseline's liveness) says it could win, so the result is
    // the same as planning all three. Echo rewrites the baseline in place; the baseline is
    // rolled back from a copy only when a rival needs it, which large models never do.
    const Liveness base_live = ComputeLiveness(base.graph);
    const int64_t persistent = PersistentBytes(base.graph);
    const int64_t baseline_floor = persistent + LowerBoundForAnyOverlap(base_live.requests);
    const std::vector<char> mirror_choice = MirrorChoice(base.graph, base.training);
    const int64_t mirror_floor =
        persistent + RecomputedArenaFloor(base.graph, base.training, base_live, mirror_choice);
    const std::vector<char> echo_choice = EchoChoice(base.graph, base.training);
    const GraphCheckpoint before_echo(base.graph);
    PlannedTraining shell = WithoutGraph(&base);
    MF_ASSIGN_OR_RETURN(PlannedTraining echo, with_recomputation(std::move(base), echo_choice));
    BinarizeMasks(&echo.graph, &echo.training);
    MF_ASSIGN_OR_RETURN(chosen, Finish(std::move(echo), planner));
    chosen.kept = Recomputation::kEcho;
    const int64_t echo_own = chosen.profile.breakdown.total();
    const bool baseline_may_win = baseline_floor <= echo_own;
    if (baseline_may_win || mirror_floor < echo_own) {
      base = std::move(shell);
      base.graph = chosen.graph.CopyWithRoom(0, 0);
      base.graph.Rollback(before_echo);
    }
    if (mirror_floor < echo_own) {
      PlannedTraining input = baseline_may_win ? PlannedTraining(base) : std::move(base);
      MF_ASSIGN_OR_RETURN(PlannedTraining mirror,
                          with_recomputation(std::move(input), mirror_choice));
      MF_ASSIGN_OR_RETURN(mirror, Finish(std::move(mirror), planner));
      if (mirror.profile.breakdown.total() < echo_own) {
        chosen = std::move(mirror);
        chosen.kept = Recomputation::kMirror;
      }
    }
    if (baseline_may_win) {
      MF_ASSIGN_OR_RETURN(PlannedTraining baseline, Finish(std::move(base), planner));
      if (chosen.profile.breakdown.total() >= baseline.profile.breakdown.total()) {
        chosen = std::move(baseline);
        chosen.kept = Recomputation::kNone;
        chosen.fell_back = true;
      }
    }
    chosen.recomputation = row->kind;
    chosen.echo_own_bytes = echo_own;
  }
  chosen.plan_ms = MillisecondsSince(start);
  return chosen;
}

}  // namespace memfold
