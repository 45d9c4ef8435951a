#include "memfold/ir/graph.h"

#include <algorithm>
#include <cassert>
#include <sstream>

namespace memfold {

int64_t NumElements(const Shape& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

std::string ShapeString(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += 'x';
    text += std::to_string(shape[i]);
  }
  return text;
}

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kInput:
      return "input";
    case Role::kWeight:
      return "weight";
    case Role::kActivation:
      return "activation";
    case Role::kOutput:
      return "output";
    case Role::kGradient:
      return "gradient";
    case Role::kOptimizerState:
      return "optimizer";
    case Role::kWorkspace:
      return "workspace";
    case Role::kState:
      return "state";
    case Role::kStreamed:
      return "streamed";
  }
  return "?";
}

void Attrs::Set(std::string name, AttrValue value) {
  auto it =
      std::lower_bound(items_.begin(), items_.end(), name,
                       [](const auto& item, const std::string& key) { return item.first < key; });
  if (it != items_.end() && it->first == name) {
    it->second = std::move(value);
  } else {
    items_.insert(it, {std::move(name), std::move(value)});
  }
}

const AttrValue* Attrs::Find(std::string_view name) const {
  auto it =
      std::lower_bound(items_.begin(), items_.end(), name,
                       [](const auto& item, std::string_view key) { return item.first < key; });
  if (it == items_.end() || it->first != name) return nullptr;
  return &it->second;
}

int64_t Attrs::Int(std::string_view name) const { return std::get<int64_t>(*Find(name)); }
double Attrs::Float(std::string_view name) const { return std::get<double>(*Find(name)); }
const std::string& Attrs::Str(std::string_view name) const {
  return std::get<std::string>(*Find(name));
}
const std::vector<int64_t>& Attrs::Ints(std::string_view name) const {
  return std::get<std::vector<int64_t>>(*Find(name));
}

std::string AttrValueString(const AttrValue& value) {
  std::ostringstream out;
  if (const auto* i = std::get_if<int64_t>(&value)) out << *i;
  if (const auto* d = std::get_if<double>(&value)) out << *d;
  if (const auto* s = std::get_if<std::string>(&value)) out << *s;
  if (const auto* v = std::get_if<std::vector<int64_t>>(&value)) {
    out << '[';
    for (size_t k = 0; k < v->size(); ++k) out << (k ? "," : "") << (*v)[k];
    out << ']';
  }
  return out.str();
}

ValueId Graph::AddValue(Value value) {
  values_.push_back(std::move(value));
  return static_cast<ValueId>(values_.size() - 1);
}

NodeId Graph::AddNode(Node node) {
  const auto id = static_cast<NodeId>(nodes_.size());
  for (ValueId out : node.outputs) value(out).producer = id;
  nodes_.push_back(std::move(node));
  schedule.push_back(id);
  return id;
}

void Graph::Reserve(int32_t values, int32_t nodes) {
  values_.reserve(static_cast<size_t>(values));
  nodes_.reserve(static_cast<size_t>(nodes));
  schedule.reserve(static_cast<size_t>(nodes));
}

Graph Graph::CopyWithRoom(int32_t more_values, int32_t more_nodes) const {
  Graph copy;
  copy.Reserve(num_values() + more_values, num_nodes() + more_nodes);
  copy = *this;  // copy-assignment keeps the reserved capacity
  return copy;
}

void Graph::KeepNodes(std::span<const NodeId> order) {
  // A full permutation: kept nodes to their positions in `order`, the others after them.
  std::vector<NodeId> target(nodes_.size(), kNoNode);
  for (size_t k = 0; k < order.size(); ++k)
    target[static_cast<size_t>(order[k])] = static_cast<NodeId>(k);
  auto next = static_cast<NodeId>(order.size());
  for (NodeId& t : target) t = t == kNoNode ? next++ : t;
  for (size_t i = 0; i < nodes_.size(); ++i) {  // applied cycle by cycle with swaps
    while (target[i] != static_cast<NodeId>(i)) {
      const auto j = static_cast<size_t>(target[i]);
      std::swap(nodes_[i], nodes_[j]);
      std::swap(target[i], target[j]);
    }
  }
  nodes_.erase(nodes_.begin() + static_cast<std::ptrdiff_t>(order.size()), nodes_.end());
  for (Value& v : values_) v.producer = kNoNode;
  schedule.resize(order.size());
  for (NodeId id = 0; id < num_nodes(); ++id) {
    schedule[static_cast<size_t>(id)] = id;
    for (ValueId out : nodes_[static_cast<size_t>(id)].outputs) value(out).producer = id;
  }
}

GraphCheckpoint::GraphCheckpoint(const Graph& graph)
    : values_(graph.num_values()), nodes_(graph.num_nodes()), schedule_(graph.schedule) {
  for (const Node& node : graph.nodes())
    inputs_.insert(inputs_.end(), node.inputs.begin(), node.inputs.end());
}

void Graph::Rollback(const GraphCheckpoint& checkpoint) {
  assert(checkpoint.values_ <= num_values() && checkpoint.nodes_ <= num_nodes());
  values_.erase(values_.begin() + checkpoint.values_, values_.end());
  nodes_.erase(nodes_.begin() + checkpoint.nodes_, nodes_.end());
  schedule = checkpoint.schedule_;
  auto saved = checkpoint.inputs_.begin();
  for (Node& node : nodes_) {
    assert(checkpoint.inputs_.end() - saved >= static_cast<std::ptrdiff_t>(node.inputs.size()));
    std::copy_n(saved, node.inputs.size(), node.inputs.begin());
    saved += static_cast<std::ptrdiff_t>(node.inputs.size());
  }
  assert(saved == checkpoint.inputs_.end());
}

std::vector<std::vector<NodeId>> Graph::Consumers() const {
  std::vector<std::vector<NodeId>> consumers(values_.size());
  for (NodeId id : schedule) {
    for (ValueId in : node(id).inputs) {
      if (in != kNoValue) consumers[static_cast<size_t>(in)].push_back(id);
    }
  }
  return consumers;
}

void Graph::SetOriginWithin(ValueId v, ValueId within, const Shape& begin) {
  const Value& outer = value(within);
  ValueOrigin origin{within, begin};
  if (outer.origin) {
    origin.source = outer.origin->source;
    for (size_t d = 0; d < origin.begin.size() && d < outer.origin->begin.size(); ++d) {
      origin.begin[d] += outer.origin->begin[d];
    }
  }
  value(v).origin = std::move(origin);
}

}  // namespace memfold
