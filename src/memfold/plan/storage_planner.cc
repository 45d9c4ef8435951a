#include "memfold/plan/storage_planner.h"

#include <algorithm>
#include <map>
#include <span>

#include "memfold/ops/registry.h"

namespace memfold {
namespace {

// The free storages by size. Equal sizes form a queue (a multimap's order: the first released
// is found first, the last released is the last of its size), so the map holds one node per
// distinct size: few, where a training step frees thousands of storages.
class StorageAllocator {
 public:
  explicit StorageAllocator(int64_t match_range) : range_(match_range) {}

  int32_t Request(int64_t bytes) {
    auto mid = free_.lower_bound(bytes);
    auto end = free_.upper_bound(bytes * range_);
    if (mid != end) return Take(mid, bytes, /*oldest=*/true);  // the smallest large-enough one
    auto begin = free_.lower_bound(bytes / range_);
    if (mid != begin) return Take(std::prev(mid), bytes, false);  // the largest smaller, grown
    sizes_.push_back(bytes);
    return static_cast<int32_t>(sizes_.size() - 1);
  }
  void Release(int32_t id) { free_[sizes_[static_cast<size_t>(id)]].ids.push_back(id); }
  const std::vector<int64_t>& sizes() const { return sizes_; }

 private:
  struct Queue {
    std::vector<int32_t> ids;
    size_t head = 0;  // ids before it were taken
  };

  int32_t Take(std::map<int64_t, Queue>::iterator it, int64_t bytes, bool oldest) {
    Queue& queue = it->second;
    int32_t id = 0;
    if (oldest) {
      id = queue.ids[queue.head++];
    } else {
      id = queue.ids.back();
      queue.ids.pop_back();
    }
    if (queue.head == queue.ids.size()) free_.erase(it);
    sizes_[static_cast<size_t>(id)] = std::max(sizes_[static_cast<size_t>(id)], bytes);
    return id;
  }

  int64_t range_;
  std::map<int64_t, Queue> free_;
  std::vector<int64_t> sizes_;
};

// What the sweep reads of the graph, flattened once for all match ranges (walking the nodes
// themselves five times was most of the planner's time, in cache misses). Per schedule
// position p, its outputs, scratch buffers and read buffers are [begin[p], begin[p + 1]) of
// their arrays.
struct SweepEvents {
  struct Output {
    int32_t buffer;
    int32_t in_place_from;  // the input buffer it may take over (op, size and type allow it)
  };
  std::vector<int32_t> fed;  // buffers fed before the first node, in order
  std::vector<Output> outputs;
  std::vector<int32_t> output_begin{0};
  std::vector<int32_t> scratch;
  std::vector<int32_t> scratch_begin{0};
  std::vector<int32_t> reads;  // one entry per use
  std::vector<int32_t> read_begin{0};
  std::vector<int32_t> refs;  // per buffer: its readers, plus one if it holds a graph output
};

SweepEvents CollectEvents(const Graph& graph, const Liveness& live) {
  auto buffer = [&](ValueId v) {
    return v == kNoValue ? kNoBuffer : live.buffer_of[static_cast<size_t>(v)];
  };
  SweepEvents e;
  // Fed before the first node: the graph inputs, and values nothing computes that an operator
  // still reads (an opaque custom operator's scratch tensors in a file, for instance).
  for (ValueId v : graph.inputs) e.fed.push_back(buffer(v));
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    if (graph.value(v).producer == kNoNode) e.fed.push_back(buffer(v));
  }
  e.refs.assign(live.requests.size(), 0);
  for (NodeId id : graph.schedule) {
    const Node& node = graph.node(id);
    const OpDef* def = OpOf(node);
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      const int32_t out = buffer(node.outputs[k]);
      if (out == kNoBuffer) continue;
      int32_t from = kNoBuffer;
      if (k == 0 && def != nullptr && def->inplace_input >= 0 &&
          static_cast<size_t>(def->inplace_input) < node.inputs.size()) {
        const ValueId in = node.inputs[static_cast<size_t>(def->inplace_input)];
        const int32_t b = buffer(in);
        if (b != kNoBuffer &&
            live.requests[static_cast<size_t>(b)].bytes ==
                live.requests[static_cast<size_t>(out)].bytes &&
            graph.value(in).dtype == graph.value(node.outputs[k]).dtype)
          from = b;
      }
      e.outputs.push_back({out, from});
    }
    e.output_begin.push_back(static_cast<int32_t>(e.outputs.size()));
    const std::vector<int32_t>& scratch = live.scratch_of[static_cast<size_t>(id)];
    e.scratch.insert(e.scratch.end(), scratch.begin(), scratch.end());
    e.scratch_begin.push_back(static_cast<int32_t>(e.scratch.size()));
    for (ValueId in : node.inputs) {
      const int32_t b = buffer(in);
      if (b == kNoBuffer) continue;
      e.reads.push_back(b);
      ++e.refs[static_cast<size_t>(b)];
    }
    e.read_begin.push_back(static_cast<int32_t>(e.reads.size()));
  }
  for (ValueId v : graph.outputs) {
    if (buffer(v) != kNoBuffer) ++e.refs[static_cast<size_t>(buffer(v))];
  }
  return e;
}

