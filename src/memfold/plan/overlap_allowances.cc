#include "memfold/plan/overlap_allowances.h"

#include <algorithm>
#include <map>

#include "memfold/ops/registry.h"

namespace memfold {

void AddOverlapAllowances(const Graph& graph, OverlapSource source, Liveness* live,
                          int64_t replay_budget) {
  for (size_t pos = 0; pos < graph.schedule.size(); ++pos) {
    const Node& node = graph.node(graph.schedule[pos]);
    const OpDef* def = OpOf(node);
    if (def == nullptr || def->alias || node.outputs.empty()) continue;
    const int32_t out = live->buffer_of[static_cast<size_t>(node.outputs[0])];
    if (out == kNoBuffer || live->requests[static_cast<size_t>(out)].first != NodeTime(pos))
      continue;
    // O_s models contiguous outputs: one written in rows of a concat overlaps nothing.
    if (ViewRows(*live, node.outputs[0]).row_bytes != 0) continue;
    const int64_t elements = graph.value(node.outputs[0]).elements();
    const bool replay = source == OverlapSource::kAlgorithmic && elements <= replay_budget;
    const OverlapFn model = replay ? def->overlap_algorithmic : def->overlap_analytic;
    if (model == nullptr) continue;
    if (replay) replay_budget -= elements;
    // Per dying input buffer, the smallest O_s over the slots that read it: each slot's O_s
    // only protects that slot's reads (concat(m, m) reads m twice, at different times).
    std::map<int32_t, int64_t> allowance;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const ValueId v = node.inputs[k];
      const int32_t in = v == kNoValue ? kNoBuffer : live->buffer_of[static_cast<size_t>(v)];
      if (in == kNoBuffer || in == out ||
          live->requests[static_cast<size_t>(in)].last != NodeTime(pos))
        continue;
      const std::optional<int64_t> os = model(graph, node, static_cast<int>(k));
      const int64_t bytes = os ? std::max<int64_t>(*os, 0) : 0;
      auto [it, fresh] = allowance.emplace(in, bytes);
      if (!fresh) it->second = std::min(it->second, bytes);
    }
    for (const auto& [in, bytes] : allowance) {
      if (bytes > 0) live->requests[static_cast<size_t>(out)].may_overlap.push_back({in, bytes});
    }
  }
}

}  // namespace memfold
