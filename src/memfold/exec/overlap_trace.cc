#include "memfold/exec/overlap_trace.h"

#include <algorithm>
#include <chrono>

#include "memfold/ops/kernel_args.h"
#include "memfold/ops/kernels/access.h"
#include "memfold/ops/registry.h"

namespace memfold {
namespace {

// Deterministic filler: access patterns of memfold's kernels do not depend on values.
void Fill(std::byte* data, int64_t bytes) {
  for (int64_t k = 0; k < bytes; ++k) data[k] = static_cast<std::byte>((k * 37 + 11) % 251);
}

// The trace method's watch over one block holding the output, then the traced input: writes
// of the output and the reads of the input that can still lower O_s feed the accumulator. A
// read of input byte r lowers it only when N_out - max_written + r < O_s so far, so the watched
// reads are the input bytes below max_written + O_s - N_out.
class OverlapWatch final : public AccessWatch {
 public:
  OverlapWatch(const std::byte* block, int64_t output_bytes, int64_t input_bytes)
      : input_(block + output_bytes), n_out_(output_bytes), overlap_(output_bytes) {
    begin = block;
    end = block + output_bytes + input_bytes;
    Narrow();
  }
  void Read(const std::byte* p, int64_t) override {
    overlap_.Read(p - input_);
    Narrow();
  }
  void Write(const std::byte* p, int64_t bytes) override {
    if (p >= input_) return;
    max_written_ = std::max(max_written_, p - begin + bytes);
    overlap_.Write(p - begin + bytes);
    Narrow();
  }
  int64_t safe_overlap() const { return overlap_.safe_overlap(); }

 private:
  void Narrow() {
    read_begin = input_;
    read_end = std::min(
        end, input_ + std::max<int64_t>(0, max_written_ + overlap_.safe_overlap() - n_out_));
  }
  const std::byte* input_;
  int64_t n_out_;
  int64_t max_written_ = 0;
  OverlapAccumulator overlap_;
};

}  // namespace

std::optional<int64_t> SafeOverlapByTrace(const Graph& graph, const Node& node, int input) {
  const OpDef* def = OpOf(node);
  if (def == nullptr || def->alias || node.inputs.empty() || node.inputs[0] == kNoValue ||
      static_cast<size_t>(input) >= node.inputs.size() ||
      node.inputs[static_cast<size_t>(input)] == kNoValue || node.outputs.empty()) {
    return std::nullopt;
  }
  const KernelEntry* entry = def->FindKernelEntry(graph.value(node.inputs[0]).dtype);
  if (entry == nullptr || entry->traced == nullptr) return std::nullopt;
  const int64_t in_bytes = graph.value(node.inputs[static_cast<size_t>(input)]).bytes();
  const int64_t out_bytes = graph.value(node.outputs[0]).bytes();
  Bytes block(static_cast<size_t>(out_bytes + in_bytes));
  Fill(block.data(), out_bytes + in_bytes);
  std::vector<Bytes> storage;  // every other tensor, each in its own allocation
  storage.reserve(node.inputs.size() + node.outputs.size() + 4);
  auto own = [&](int64_t bytes) {
    storage.emplace_back(static_cast<size_t>(bytes));
    Fill(storage.back().data(), bytes);
    return storage.back().data();
  };
  // Every tensor gets its own bytes, except input `input` and output 0, which share `block`.
  std::vector<std::byte*> where(static_cast<size_t>(graph.num_values()), nullptr);
  auto bind = [&](ValueId v, std::byte* data) {
    if (v == kNoValue) return;
    const Value& value = graph.value(v);
    std::byte*& at = where[static_cast<size_t>(v)];
    if (data != nullptr) {
      at = data;
    } else if (at == nullptr) {
      at = value.is_constant() ? storage.emplace_back(*value.data).data() : own(value.bytes());
    }
  };
  bind(node.inputs[static_cast<size_t>(input)], block.data() + out_bytes);
  bind(node.outputs[0], block.data());
  for (ValueId v : node.inputs) bind(v, nullptr);
  for (ValueId v : node.outputs) bind(v, nullptr);
  const NodeKernelArgs args = KernelArgsOf(graph, node, where);
  std::vector<std::byte*> scratch;
  if (def->scratch != nullptr) {
    for (int64_t bytes : def->scratch(graph, node)) scratch.push_back(own(bytes));
  }
  OverlapWatch watch(block.data(), out_bytes, in_bytes);
  {
    ScopedWatch scope(&watch);
    entry->traced(args.Context(scratch));
  }
  return watch.safe_overlap();
}

}  // namespace memfold

namespace memfold {
namespace {

int OverlappedInput(const Graph& graph, const Node& node) {
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    const ValueId v = node.inputs[k];
    if (v != kNoValue && !graph.value(v).is_constant() && graph.value(v).role != Role::kWeight)
      return static_cast<int>(k);
  }
  return -1;
}

// Runs `method` and adds its wall time to `total_ms`.
template <typename F>
std::optional<int64_t> Timed(double* total_ms, F method) {
  const auto start = std::chrono::steady_clock::now();
  std::optional<int64_t> result = method();
  *total_ms +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace

OverlapReport AnalyseOverlaps(const Graph& graph, bool with_trace) {
  OverlapReport report;
  for (size_t pos = 0; pos < graph.schedule.size(); ++pos) {
    const Node& node = graph.node(graph.schedule[pos]);
    const OpDef* def = OpOf(node);
    NodeOverlap row{pos,
                    graph.schedule[pos],
                    OverlappedInput(graph, node),
                    node.outputs.empty() ? 0 : graph.value(node.outputs[0]).bytes(),
                    {},
                    {},
                    {}};
    if (def != nullptr && !def->alias && row.input >= 0) {
      if (def->overlap_analytic)
        row.analytic = Timed(&report.analytic_ms,
                             [&] { return def->overlap_analytic(graph, node, row.input); });
      if (def->overlap_algorithmic)
        row.algorithmic = Timed(&report.algorithmic_ms,
                                [&] { return def->overlap_algorithmic(graph, node, row.input); });
      if (with_trace)
        row.trace =
            Timed(&report.trace_ms, [&] { return SafeOverlapByTrace(graph, node, row.input); });
    }
    report.nodes.push_back(row);
  }
  return report;
}

}  // namespace memfold
