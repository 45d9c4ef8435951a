// The memfold IR: a Graph of Values (tensors) and Nodes (operations).
//
// Values and nodes live in flat vectors and are named by dense integer ids. `schedule` is the
// execution order: a permutation of node ids that passes may reorder without rebuilding the
// graph. Constant values (weights) own their bytes through a shared pointer so that copying a
// graph to transform it is cheap. The IR knows nothing about particular operators; those live
// in the op registry (ops/), which reads node attributes by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "memfold/ir/dtype.h"

namespace memfold {

using ValueId = int32_t;
using NodeId = int32_t;
inline constexpr ValueId kNoValue = -1;  // an absent optional input
inline constexpr NodeId kNoNode = -1;

using Shape = std::vector<int64_t>;
int64_t NumElements(const Shape& shape);      // 1 for a scalar (rank 0)
std::string ShapeString(const Shape& shape);  // "1x224x224x3", "scalar"

// What a value is for; planners and the memory profiler group bytes by it.
enum class Role : uint8_t {
  kInput,           // fed by the caller
  kWeight,          // constant or trainable parameter, stored outside the arena
  kActivation,      // produced and consumed during a run
  kOutput,          // read by the caller after a run
  kGradient,        // backward-pass gradient
  kOptimizerState,  // e.g. momentum; without data it starts at zero, like kState
  kWorkspace,       // scratch memory of one operation
  kState,           // persistent state across runs (TFLite variable tensors), outside the arena
  kStreamed,        // a graph input the runtime fetches box by box from the caller (a camera,
                    // a decoder), outside the arena; only slices read it
};
std::string_view RoleName(Role role);

// Affine quantisation: real = scale * (q - zero_point). One entry per tensor, or one per
// slice along `axis` (per-channel).
struct Quantization {
  std::vector<float> scale;
  std::vector<int64_t> zero_point;
  int32_t axis = 0;
  bool per_channel() const { return scale.size() > 1; }
};

using Bytes = std::vector<std::byte>;

// What a value holds of a value of the graph a rewrite started from, when it is only part of
// it: the box source[begin, begin + shape) (same rank and element type). Passes keep the ids of
// the values they do not replace, so a value without an origin is the value with its own id.
// Checked execution (exec/checked_run.h) compares rewritten graphs with the original by it.
struct ValueOrigin {
  ValueId source = kNoValue;
  Shape begin;
};

struct Value {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  Role role = Role::kActivation;
  std::optional<Quantization> quant;
  NodeId producer = kNoNode;
  std::shared_ptr<const Bytes> data;  // constant contents; null for computed values
  std::optional<ValueOrigin> origin;  // set by rewrites on values that hold part of another

  int64_t elements() const { return NumElements(shape); }
  int64_t bytes() const { return StorageBytes(dtype, elements()); }
  bool is_constant() const { return data != nullptr; }
};

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>>;

// Named attributes of a node, kept sorted by name so printing and comparison are stable.
class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string, AttrValue>> items) {
    for (const auto& [name, value] : items) Set(name, value);
  }
  void Set(std::string name, AttrValue value);
  const AttrValue* Find(std::string_view name) const;
  bool Has(std::string_view name) const { return Find(name) != nullptr; }
  // Typed getters; the registry has filled defaults and checked types, so a missing or
  // mistyped attribute here is a programming error.
  int64_t Int(std::string_view name) const;
  double Float(std::string_view name) const;
  const std::string& Str(std::string_view name) const;
  const std::vector<int64_t>& Ints(std::string_view name) const;
  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }

 private:
  std::vector<std::pair<std::string, AttrValue>> items_;
};
std::string AttrValueString(const AttrValue& value);

struct Node {
  std::string op;  // registry name, e.g. "conv2d" (imports and output speak names)
  // The op registry's row for `op`, resolved once when the registry checks the node (ops/
  // registry.h OpOf reads it); -1 until then. The IR itself knows nothing about operators.
  int32_t op_row = -1;
  std::string name;             // unique, human-readable
  std::vector<ValueId> inputs;  // kNoValue for an absent optional input
  std::vector<ValueId> outputs;
  Attrs attrs;
  std::string layer;  // layer type tag for profiling ("conv", "attention", ...); may be empty
};

class Graph;

// What a rewrite that appends values and nodes, rewires existing nodes' inputs (to any value,
// never changing how many a node has) and reschedules can change: taken before such a rewrite,
// Graph::Rollback undoes it in place, so a pass can try a rewrite without copying the graph.
// O(N + E) memory (a flat copy of every node's inputs and the schedule).
class GraphCheckpoint {
 public:
  explicit GraphCheckpoint(const Graph& graph);

 private:
  friend class Graph;
  int32_t values_ = 0;
  int32_t nodes_ = 0;
  std::vector<NodeId> schedule_;
  std::vector<ValueId> inputs_;  // every node's inputs, concatenated in id order
};

class Graph {
 public:
  ValueId AddValue(Value value);
  // Appends the node to the schedule and records it as the producer of its outputs.
  NodeId AddNode(Node node);
  // Makes room for this many values and nodes in all, so that growing never moves them.
  void Reserve(int32_t values, int32_t nodes);
  // A copy with room for this many more values and nodes: growing it by that much moves
  // nothing (a plain copy has none, so its first new node would move the whole table).
  Graph CopyWithRoom(int32_t more_values, int32_t more_nodes) const;
  // Keeps only the nodes `order` names, in place (no node is copied): node order[k] becomes
  // node k, the schedule is that order, and each value's producer is its kept writer or none.
  // Precondition: `order` names distinct nodes. O(V + N).
  void KeepNodes(std::span<const NodeId> order);
  // Returns the graph to `checkpoint`, taken from it before a rewrite of the kind
  // GraphCheckpoint describes: appended values and nodes are dropped (the tables keep their
  // capacity), inputs and the schedule restored. O(N + E).
  void Rollback(const GraphCheckpoint& checkpoint);

  const Value& value(ValueId id) const { return values_[static_cast<size_t>(id)]; }
  Value& value(ValueId id) { return values_[static_cast<size_t>(id)]; }
  const Node& node(NodeId id) const { return nodes_[static_cast<size_t>(id)]; }
  Node& node(NodeId id) { return nodes_[static_cast<size_t>(id)]; }
  int32_t num_values() const { return static_cast<int32_t>(values_.size()); }
  int32_t num_nodes() const { return static_cast<int32_t>(nodes_.size()); }
  std::span<const Value> values() const { return values_; }
  std::span<const Node> nodes() const { return nodes_; }

  std::vector<ValueId> inputs;   // in caller order
  std::vector<ValueId> outputs;  // in caller order
  std::vector<NodeId> schedule;  // execution order
  std::string name;
  // Arena offsets a model file prescribes (TFLite OfflineMemoryAllocation), one per value,
  // -1 = plan this value; empty when the file has no offline plan.
  std::vector<int64_t> offline_offsets;

  // consumers[v] = nodes reading v, in schedule order, a node listed once per use. O(V + E).
  std::vector<std::vector<NodeId>> Consumers() const;

  // Records that value `v` holds the box of value `within` that starts at `begin`, composed
  // with `within`'s own origin, so origins always name values of the graph before any rewrite.
  void SetOriginWithin(ValueId v, ValueId within, const Shape& begin);

 private:
  std::vector<Value> values_;
  std::vector<Node> nodes_;
};

}  // namespace memfold
