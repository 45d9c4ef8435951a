// FLOP and byte costs of the ops whose cost is not simply one FLOP per output element, and
// the two pieces every cost is made of: whole-tensor byte traffic (inputs read once, outputs
// written once) and a count of multiply-adds or window taps. A multiply-add counts as two
// FLOPs. The training ops' costs (train_infer.h) are built from the same pieces. O(rank).
#pragma once

#include <cstdint>

#include "memfold/ops/registry.h"

namespace memfold {

Cost ConvCost(const Graph& graph, const Node& node);    // conv2d and depthwise_conv2d
Cost MatrixCost(const Graph& graph, const Node& node);  // fully_connected, (batch_)matmul
Cost PoolCost(const Graph& graph, const Node& node);    // max/avg pooling
Cost MoveCost(const Graph& graph, const Node& node);    // data movement: 0 FLOPs
Cost TracedCost(const Graph& graph, const Node& node);  // traffic and the "flops" attribute
// Every input element times every filter tap of its channel (taps outside the output counted).
Cost TransposeConvCost(const Graph& graph, const Node& node);
// Four weighted neighbours per output element.
Cost ResizeBilinearCost(const Graph& graph, const Node& node);

// The node's byte traffic: every present input read once, every output written once; 0 FLOPs.
Cost Traffic(const Graph& graph, const Node& node);
// Traffic plus flops_per_step * positions * steps FLOPs: `steps` multiply-adds (2 FLOPs each)
// or window taps (1 FLOP each) at each of `positions` output positions.
Cost StepCost(const Graph& graph, const Node& node, double flops_per_step, int64_t positions,
              int64_t steps);
// FLOPs of every scheduled node with an op definition (NodeCost), in all.
double TotalFlops(const Graph& graph);
// Multiply-adds per output element of a convolution with `filter`: kh * kw for a depthwise
// filter [1, kh, kw, oc], kh * kw * ic for a conv2d filter [oc, kh, kw, ic].
int64_t ConvMacsPerOutput(const Shape& filter, bool depthwise);

}  // namespace memfold
