// The `best` planner of `memfold plan`: every memory technique memfold has, applied in turn and
// each kept only when its verified arena is smaller than what came before:
//
//   greedy     TFLM's greedy planner on the file's own graph (the reference point)
//              (then explicit pads are folded into the convolutions after them, passes/
//              fold_pad.h, and with stream_input the graph inputs are streamed)
//   diagonal   the best plain or overlapping plan (the strategy "smallest": greedy, greedy_stable,
//              diagonal, the file's offline plan)
//   reorder    a peak-minimising operator order (passes/schedule), planned the same way
//   concat     every concatenation a copy-free view: its inputs written in place into its
//              output, in rows along an inner axis (plan/liveness.h says which qualify)
//   split      operation splitting (passes/split): regions up to whole stages in row bands
//              (halos recomputed or cached) or 2-D tiles, within a recompute budget
//   place      the chosen graph's placement settled by the portfolio's exact solver
//              (plan_graph.h ProvePlan): a smaller placement of the same buffers, or a proof
//              that none exists (PlanBestCurve's points skip it)
//
// The result's graph is the input graph, possibly re-ordered, with view concats, and split: same
// inputs and outputs (value ids and order), outputs bit-identical by construction (the tests
// execute it). Cost: the sum of the passes' (re-ordering < 1 s, splitting < 5 s on zoo models).
#pragma once

#include <string>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {

// What `best` chooses among the plans it makes: the smallest arena (memory; the least extra
// work on ties, half and a fifth of the split budget searched too when the smallest adds work), the
// least extra work and then the smallest arena (speed: operation splitting
// only where it adds no work), or the least extra work among the plans within
// kBalancedArenaSlack of the smallest arena (balanced: half and a fifth of the split budget are
// searched too).
enum class Objective { kMemory, kBalanced, kSpeed };
inline constexpr double kBalancedArenaSlack = 0.05;
// The objective's name (memory, balanced, speed); ParseObjective is its inverse.
const char* ObjectiveName(Objective objective);
Result<Objective> ParseObjective(const std::string& name);

struct BestOptions {
  Objective objective = Objective::kMemory;
  double max_recompute = 0.10;  // splitting: extra FLOPs allowed, as a fraction of the model's
  // Graph inputs streamed (passes/stream_inputs.h) for every step after greedy: the
  // runtime fetches the boxes split regions read instead of holding the whole input.
  bool stream_input = false;
  // When positive, split plans of more operators than this are left out (a compiled program's
  // tables take flash for every operator; `memfold compile` derives it from the board).
  int64_t max_steps = 0;
};

struct BestStep {
  std::string name;     // greedy, diagonal, reorder, concat, split, place
  int64_t arena_bytes;  // after this step (never above the step before, greedy aside)
  double ms;            // time the step took
  std::string detail;   // what it did, for people
};

struct BestPlan {
  Graph graph;     // the graph the plan is for
  GraphPlan plan;  // verified
  std::vector<BestStep> steps;
  bool reordered = false;
  bool concat = false;  // concatenations made copy-free views
  bool split = false;
  double recompute_fraction = 0;  // extra FLOPs of splitting over the model's
};

// Asks every concatenation of `graph` to be a copy-free view (attribute view = 1; liveness
// decides which inputs qualify); returns how many concatenations there are. O(nodes).
int MarkConcatViews(Graph* graph);

// Errors: those of the passes (a graph that fails verification, an unverifiable plan).
Result<BestPlan> PlanBest(const Graph& graph, const BestOptions& options = {});

// The memory / extra-work curve within options.max_recompute: every plan PlanBest makes, with
// `spread` more points of the segment search (passes/split_curve.h) and the rounds' search at
// 2 % and 10 % too, of which those no other plan beats in both arena and extra work; extra
// work ascending, arena descending. Each is verified. The objective is not used.
Result<std::vector<BestPlan>> PlanBestCurve(const Graph& graph, const BestOptions& options,
                                            int32_t spread);

}  // namespace memfold
