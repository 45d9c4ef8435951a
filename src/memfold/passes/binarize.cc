#include "memfold/passes/binarize.h"

#include "memfold/ops/registry.h"

namespace memfold {
namespace {

struct Encoding {
  NodeId forward;               // the node producing the mask
  ValueId mask;                 // the float mask it produces
  double value;                 // what a set bit decodes to
  std::vector<NodeId> readers;  // backward readers, in schedule order
};

// The encodable mask of a forward node, if it has one and only backward `gradient` nodes read
// it at input `slot` in the backward pass.
bool Encodable(const Graph& g, const std::vector<std::vector<NodeId>>& readers,
               const std::vector<char>& backward, ValueId mask, std::string_view gradient,
               size_t slot, std::vector<NodeId>* backward_readers) {
  for (NodeId r : readers[static_cast<size_t>(mask)]) {
    if (!backward[static_cast<size_t>(r)]) continue;
    const Node& n = g.node(r);
    if (n.op != gradient || n.inputs.size() <= slot || n.inputs[slot] != mask) return false;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (k != slot && n.inputs[k] == mask) return false;
    }
    backward_readers->push_back(r);
  }
  return !backward_readers->empty();
}

std::vector<Encoding> FindEncodings(const Graph& g, const TrainingGraph& t) {
  const std::vector<std::vector<NodeId>> readers = g.Consumers();
  std::vector<char> backward(static_cast<size_t>(g.num_nodes()), 0);
  for (size_t pos = t.forward_nodes; pos < g.schedule.size(); ++pos)
    backward[static_cast<size_t>(g.schedule[pos])] = 1;
  std::vector<Encoding> found;
  for (size_t pos = 0; pos < t.forward_nodes; ++pos) {
    const NodeId id = g.schedule[pos];
    const Node& n = g.node(id);
    const BitMaskRule& rule = RulesOf(n).bit_mask;
    if (rule.output < 0 || n.outputs.size() <= static_cast<size_t>(rule.output)) continue;
    Encoding e{id,
               n.outputs[static_cast<size_t>(rule.output)],
               rule.set_value != nullptr ? rule.set_value(n) : 1.0,
               {}};
    if (Encodable(g, readers, backward, e.mask, rule.reader, static_cast<size_t>(rule.reader_input),
                  &e.readers))
      found.push_back(e);
  }
  return found;
}

}  // namespace

int BinarizeMasks(Graph* g, TrainingGraph* t) {
  const std::vector<Encoding> encodings = FindEncodings(*g, *t);
  const std::vector<NodeId> schedule = g->schedule;  // before the new nodes are appended
  std::vector<NodeId> encode_after(static_cast<size_t>(g->num_nodes()), kNoNode);
  std::vector<NodeId> decode_before = encode_after;               // per node id of the graph before
  const auto added = static_cast<int32_t>(2 * encodings.size());  // an encode and a decode each
  g->Reserve(g->num_values() + added, g->num_nodes() + added);
  for (const Encoding& e : encodings) {
    const std::string name = g->value(e.mask).name;
    Result<std::vector<ValueId>> bits = AddOp(g, "mask_encode", {e.mask}, {}, name + "/encode");
    g->node(g->num_nodes() - 1).layer = g->node(e.forward).layer;
    encode_after[static_cast<size_t>(e.forward)] = g->num_nodes() - 1;
    Attrs attrs;
    attrs.Set("value", e.value);
    Result<std::vector<ValueId>> mask =
        AddOp(g, "mask_decode", {bits->front()}, attrs, name + "/decode");
    g->node(g->num_nodes() - 1).layer = g->node(e.forward).layer;
    g->value(mask->front()).role = Role::kGradient;
    decode_before[static_cast<size_t>(e.readers.front())] = g->num_nodes() - 1;
    for (NodeId r : e.readers) g->node(r).inputs[1] = mask->front();
  }
  std::vector<NodeId> order;
  order.reserve(schedule.size() + static_cast<size_t>(added));
  for (NodeId id : schedule) {
    if (decode_before[static_cast<size_t>(id)] != kNoNode)
      order.push_back(decode_before[static_cast<size_t>(id)]);
    order.push_back(id);
    if (encode_after[static_cast<size_t>(id)] != kNoNode)
      order.push_back(encode_after[static_cast<size_t>(id)]);
  }
  g->schedule = std::move(order);
  t->forward_nodes += encodings.size();
  return static_cast<int>(encodings.size());
}

}  // namespace memfold
