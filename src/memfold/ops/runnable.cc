#include "memfold/ops/runnable.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "memfold/ops/registry.h"

namespace memfold {
namespace {

// A tensor nothing fills: TFLM hands such tensors (an accelerator's scratch) arena memory as it
// is, so a kernel reading one computes from whatever the memory held before.
bool IsUnwritten(const Graph& graph, ValueId v) {
  const Value& value = graph.value(v);
  return value.role == Role::kWorkspace && value.producer == kNoNode && !value.is_constant() &&
         std::find(graph.inputs.begin(), graph.inputs.end(), v) == graph.inputs.end();
}

}  // namespace

std::vector<OperatorGap> OperatorsThatCannotRun(const Graph& graph) {
  std::vector<OperatorGap> gaps;
  for (size_t pos = 0; pos < graph.schedule.size(); ++pos) {
    const Node& node = graph.node(graph.schedule[pos]);
    const std::string label =
        "operator " + std::to_string(pos) + " '" + node.name + "' (" + node.op + ")";
    const OpDef* def = OpOf(node);
    if (def == nullptr) {
      gaps.push_back({pos, label + " is unknown to memfold; planning still works, execution "
                                   "needs a kernel"});
      continue;
    }
    if (def->alias) continue;
    const auto unwritten = std::find_if(node.inputs.begin(), node.inputs.end(), [&](ValueId in) {
      return in != kNoValue && IsUnwritten(graph, in);
    });
    if (unwritten != node.inputs.end()) {
      gaps.push_back({pos, label + " reads tensor '" + graph.value(*unwritten).name +
                               "', which no operator writes and which is no input, constant or "
                               "variable, so its contents are undefined; planning still works"});
      continue;
    }
    const DType dtype = graph.value(node.inputs[0]).dtype;
    if (def->FindKernel(dtype) == nullptr) {
      gaps.push_back({pos, label + " has no " + std::string(DTypeName(dtype)) +
                               " kernel; planning still works, execution needs a kernel"});
    }
  }
  return gaps;
}

Status CheckRunnable(const Graph& graph, const std::vector<Bytes>& inputs) {
  if (inputs.size() != graph.inputs.size()) {
    return Status::Error("the model has " + std::to_string(graph.inputs.size()) + " inputs, " +
                         std::to_string(inputs.size()) + " were given");
  }
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Value& v = graph.value(graph.inputs[k]);
    if (static_cast<int64_t>(inputs[k].size()) != v.bytes()) {
      return Status::Error("input '" + v.name + "' needs " + std::to_string(v.bytes()) +
                           " bytes (" + std::string(DTypeName(v.dtype)) + " " +
                           ShapeString(v.shape) + "), got " + std::to_string(inputs[k].size()));
    }
  }
  const std::vector<OperatorGap> gaps = OperatorsThatCannotRun(graph);
  if (!gaps.empty()) return Status::Error(gaps[0].reason);
  return Status::Ok();
}

std::vector<Bytes> DefaultInputs(const Graph& graph) {
  std::vector<Bytes> inputs;
  for (ValueId v : graph.inputs) {
    const Value& value = graph.value(v);
    Bytes bytes(static_cast<size_t>(value.bytes()));
    const int64_t n = value.elements();
    auto put = [&](auto sample) {
      using T = decltype(sample);
      for (int64_t k = 0; k < n; ++k) {
        T element;
        if constexpr (std::is_same_v<T, float>) {
          element = static_cast<float>(std::sin(0.01 * static_cast<double>(k)));
        } else if constexpr (std::is_same_v<T, int8_t>) {
          element = static_cast<int8_t>((7 * k + 3) % 256 - 128);
        } else if constexpr (std::is_same_v<T, uint8_t>) {
          element = static_cast<uint8_t>((7 * k + 3) % 256);
        } else if constexpr (std::is_same_v<T, int16_t>) {
          element = static_cast<int16_t>((7 * k + 3) % 65536 - 32768);
        } else {
          element = static_cast<T>((7 * k + 3) % 1000);
        }
        std::memcpy(bytes.data() + k * static_cast<int64_t>(sizeof(T)), &element, sizeof(T));
      }
    };
    VisitElementType(value.dtype, put);  // masks (kBit) are never graph inputs; left zero
    inputs.push_back(std::move(bytes));
  }
  return inputs;
}

}  // namespace memfold
