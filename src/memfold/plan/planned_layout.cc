#include "memfold/plan/planned_layout.h"

#include <algorithm>

namespace memfold {

std::vector<ValueHome> PlannedHomes(const Graph& graph, const Liveness& live, const Plan& plan) {
  const SharedStorage& shared = live.shared;
  std::vector<ValueHome> homes(static_cast<size_t>(graph.num_values()));
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    const auto k = static_cast<size_t>(v);
    if (shared.root[k] != v) continue;
    if (shared.persistent[k]) {
      homes[k] = {Home::kPersistent, 0, v};
    } else if (const int32_t buffer = live.buffer_of[k]; buffer != kNoBuffer) {
      homes[k] = {Home::kArena, plan.offsets[static_cast<size_t>(buffer)] + ViewOffset(live, v)};
    } else if (graph.value(v).is_constant()) {
      homes[k] = {Home::kConstant, 0, v};
    }
  }
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    const ValueId root = shared.root[static_cast<size_t>(v)];
    if (root != v) homes[static_cast<size_t>(v)] = homes[static_cast<size_t>(root)];
  }
  return homes;
}

Bytes PersistentInitialBytes(const Value& value) {
  if (value.is_constant()) return *value.data;
  int fill = 0;
  if (value.dtype == DType::kI8 && value.quant && !value.quant->zero_point.empty()) {
    fill = static_cast<int>(value.quant->zero_point[0]);
  }
  return Bytes(static_cast<size_t>(value.bytes()), static_cast<std::byte>(fill));
}

std::vector<std::pair<int64_t, int64_t>> PoisonRanges(const Liveness& live, const Plan& plan,
                                                      int32_t time) {
  std::vector<std::pair<int64_t, int64_t>> holding;  // [begin, end) of live data
  for (const BufferRequest& r : live.requests) {
    if (r.first < time && r.last >= time) {
      const int64_t begin = plan.offsets[static_cast<size_t>(r.id)];
      holding.emplace_back(begin, begin + r.bytes);
    }
  }
  std::sort(holding.begin(), holding.end());
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const BufferRequest& r : live.requests) {
    if (r.first != time) continue;
    int64_t cursor = plan.offsets[static_cast<size_t>(r.id)];
    const int64_t end = cursor + r.bytes;
    for (const auto& [b, e] : holding) {
      if (e <= cursor || b >= end) continue;
      if (b > cursor) ranges.emplace_back(cursor, b);
      cursor = std::max(cursor, e);
    }
    if (cursor < end) ranges.emplace_back(cursor, end);
  }
  return ranges;
}

}  // namespace memfold
