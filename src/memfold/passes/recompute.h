// Recomputation: instead of keeping a forward value until the backward pass reads it, clone the
// forward nodes that produce it into the backward pass, just before their first backward
// reader, and let the backward pass read the clones. A clone reads the original inputs of the
// node it mirrors, or the clones of those inputs when their producers are recomputed too.
//
// Strategies choose which forward nodes to recompute:
//   mirror  Chen et al. as MXNet ships it: every forward node that is not compute-heavy, with
//           no check of whether that saves memory (REFERENCE.md §4).
//   echo    the Echo pass (Algorithm 1 of the paper): see echo.h.
// O(V + E) for the rewrite.
#pragma once

#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"
#include "memfold/passes/gradient.h"
#include "memfold/plan/liveness.h"

namespace memfold {

// Arithmetic intensity (FLOPs per byte of feature maps read and written, weights excluded) from
// which an op counts as compute-heavy, unless a node's attribute "recompute" says "never"
// (always heavy) or "always" (never heavy). Element-wise ops are far below it (a few tenths),
// matrix products and convolutions far above.
inline constexpr double kComputeHeavyIntensity = 1.0;

// Whether a forward node is too costly to recompute, by the registry's cost model.
bool IsComputeHeavy(const Graph& graph, const Node& node);

// Whether recomputing the node is never allowed: random draws (dropout must reuse its mask),
// state updates (batch-norm statistics must be updated exactly once), losses, ops without a
// kernel to rerun.
bool MustNotRecompute(const Graph& graph, const Node& node);

// How a recomputed node is re-run: batch_norm_train, which must not update its running
// statistics twice, is rebuilt as batch_norm_apply from the statistics it saved; only its
// output 0 is recomputed. Every other op re-runs itself and recomputes all its outputs.
bool RecomputesOutput(const Node& node, size_t output);

struct RecomputeResult {
  int recomputed_nodes = 0;
  double recompute_flops = 0;
};

// Clones the forward nodes marked in `recompute` (indexed by node id) into the backward pass of
// `training` and re-schedules. Nodes whose outputs no backward node reads are not cloned.
Result<RecomputeResult> ApplyRecomputation(Graph* graph, const TrainingGraph& training,
                                           const std::vector<char>& recompute);

// The forward nodes ApplyRecomputation clones for `recompute` (by node id): those with a
// recomputed output that the backward pass or a later clone reads. O(V + E).
std::vector<char> ClonedNodes(const Graph& graph, const TrainingGraph& training,
                              const std::vector<char>& recompute);

// No verified plan of the graph ApplyRecomputation(graph, training, recompute) would make
// has a smaller arena, found without making it. `live` is ComputeLiveness(graph).
//
// Why it holds: the rewrite keeps the order of the original nodes (optimizer updates may only
// move later), keeps their reads except that backward readers of a recomputed output read
// its clone, and adds clones. Take `live` with each buffer's last step cut back to its last
// remaining read: at the step of any original node other than an update, every such buffer
// is live in the new graph at that node's step, created there only if created there before,
// and dying there only if it died there (or living on). LowerBoundForAnyOverlap's argument
// then holds at those steps. O(V + E + T).
int64_t RecomputedArenaFloor(const Graph& graph, const TrainingGraph& training,
                             const Liveness& live, const std::vector<char>& recompute);

// Mirror's choice: every forward node that is neither compute-heavy nor forbidden.
std::vector<char> MirrorChoice(const Graph& graph, const TrainingGraph& training);

}  // namespace memfold
