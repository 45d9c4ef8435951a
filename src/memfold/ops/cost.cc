#include "memfold/ops/cost.h"

namespace memfold {

Cost Traffic(const Graph& graph, const Node& node) {
  Cost cost;
  for (ValueId in : node.inputs) {
    if (in != kNoValue) cost.bytes_read += graph.value(in).bytes();
  }
  for (ValueId out : node.outputs) cost.bytes_written += graph.value(out).bytes();
  return cost;
}

Cost StepCost(const Graph& graph, const Node& node, double flops_per_step, int64_t positions,
              int64_t steps) {
  Cost cost = Traffic(graph, node);
  cost.flops = flops_per_step * static_cast<double>(positions) * static_cast<double>(steps);
  return cost;
}

double TotalFlops(const Graph& graph) {
  double total = 0;
  for (NodeId id : graph.schedule) {
    if (OpOf(graph.node(id)) != nullptr) total += NodeCost(graph, graph.node(id)).flops;
  }
  return total;
}

int64_t ConvMacsPerOutput(const Shape& filter, bool depthwise) {
  return depthwise ? filter[1] * filter[2] : filter[1] * filter[2] * filter[3];
}

Cost ConvCost(const Graph& graph, const Node& node) {
  const Shape& filter = graph.value(node.inputs[1]).shape;
  return StepCost(graph, node, 2.0, graph.value(node.outputs[0]).elements(),
                  ConvMacsPerOutput(filter, node.op == "depthwise_conv2d"));
}

Cost MatrixCost(const Graph& graph, const Node& node) {
  const Value& a = graph.value(node.inputs[0]);
  const Value& b = graph.value(node.inputs[1]);
  int64_t depth = 0;
  if (node.op == "fully_connected" || node.op == "fully_connected_gemm") {
    depth = b.shape[1];
  } else if (node.op == "tflite_batch_matmul") {
    depth = node.attrs.Int("adj_x") != 0 ? a.shape[a.shape.size() - 2] : a.shape.back();
  } else {
    const bool ta = node.attrs.Int("transpose_a") != 0;
    depth = ta ? a.shape[a.shape.size() - 2] : a.shape.back();
  }
  return StepCost(graph, node, 2.0, graph.value(node.outputs[0]).elements(), depth);
}

Cost PoolCost(const Graph& graph, const Node& node) {
  const auto& filter = node.attrs.Ints("filter");
  return StepCost(graph, node, 1.0, graph.value(node.outputs[0]).elements(), filter[0] * filter[1]);
}

Cost MoveCost(const Graph& graph, const Node& node) { return Traffic(graph, node); }

Cost TracedCost(const Graph& graph, const Node& node) {
  Cost cost = Traffic(graph, node);
  cost.flops = node.attrs.Float("flops");
  return cost;
}

Cost TransposeConvCost(const Graph& graph, const Node& node) {
  const Shape& filter = graph.value(node.inputs[1]).shape;
  return StepCost(graph, node, 2.0, graph.value(node.inputs[0]).elements(),
                  filter[0] * filter[1] * filter[2]);
}

Cost ResizeBilinearCost(const Graph& graph, const Node& node) {
  return StepCost(graph, node, 2.0, graph.value(node.outputs[0]).elements(), 4);
}

}  // namespace memfold
