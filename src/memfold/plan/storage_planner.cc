#include "memfold/plan/storage_planner.h"

#include <algorithm>
#include <map>

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

// Every buffer's reference count: its readers, plus one if it holds a graph output.
std::vector<int32_t> ReferenceCounts(const Graph& graph, const Liveness& live) {
  std::vector<int32_t> refs(live.requests.size(), 0);
  auto count = [&](ValueId v) {
    const int32_t b = v == kNoValue ? kNoBuffer : live.buffer_of[static_cast<size_t>(v)];
    if (b != kNoBuffer) ++refs[static_cast<size_t>(b)];
  };
  for (NodeId id : graph.schedule) {
    for (ValueId in : graph.node(id).inputs) count(in);
  }
  for (ValueId v : graph.outputs) count(v);
  return refs;
}

StoragePlan PlanWithRange(const Graph& graph, const Liveness& live, std::vector<int32_t> refs,
                          int64_t range) {
  const size_t n = live.requests.size();
  auto buffer = [&](ValueId v) {
    return v == kNoValue ? kNoBuffer : live.buffer_of[static_cast<size_t>(v)];
  };
  StoragePlan plan;
  plan.storage_of.assign(n, -1);
  plan.match_range = static_cast<int>(range);
  StorageAllocator alloc(range);
  auto release_if_dead = [&](int32_t b) {
    if (refs[static_cast<size_t>(b)] == 0 && plan.storage_of[static_cast<size_t>(b)] >= 0)
      alloc.Release(plan.storage_of[static_cast<size_t>(b)]);
  };
  // Fed before the first node: the graph inputs, and values nothing computes that an operator
  // still reads (an opaque custom operator's scratch tensors in a file, for instance).
  auto feed = [&](ValueId v) {
    const int32_t b = buffer(v);
    if (b != kNoBuffer && plan.storage_of[static_cast<size_t>(b)] < 0)
      plan.storage_of[static_cast<size_t>(b)] =
          alloc.Request(live.requests[static_cast<size_t>(b)].bytes);
  };
  for (ValueId v : graph.inputs) feed(v);
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    if (graph.value(v).producer == kNoNode) feed(v);
  }
  std::vector<std::pair<int64_t, int32_t>> fresh;  // per node: (bytes, request), largest first
  for (size_t pos = 0; pos < graph.schedule.size(); ++pos) {
    const Node& node = graph.node(graph.schedule[pos]);
    const OpDef* def = OpOf(node);
    fresh.clear();
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      const int32_t out = buffer(node.outputs[k]);
      if (out == kNoBuffer || plan.storage_of[static_cast<size_t>(out)] >= 0)
        continue;  // views keep theirs
      const int32_t in = k == 0 && def != nullptr && def->inplace_input >= 0 &&
                                 static_cast<size_t>(def->inplace_input) < node.inputs.size()
                             ? buffer(node.inputs[static_cast<size_t>(def->inplace_input)])
                             : kNoBuffer;
      if (in != kNoBuffer && refs[static_cast<size_t>(in)] == 1 &&
          live.requests[static_cast<size_t>(in)].bytes ==
              live.requests[static_cast<size_t>(out)].bytes &&
          graph.value(node.inputs[static_cast<size_t>(def->inplace_input)]).dtype ==
              graph.value(node.outputs[k]).dtype) {
        plan.storage_of[static_cast<size_t>(out)] = plan.storage_of[static_cast<size_t>(in)];
        plan.in_place.emplace_back(out, in);
        refs[static_cast<size_t>(in)] = -1;  // handed over: never released on its own
        continue;
      }
      fresh.emplace_back(live.requests[static_cast<size_t>(out)].bytes, out);
    }
    for (int32_t r : live.scratch_of[static_cast<size_t>(graph.schedule[pos])])
      fresh.emplace_back(live.requests[static_cast<size_t>(r)].bytes, r);
    std::stable_sort(fresh.begin(), fresh.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [bytes, r] : fresh)
      plan.storage_of[static_cast<size_t>(r)] = alloc.Request(bytes);
    for (int32_t r : live.scratch_of[static_cast<size_t>(graph.schedule[pos])])
      alloc.Release(plan.storage_of[static_cast<size_t>(r)]);
    for (ValueId in : node.inputs) {
      const int32_t b = buffer(in);
      if (b != kNoBuffer && refs[static_cast<size_t>(b)] > 0 && --refs[static_cast<size_t>(b)] == 0)
        release_if_dead(b);
    }
    for (ValueId out : node.outputs) {  // outputs nobody reads are released at once
      const int32_t b = buffer(out);
      if (b != kNoBuffer && refs[static_cast<size_t>(b)] == 0) release_if_dead(b);
    }
  }
  plan.storage_bytes = alloc.sizes();
  for (int64_t bytes : plan.storage_bytes) plan.total_bytes += AlignUp(bytes, kArenaAlignment);
  return plan;
}

}  // namespace

StoragePlan PlanStorage(const Graph& graph, const Liveness& live) {
  const std::vector<int32_t> refs = ReferenceCounts(graph, live);
  StoragePlan best;
  for (int64_t range : {1, 2, 4, 8, 16}) {
    StoragePlan plan = PlanWithRange(graph, live, refs, range);
    if (best.match_range == 0 || plan.total_bytes < best.total_bytes) best = std::move(plan);
  }
  return best;
}

}  // namespace memfold
