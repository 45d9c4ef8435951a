#include "memfold/passes/fold_pad.h"

#include <algorithm>
#include <vector>

#include "memfold/ops/registry.h"
#include "memfold/ops/window.h"
#include "memfold/passes/dead_nodes.h"

namespace memfold {
namespace {

// The padding value a convolution's own padding stands for, in the stored element type.
double ZeroOf(const Value& value) {
  if (value.dtype == DType::kF32) return 0.0;
  if (value.quant && value.quant->zero_point.size() == 1)
    return static_cast<double>(value.quant->zero_point[0]);
  return value.quant ? 1e300 : 0.0;  // per-channel zero points: never equal
}

bool SameQuantization(const Value& a, const Value& b) {
  if (!a.quant || !b.quant) return !a.quant && !b.quant;
  return a.quant->scale == b.quant->scale && a.quant->zero_point == b.quant->zero_point &&
         a.quant->axis == b.quant->axis;
}

// The pad's [top, bottom, left, right] when it pads only H and W of a rank-4 tensor with the
// zero its reader's padding stands for; empty otherwise.
std::vector<int64_t> FoldablePads(const Graph& graph, const Node& pad) {
  if (RulesOf(pad).tile != TileRule::kPad || pad.inputs.size() != 1 || pad.outputs.size() != 1)
    return {};
  const auto& p = pad.attrs.Ints("paddings");
  const Value& out = graph.value(pad.outputs[0]);
  const Value& in = graph.value(pad.inputs[0]);
  if (in.dtype != out.dtype || !SameQuantization(in, out)) return {};
  if (p.size() != 8 || p[0] != 0 || p[1] != 0 || p[6] != 0 || p[7] != 0 ||
      *std::min_element(p.begin(), p.end()) < 0 ||
      (out.dtype != DType::kF32 && out.dtype != DType::kI8))
    return {};
  if (pad.attrs.Float("value") != ZeroOf(out)) return {};
  return {p[2], p[3], p[4], p[5]};
}

// The reader's explicit padding with the pad's added, or an error when its window does not fit.
Result<std::vector<int64_t>> CombinedPads(const Graph& graph, const Node& conv,
                                          const std::vector<int64_t>& pads) {
  const Shape& in = graph.value(conv.inputs[0]).shape;
  const Shape& filter = graph.value(conv.inputs[1]).shape;
  MF_ASSIGN_OR_RETURN(Window2D w, ComputeWindow(conv.attrs, in[1], in[2], filter[1], filter[2]));
  const int64_t bottom = (w.out_h - 1) * w.stride_h + (w.k_h - 1) * w.dil_h + 1 - in[1] - w.pad_top;
  const int64_t right = (w.out_w - 1) * w.stride_w + (w.k_w - 1) * w.dil_w + 1 - in[2] - w.pad_left;
  return std::vector<int64_t>{w.pad_top + pads[0], std::max<int64_t>(bottom, 0) + pads[1],
                              w.pad_left + pads[2], std::max<int64_t>(right, 0) + pads[3]};
}

}  // namespace

int FoldPads(Graph* graph) {
  const std::vector<std::vector<NodeId>> consumers = graph->Consumers();
  int folded = 0;
  for (NodeId id : graph->schedule) {
    const Node& pad = graph->node(id);
    const std::vector<int64_t> pads = FoldablePads(*graph, pad);
    const ValueId padded = pad.outputs.empty() ? kNoValue : pad.outputs[0];
    if (pads.empty() ||
        std::find(graph->outputs.begin(), graph->outputs.end(), padded) != graph->outputs.end())
      continue;
    const auto& readers = consumers[static_cast<size_t>(padded)];
    if (readers.size() != 1) continue;
    Node& conv = graph->node(readers[0]);
    if (RulesOf(conv).tile != TileRule::kConvWindow || conv.inputs[0] != padded ||
        std::count(conv.inputs.begin(), conv.inputs.end(), padded) != 1)
      continue;
    Result<std::vector<int64_t>> combined = CombinedPads(*graph, conv, pads);
    if (!combined.ok()) continue;
    Node folded_conv = conv;
    folded_conv.inputs[0] = pad.inputs[0];
    folded_conv.attrs.Set("padding", std::string("explicit"));
    folded_conv.attrs.Set("pads", *combined);
    Result<std::vector<TensorType>> types = InferNode(*graph, folded_conv);
    if (!types.ok() || types->at(0).shape != graph->value(conv.outputs[0]).shape) continue;
    conv = std::move(folded_conv);
    ++folded;
  }
  if (folded > 0) EliminateDeadNodes(graph);
  return folded;
}

}  // namespace memfold
