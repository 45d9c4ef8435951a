// The stash accounting of a recomputation set R over a whole training graph: which forward
// values stay alive until the backward pass (a backward node or a recomputed node reads them,
// and they are not recomputed themselves), and how many bytes they hold, each storage once
// however many of its views are kept (a view keeps the bytes it views). Weights and constants
// are outside the arena and cost nothing; so are graph inputs when the caller holds them
// (TrainingGraph::caller_holds_inputs). Echo's trim and the memory-budget choice both ask it.
// Construction O(V + E); Kept O(readers); KeptBytes O(values * views * readers).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "memfold/ir/graph.h"
#include "memfold/passes/gradient.h"

namespace memfold {

// Whether the node only re-labels its input's bytes (reshape, and the views a PyTorch joint
// graph is full of): re-creating it costs nothing.
bool IsView(const Node& node);

class StashModel {
 public:
  StashModel(const Graph& graph, const TrainingGraph& training);

  // Whether value v (a forward value or an input) is kept until the backward pass when
  // `in_set` nodes are recomputed; backward values never are.
  bool Kept(ValueId v, const std::vector<char>& in_set) const;
  // Bytes of the storages of `values` kept under `in_set` (a storage is kept when the value
  // owning it or any view of it is).
  int64_t KeptBytes(const std::set<ValueId>& values, const std::vector<char>& in_set) const;
  // Bytes kept over the whole graph under `in_set`.
  int64_t TotalKeptBytes(const std::vector<char>& in_set) const;

  const std::vector<NodeId>& readers(ValueId v) const { return readers_[static_cast<size_t>(v)]; }
  bool forward(NodeId id) const { return forward_[static_cast<size_t>(id)] != 0; }

 private:
  bool Free(ValueId v) const;  // outside the arena, or held by the caller
  bool StorageKept(ValueId storage, const std::vector<char>& in_set) const;
  size_t OutputIndex(NodeId producer, ValueId v) const;

  const Graph& g_;
  bool caller_holds_inputs_;
  std::vector<std::vector<NodeId>> readers_;
  std::vector<char> forward_;
  std::vector<ValueId> storage_;  // the value whose bytes a value is (itself, or a view's base)
  std::map<ValueId, std::vector<ValueId>> views_;  // per storage with views: the views
};

}  // namespace memfold
