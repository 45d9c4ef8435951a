// The Echo pass (Algorithm 1 of the Echo paper): chooses which forward nodes to recompute in
// the backward pass so that the training footprint goes down, never up.
//
//  * Candidates: forward nodes that are neither compute-heavy (registry cost model, arithmetic
//    intensity; attribute "recompute" forces either way) nor forbidden (dropout, state updates,
//    losses). Chains of candidates are bounded: at most kMaxRecomputeChain nodes, and at most
//    one recurrent step — two chains meeting that start from different nodes applying the same
//    parameters (step t's gates and step t-1's state) cross a step, so recomputing a cell
//    state may re-run the step before it but never further. Views (alias ops) do not count
//    towards the length: re-creating one costs nothing.
//  * Partition (Algorithm 1, backward): walking backward from the loss, a subgraph grows
//    through candidates until blocked by nodes that cannot be recomputed, which root the next
//    subgraphs; subgraphs are disjoint and small (a few nodes each).
//  * Compute-heavy nodes are never re-run, but the feature maps they read can be (the paper's
//    non-conservative estimate: fully-connected, convolution and batched products' gradients
//    read their inputs, not their outputs).
//  * Footprint estimate with reuse: a value costs its bytes once, however many nodes read it
//    (use references over the whole forward + backward graph), and a view (alias op) costs the
//    bytes of the storage it views, counted once with it. Walking each subgraph in
//    topological order (Algorithm 1, forward), a node — together with every candidate that shares
//    an input with it, since they can only stash that input together — leaves the recomputation set
//    when the bytes kept without it are not more than with it.
// The caller plans both graphs and keeps the baseline when Echo's plan is not smaller.
// O((V + E) * average readers) plus the groups' local re-evaluation.
#pragma once

#include <vector>

#include "memfold/ir/graph.h"
#include "memfold/passes/gradient.h"

namespace memfold {

// Bounds on a recomputation chain: its length in nodes (a residual stream is re-run at most this
// far back from a kept value) and the recurrent steps it spans (see Candidates in echo.cc).
inline constexpr int kMaxRecomputeChain = 12;
inline constexpr int kMaxRecurrentSteps = 1;

// The recomputation choice, indexed by node id.
std::vector<char> EchoChoice(const Graph& graph, const TrainingGraph& training);

// Algorithm 1's partition: disjoint subgraphs of candidates, found walking backward from the
// loss and stopped by nodes that cannot be recomputed, each in schedule order.
std::vector<std::vector<NodeId>> EchoSubgraphs(const Graph& graph, const TrainingGraph& training);

}  // namespace memfold
