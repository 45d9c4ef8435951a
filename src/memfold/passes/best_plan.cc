#include "memfold/passes/best_plan.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <sstream>
#include <tuple>

#include "memfold/ops/registry.h"
#include "memfold/passes/fold_pad.h"
#include "memfold/passes/schedule.h"
#include "memfold/passes/split_curve.h"
#include "memfold/passes/split_search.h"
#include "memfold/passes/stream_inputs.h"

namespace memfold {
namespace {

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

std::string SplitDetail(const SplitResult& split) {
  if (split.stages.empty()) return "no split helps within the budget";
  std::ostringstream out;
  for (const SplitStage& stage : split.stages) {
    out << (out.tellp() > 0 ? "; " : "") << stage.ops.front();
    if (stage.ops.size() > 1) out << ".." << stage.ops.back();
    if (stage.channels)
      out << " in " << stage.channels->groups << " channel groups";
    else if (stage.split.cols == 1)
      out << " in " << stage.split.rows << " bands";
    else
      out << " in " << stage.split.rows << "x" << stage.split.cols << " tiles";
    if (stage.split.cache_halos)
      out << (stage.split.strips_in_place ? " (halo rows cached, strips in place)"
                                          : " (halo rows cached)");
  }
  out.precision(2);
  out << std::fixed << std::showpos << " (" << 100 * split.recompute_fraction() << std::noshowpos
      << " % FLOPs)";
  return out.str();
}

// What liveness made of the views: concats that vanished, inputs written in place.
std::string ConcatDetail(const Graph& graph, const Liveness& live, int concats) {
  int copy_free = 0, in_place = 0;
  for (NodeId id : graph.schedule) {
    const Node& node = graph.node(id);
    if (RulesOf(node).view != ViewRule::kConcatRows) continue;
    copy_free += live.copy_free[static_cast<size_t>(id)];
    const int32_t out = live.buffer_of[static_cast<size_t>(node.outputs[0])];
    for (ValueId in : node.inputs) {
      in_place +=
          out != kNoBuffer && in != kNoValue && live.buffer_of[static_cast<size_t>(in)] == out;
    }
  }
  return std::to_string(copy_free) + " of " + std::to_string(concats) +
         " concatenations copy-free, " + std::to_string(in_place) + " inputs written in place";
}

// A graph the pipeline may end with, and its verified plan.
struct Candidate {
  Graph graph;
  GraphPlan plan;
  bool concat = false;  // concatenations are views
  bool split = false;
  double recompute_fraction = 0;
  std::string split_detail;
  size_t source = 0;       // split: the candidate it splits
  bool by_rounds = false;  // split by the rounds' search (SplitForMemory)
};

// Smallest arena first; on ties the least extra work, then the fewest operators (kernel calls).
auto Rank(const Candidate& c) {
  return std::tuple(c.plan.plan.arena_bytes, c.recompute_fraction, c.graph.schedule.size());
}

// The first candidate of the least Rank (on full ties the earliest: least rewritten).
size_t Smallest(const std::vector<Candidate>& candidates) {
  size_t best = 0;
  for (size_t k = 1; k < candidates.size(); ++k) {
    if (Rank(candidates[k]) < Rank(candidates[best])) best = k;
  }
  return best;
}

// The candidate the objective prefers (BestOptions::objective).
size_t Chosen(const std::vector<Candidate>& candidates, Objective objective) {
  const size_t smallest = Smallest(candidates);
  if (objective == Objective::kMemory) return smallest;
  const double limit = objective == Objective::kBalanced
                           ? static_cast<double>(candidates[smallest].plan.plan.arena_bytes) *
                                 (1.0 + kBalancedArenaSlack)
                           : std::numeric_limits<double>::infinity();
  size_t best = smallest;
  for (size_t k = 0; k < candidates.size(); ++k) {
    const Candidate& c = candidates[k];
    if (static_cast<double>(c.plan.plan.arena_bytes) > limit) continue;
    const Candidate& b = candidates[best];
    if (c.recompute_fraction < b.recompute_fraction ||
        (c.recompute_fraction == b.recompute_fraction &&
         c.plan.plan.arena_bytes < b.plan.plan.arena_bytes))
      best = k;
  }
  return best;
}

// How far above the smallest plan the rounds' best may be for them to search smaller budgets.
constexpr double kRoundsReach = 0.02;

// The smallest candidate other than `chosen` (Smallest's order), if there is one.
std::optional<size_t> RunnerUp(const std::vector<Candidate>& candidates, size_t chosen) {
  std::optional<size_t> second;
  for (size_t k = 0; k < candidates.size(); ++k) {
    if (k != chosen && (!second || Rank(candidates[k]) < Rank(candidates[*second]))) second = k;
  }
  return second;
}

// The split budgets the balanced objective also searches, as shares of the given one.
constexpr double kBalancedBudgetShares[] = {0.5, 0.2};

}  // namespace

const char* ObjectiveName(Objective objective) {
  switch (objective) {
    case Objective::kMemory:
      return "memory";
    case Objective::kBalanced:
      return "balanced";
    case Objective::kSpeed:
      return "speed";
  }
  return "memory";
}

Result<Objective> ParseObjective(const std::string& name) {
  for (Objective o : {Objective::kMemory, Objective::kBalanced, Objective::kSpeed}) {
    if (name == ObjectiveName(o)) return o;
  }
  return Status::Error("unknown objective '" + name + "'; use memory, balanced or speed");
}

int MarkConcatViews(Graph* graph) {
  int concats = 0;
  for (NodeId id = 0; id < graph->num_nodes(); ++id) {
    Node& node = graph->node(id);
    if (RulesOf(node).view != ViewRule::kConcatRows) continue;
    node.attrs.Set("view", int64_t{1});
    ++concats;
  }
  return concats;
}

namespace {

// Every plan the passes make of `file_graph`, and the steps before splitting. `curve_spread`
// points of the segment search's curve are built besides its lowest ones, and the rounds'
// search also runs at kCurveBudgets within the budget.
struct Made {
  std::vector<BestStep> steps;  // greedy, diagonal, reorder, concat
  std::vector<Candidate> candidates;
  bool reordered = false;
  double split_ms = 0;
};

// Budgets of the rounds' search along a curve, and the most it is given, as fractions of the
// model's FLOPs.
constexpr double kCurveBudgets[] = {0.02};
constexpr double kRoundsBudget = 0.10;

Result<Made> MakeCandidates(const Graph& file_graph, const BestOptions& options,
                            int32_t curve_spread) {
  Made made;
  auto start = std::chrono::steady_clock::now();
  MF_ASSIGN_OR_RETURN(GraphPlan greedy, PlanGraph(file_graph, "greedy"));
  made.steps.push_back(
      {"greedy", greedy.plan.arena_bytes, MsSince(start), "TFLM's greedy planner"});
  Graph rewritten = file_graph;
  const int folded = FoldPads(&rewritten);
  if (options.stream_input) StreamInputs(&rewritten);
  const Graph& graph = rewritten;

  // Every plan below is refined (PlanGraph's `refine`, RefinePlan), so steps compare the
  // plans the command ends with.
  start = std::chrono::steady_clock::now();
  MF_ASSIGN_OR_RETURN(GraphPlan plain, PlanGraph(graph, "smallest", {.refine = true}));
  made.steps.push_back(
      {"diagonal", plain.plan.arena_bytes, MsSince(start),
       (folded > 0 ? std::to_string(folded) + " pads folded into the convolutions after them; "
                   : std::string()) +
           "the smallest of greedy, greedy_stable, diagonal, the file's offline plan and a "
           "search over placement orders: " +
           plain.plan.planner});

  start = std::chrono::steady_clock::now();
  MF_ASSIGN_OR_RETURN(ScheduledPlan ordered, PlanWithBestSchedule(graph, {}, "smallest"));
  if (ordered.reordered) MF_RETURN_IF_ERROR(RefinePlan(ordered.graph, &ordered.plan));
  if (!ordered.reordered || ordered.plan.plan.arena_bytes >= plain.plan.arena_bytes) {
    ordered.graph = graph;  // refined, the file's order is as good
    ordered.plan = plain;
    ordered.reordered = false;
  }
  made.reordered = ordered.reordered;
  made.steps.push_back({"reorder", ordered.plan.plan.arena_bytes, MsSince(start),
                        std::string(ScheduleSearchKindName(ordered.search.kind)) + " search, " +
                            (ordered.reordered ? "order changed" : "the file's order kept")});

  // Concatenation views and splitting interact (views free memory that splitting then finds,
  // or cost the diagonal overlaps of their producers), so both graphs, with and without
  // views, are split, and the smallest of the four plans is kept.
  start = std::chrono::steady_clock::now();
  std::vector<Candidate>& candidates = made.candidates;
  candidates.reserve(4);
  candidates.push_back({ordered.graph, std::move(ordered.plan)});
  Graph viewed = ordered.graph;
  std::string concat_detail = "no concatenations";
  if (const int concats = MarkConcatViews(&viewed); concats > 0) {
    MF_ASSIGN_OR_RETURN(GraphPlan plan, PlanGraph(viewed, "smallest", {.refine = true}));
    concat_detail = ConcatDetail(viewed, plan.liveness, concats);
    candidates.push_back({std::move(viewed), std::move(plan), true});
    if (!candidates[Smallest(candidates)].concat) concat_detail += ": no smaller before splitting";
  }
  made.steps.push_back({"concat", candidates[Smallest(candidates)].plan.plan.arena_bytes,
                        MsSince(start), concat_detail});

  start = std::chrono::steady_clock::now();
  SplitOptions split_options;
  split_options.planner = "smallest";
  // The rounds' search runs within at most kRoundsBudget: above it the segment search below
  // finds the smaller plans, and the rounds would spend seconds each.
  const double rounds_budget = std::min(options.max_recompute, kRoundsBudget);
  // Above it the rounds only seed the curve: the quicker early copies will do.
  split_options.caches_at_tile_end = options.max_recompute <= kRoundsBudget;
  std::vector<double> budgets = {rounds_budget};
  if (options.objective == Objective::kBalanced) {
    for (double share : kBalancedBudgetShares) budgets.push_back(rounds_budget * share);
  }
  if (curve_spread > 0) {
    for (double budget : kCurveBudgets) {
      if (budget < rounds_budget) budgets.push_back(budget);
    }
  }
  // Adds a split of candidate `k` (its plan refined with "smallest").
  auto add_split = [&](size_t k, SplitResult split, bool by_rounds) {
    GraphPlan plan = *split.plan;
    candidates.push_back({std::move(split.graph), std::move(plan), candidates[k].concat, true,
                          split.recompute_fraction(), SplitDetail(split), k, by_rounds});
  };
  // Splits candidate `k` within `budget` by rounds around the peak; false when no split helps.
  auto split_candidate = [&](size_t k, double budget) -> Result<bool> {
    split_options.max_recompute = budget;
    MF_ASSIGN_OR_RETURN(SplitResult split, SplitForMemory(candidates[k].graph, split_options));
    if (split.stages.empty()) return false;
    add_split(k, std::move(split), true);
    return true;
  };
  const size_t unsplit = candidates.size();
  for (size_t k = 0; k < unsplit; ++k) {
    for (double budget : budgets) MF_RETURN_IF_ERROR(split_candidate(k, budget).status());
  }
  // Deep fusion by segments (passes/split_curve.h): the lowest points of its curve, and for
  // balanced or a curve a spread of it too.
  split_options.max_recompute = options.max_recompute;
  split_options.max_steps = options.max_steps;
  const int32_t spread = std::max(curve_spread, options.objective == Objective::kBalanced ? 4 : 0);
  for (size_t k = 0; k < unsplit; ++k) {
    MF_ASSIGN_OR_RETURN(
        std::vector<SplitResult> curve,
        SplitSegmentsCurve(candidates[k].graph, split_options, {.spread = spread, .smallest = 4}));
    for (SplitResult& split : curve) add_split(k, std::move(split), false);
  }
  // memory: the smallest arena may be reached with less extra work, or a smaller one found,
  // within a smaller budget (the rounds' search spends what it is given, and is not monotonic in
  // it): when the smallest plan adds work within the rounds' budget and the rounds came within
  // kRoundsReach of it, they search the balanced budgets too (a plan of the segment search far
  // below the rounds' is out of their reach).
  const size_t smallest = Smallest(candidates);
  int64_t rounds_best = std::numeric_limits<int64_t>::max();
  for (const Candidate& c : candidates) {
    if (c.by_rounds) rounds_best = std::min(rounds_best, c.plan.plan.arena_bytes);
  }
  const bool rounds_near =
      static_cast<double>(rounds_best) <=
      static_cast<double>(candidates[smallest].plan.plan.arena_bytes) * (1 + kRoundsReach);
  if (curve_spread == 0 && options.objective == Objective::kMemory && rounds_near &&
      candidates[smallest].split && candidates[smallest].recompute_fraction > 0 &&
      candidates[smallest].recompute_fraction <= rounds_budget * (1 + 1e-9)) {
    const size_t source = candidates[smallest].source;
    for (double share : kBalancedBudgetShares)
      MF_RETURN_IF_ERROR(split_candidate(source, rounds_budget * share).status());
  }
  made.split_ms = MsSince(start);
  return made;
}

// The plan of candidate `k`, with the steps that led to it.
BestPlan Finish(Made& made, size_t k) {
  Candidate& chosen = made.candidates[k];
  BestPlan best;
  best.steps = made.steps;
  best.reordered = made.reordered;
  best.graph = chosen.graph;
  best.plan = chosen.plan;
  best.concat = chosen.concat;
  best.split = chosen.split;
  best.recompute_fraction = chosen.recompute_fraction;
  best.steps.push_back({"split", best.plan.plan.arena_bytes, made.split_ms,
                        (chosen.split ? chosen.split_detail : "no split helps within the budget") +
                            (chosen.concat ? ", with the concatenation views" : "")});
  return best;
}

// The place step: the chosen plan settled by ProvePlan.
Status Settle(BestPlan* best) {
  const auto start = std::chrono::steady_clock::now();
  const int64_t before = best->plan.plan.arena_bytes;
  MF_RETURN_IF_ERROR(ProvePlan(&best->plan, kProveSeconds));
  const int64_t saved = before - best->plan.plan.arena_bytes;
  std::string detail =
      saved > 0 ? std::to_string(saved) + " B less by the exact solver" : "no smaller placement";
  if (best->plan.optimal) detail += ", optimal for this schedule";
  best->steps.push_back({"place", best->plan.plan.arena_bytes, MsSince(start), detail});
  return Status::Ok();
}

}  // namespace

Result<BestPlan> PlanBest(const Graph& file_graph, const BestOptions& options) {
  MF_ASSIGN_OR_RETURN(Made made, MakeCandidates(file_graph, options, 0));
  if (options.max_steps > 0) {
    std::erase_if(made.candidates, [&](const Candidate& c) {
      return c.split && static_cast<int64_t>(c.graph.schedule.size()) > options.max_steps;
    });
  }
  const size_t chosen = Chosen(made.candidates, options.objective);
  BestPlan best = Finish(made, chosen);
  MF_RETURN_IF_ERROR(Settle(&best));
  if (options.objective != Objective::kMemory) return best;
  // The exact solver settles placements unevenly: the runner-up, settled, may come out smaller.
  if (const std::optional<size_t> second = RunnerUp(made.candidates, chosen)) {
    BestPlan other = Finish(made, *second);
    MF_RETURN_IF_ERROR(Settle(&other));
    if (other.plan.plan.arena_bytes < best.plan.plan.arena_bytes) return other;
  }
  return best;
}

Result<std::vector<BestPlan>> PlanBestCurve(const Graph& file_graph, const BestOptions& options,
                                            int32_t spread) {
  MF_ASSIGN_OR_RETURN(Made made, MakeCandidates(file_graph, options, std::max(spread, 1)));
  std::vector<size_t> order(made.candidates.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Candidate &x = made.candidates[a], &y = made.candidates[b];
    if (x.recompute_fraction != y.recompute_fraction)
      return x.recompute_fraction < y.recompute_fraction;
    return x.plan.plan.arena_bytes < y.plan.plan.arena_bytes;
  });
  std::vector<BestPlan> curve;
  for (size_t k : order) {
    if (!curve.empty() &&
        made.candidates[k].plan.plan.arena_bytes >= curve.back().plan.plan.arena_bytes)
      continue;  // no smaller than a plan with no more extra work
    curve.push_back(Finish(made, k));
  }
  return curve;
}

}  // namespace memfold
