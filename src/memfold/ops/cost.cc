#include "memfold/ops/cost.h"

namespace memfold {
namespace {

Cost TrafficOnly(const Graph& graph, const Node& node) {
  Cost cost;
  for (ValueId in : node.inputs) {
    if (in != kNoValue) cost.bytes_read += graph.value(in).bytes();
  }
  for (ValueId out : node.outputs) cost.bytes_written += graph.value(out).bytes();
  return cost;
}

}  // namespace

Cost ConvCost(const Graph& graph, const Node& node) {
  Cost cost = TrafficOnly(graph, node);
  const Shape& filter = graph.value(node.inputs[1]).shape;
  const Value& out = graph.value(node.outputs[0]);
  // Each output element needs k_h * k_w * (input channels per output) multiply-adds; for
  // depthwise filters [1, kh, kw, oc] that is k_h * k_w, for conv [oc, kh, kw, ic] k_h*k_w*ic.
  const int64_t per_output = node.op == "depthwise_conv2d" ? filter[1] * filter[2]
                                                           : filter[1] * filter[2] * filter[3];
  cost.flops = 2.0 * static_cast<double>(out.elements()) * static_cast<double>(per_output);
  return cost;
}

Cost MatrixCost(const Graph& graph, const Node& node) {
  Cost cost = TrafficOnly(graph, node);
  const Value& a = graph.value(node.inputs[0]);
  const Value& b = graph.value(node.inputs[1]);
  const Value& out = graph.value(node.outputs[0]);
  int64_t depth = 0;
  if (node.op == "fully_connected") {
    depth = b.shape[1];
  } else {
    const bool ta = node.attrs.Int("transpose_a") != 0;
    depth = ta ? a.shape[a.shape.size() - 2] : a.shape.back();
  }
  cost.flops = 2.0 * static_cast<double>(out.elements()) * static_cast<double>(depth);
  return cost;
}

Cost PoolCost(const Graph& graph, const Node& node) {
  Cost cost = TrafficOnly(graph, node);
  const auto& filter = node.attrs.Ints("filter");
  cost.flops = static_cast<double>(graph.value(node.outputs[0]).elements()) *
               static_cast<double>(filter[0] * filter[1]);
  return cost;
}

Cost MoveCost(const Graph& graph, const Node& node) { return TrafficOnly(graph, node); }

}  // namespace memfold