StoragePlan PlanWithRange(const Liveness& live, const SweepEvents& e, int64_t range) {
  const size_t n = live.requests.size();
  auto bytes_of = [&](int32_t b) { return live.requests[static_cast<size_t>(b)].bytes; };
  std::vector<int32_t> refs = e.refs;
  StoragePlan plan;
  plan.storage_of.assign(n, -1);
  plan.match_range = static_cast<int>(range);
  StorageAllocator alloc(range);
  auto release_if_dead = [&](int32_t b) {
    if (refs[static_cast<size_t>(b)] == 0 && plan.storage_of[static_cast<size_t>(b)] >= 0)
      alloc.Release(plan.storage_of[static_cast<size_t>(b)]);
  };
  for (int32_t b : e.fed) {
    if (b != kNoBuffer && plan.storage_of[static_cast<size_t>(b)] < 0)
      plan.storage_of[static_cast<size_t>(b)] = alloc.Request(bytes_of(b));
  }
  std::vector<std::pair<int64_t, int32_t>> fresh;  // per node: (bytes, request), largest first
  std::vector<int32_t> made;                       // per node: the buffers it gives storage
  for (size_t pos = 0; pos + 1 < e.output_begin.size(); ++pos) {
    const std::span<const SweepEvents::Output> outputs(e.outputs.data() + e.output_begin[pos],
                                                       e.outputs.data() + e.output_begin[pos + 1]);
    const std::span<const int32_t> scratch(e.scratch.data() + e.scratch_begin[pos],
                                           e.scratch.data() + e.scratch_begin[pos + 1]);
    const std::span<const int32_t> reads(e.reads.data() + e.read_begin[pos],
                                         e.reads.data() + e.read_begin[pos + 1]);
    fresh.clear();
    made.clear();
    for (const auto& [out, from] : outputs) {
      if (plan.storage_of[static_cast<size_t>(out)] >= 0) continue;  // views keep theirs
      made.push_back(out);
      if (from != kNoBuffer && refs[static_cast<size_t>(from)] == 1) {
        plan.storage_of[static_cast<size_t>(out)] = plan.storage_of[static_cast<size_t>(from)];
        plan.in_place.emplace_back(out, from);
        refs[static_cast<size_t>(from)] = -1;  // handed over: never released on its own
        continue;
      }
      fresh.emplace_back(bytes_of(out), out);
    }
    for (int32_t r : scratch) fresh.emplace_back(bytes_of(r), r);
    std::stable_sort(fresh.begin(), fresh.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [bytes, r] : fresh)
      plan.storage_of[static_cast<size_t>(r)] = alloc.Request(bytes);
    for (int32_t r : scratch) alloc.Release(plan.storage_of[static_cast<size_t>(r)]);
    for (int32_t b : reads) {
      if (refs[static_cast<size_t>(b)] > 0 && --refs[static_cast<size_t>(b)] == 0)
        release_if_dead(b);
    }
    // Outputs this node made that nobody reads are released at once (a view's buffer was
    // made, and is released, by the node that owns it).
    for (int32_t out : made) {
      if (refs[static_cast<size_t>(out)] == 0) release_if_dead(out);
    }
  }
  plan.storage_bytes = alloc.sizes();
  for (int64_t bytes : plan.storage_bytes) plan.total_bytes += AlignUp(bytes, kArenaAlignment);
  return plan;
}

}  // namespace

StoragePlan PlanStorage(const Graph& graph, const Liveness& live) {
  const SweepEvents events = CollectEvents(graph, live);
  StoragePlan best;
  for (int64_t range : {1, 2, 4, 8, 16}) {
    StoragePlan plan = PlanWithRange(live, events, range);
    if (best.match_range == 0 || plan.total_bytes < best.total_bytes) best = std::move(plan);
  }
  return best;
}

}  // namespace memfold
