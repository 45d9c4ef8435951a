// The Echo pass (Algorithm 1 of the Echo paper): chooses which forward nodes to recompute in
// the backward pass so that the training footprint goes down, never up.
//
//  * Candidates: forward nodes that are neither compute-heavy (registry cost model, arithmetic
//    intensity; attribute "recompute" forces either way) nor forbidden (dropout, state updates,
//    losses). Chains of candidates are bounded (kMaxRecomputeChain nodes), so recomputation
//    never runs back through recurrent state further than about one step.
//  * Compute-heavy nodes are never re-run, but the feature maps they read can be (the paper's
//    non-conservative estimate: fully-connected, convolution and batched products' gradients
//    read their inputs, not their outputs).
//  * Footprint estimate with reuse: a value costs its bytes once, however many nodes read it
//    (use references over the whole forward + backward graph). Walking candidates in
//    topological order, a node — together with every candidate that shares an input with it,
//    since they can only stash that input together — leaves the recomputation set when the
//    bytes kept without it are not more than with it.
// The caller plans both graphs and keeps the baseline when Echo's plan is not smaller.
// O((V + E) * average readers) plus the groups' local re-evaluation.
#pragma once

#include <vector>

#include "memfold/ir/graph.h"
#include "memfold/passes/gradient.h"

namespace memfold {

inline constexpr int kMaxRecomputeChain = 8;

std::vector<char> EchoChoice(const Graph& graph, const TrainingGraph& training);

}  // namespace memfold
