#include "memfold/exec/overlap_trace.h"

#include <chrono>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/registry.h"

namespace memfold {
namespace {

// Deterministic filler: access patterns of memfold's kernels do not depend on values.
Bytes Filled(int64_t bytes) {
  Bytes data(static_cast<size_t>(bytes));
  for (size_t k = 0; k < data.size(); ++k) data[k] = static_cast<std::byte>((k * 37 + 11) % 251);
  return data;
}

}  // namespace

std::optional<int64_t> SafeOverlapByTrace(const Graph& graph, const Node& node, int input) {
  const OpDef* def = FindOp(node.op);
  if (def == nullptr || def->alias || node.inputs.empty() || node.inputs[0] == kNoValue ||
      static_cast<size_t>(input) >= node.inputs.size() || node.inputs[static_cast<size_t>(input)] == kNoValue) {
    return std::nullopt;
  }
  const KernelEntry* entry = def->FindKernelEntry(graph.value(node.inputs[0]).dtype);
  if (entry == nullptr || entry->traced == nullptr) return std::nullopt;
  std::vector<Bytes> storage;
  storage.reserve(node.inputs.size() + node.outputs.size() + 4);
  auto bind = [&](ValueId v) -> TensorArg {
    if (v == kNoValue) return {};
    const Value& value = graph.value(v);
    storage.push_back(value.is_constant() ? *value.data : Filled(value.bytes()));
    return {&value, storage.back().data()};
  };
  std::vector<TensorArg> inputs, outputs;
  for (ValueId v : node.inputs) inputs.push_back(bind(v));
  for (ValueId v : node.outputs) outputs.push_back(bind(v));
  std::vector<std::byte*> scratch;
  if (def->scratch != nullptr) {
    for (int64_t bytes : def->scratch(graph, node)) {
      storage.push_back(Filled(bytes));
      scratch.push_back(storage.back().data());
    }
  }
  const TensorArg& in = inputs[static_cast<size_t>(input)];
  const TensorArg& out = outputs[0];
  OverlapAccumulator overlap(out.value->bytes());
  TraceTarget target{in.data, in.data + in.value->bytes(), out.data, out.data + out.value->bytes(), &overlap};
  current_trace = &target;
  entry->traced(KernelContext{node, inputs, outputs, scratch});
  current_trace = nullptr;
  return overlap.safe_overlap();
}

}  // namespace memfold

namespace memfold {
namespace {

int OverlappedInput(const Graph& graph, const Node& node) {
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    const ValueId v = node.inputs[k];
    if (v != kNoValue && !graph.value(v).is_constant() && graph.value(v).role != Role::kWeight) return static_cast<int>(k);
  }
  return -1;
}

// Runs `method` and adds its wall time to `total_ms`.
template <typename F>
std::optional<int64_t> Timed(double* total_ms, F method) {
  const auto start = std::chrono::steady_clock::now();
  std::optional<int64_t> result = method();
  *total_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace

OverlapReport AnalyseOverlaps(const Graph& graph, bool with_trace) {
  OverlapReport report;
  for (size_t pos = 0; pos < graph.schedule.size(); ++pos) {
    const Node& node = graph.node(graph.schedule[pos]);
    const OpDef* def = FindOp(node.op);
    NodeOverlap row{pos, graph.schedule[pos], OverlappedInput(graph, node),
                    node.outputs.empty() ? 0 : graph.value(node.outputs[0]).bytes(), {}, {}, {}};
    if (def != nullptr && !def->alias && row.input >= 0) {
      if (def->overlap_analytic) row.analytic = Timed(&report.analytic_ms, [&] { return def->overlap_analytic(graph, node, row.input); });
      if (def->overlap_algorithmic) row.algorithmic = Timed(&report.algorithmic_ms, [&] { return def->overlap_algorithmic(graph, node, row.input); });
      if (with_trace) row.trace = Timed(&report.trace_ms, [&] { return SafeOverlapByTrace(graph, node, row.input); });
    }
    report.nodes.push_back(row);
  }
  return report;
}

}  // namespace memfold
