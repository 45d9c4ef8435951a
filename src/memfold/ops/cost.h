// FLOP and byte costs of the ops whose cost is not simply one FLOP per output element.
// A multiply-add counts as two FLOPs. Bytes are whole-tensor traffic (inputs read once,
// outputs written once). O(rank).
#pragma once

#include "memfold/ops/registry.h"

namespace memfold {

Cost ConvCost(const Graph& graph, const Node& node);           // conv2d and depthwise_conv2d
Cost MatrixCost(const Graph& graph, const Node& node);         // fully_connected, (batch_)matmul
Cost PoolCost(const Graph& graph, const Node& node);           // max/avg pooling
Cost MoveCost(const Graph& graph, const Node& node);           // data movement: 0 FLOPs

}  // namespace memfold
