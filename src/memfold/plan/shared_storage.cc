#include "memfold/plan/shared_storage.h"

#include <numeric>

#include "memfold/ops/registry.h"

namespace memfold {

SharedStorage ComputeSharedStorage(const Graph& graph) {
  SharedStorage shared;
  const auto values = static_cast<size_t>(graph.num_values());
  shared.root.resize(values);
  std::iota(shared.root.begin(), shared.root.end(), 0);
  shared.persistent.assign(values, 0);
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    shared.persistent[static_cast<size_t>(v)] = graph.value(v).role == Role::kState;
  }
  for (NodeId id : graph.schedule) {  // producers first, so a chain resolves as it grows
    const Node& node = graph.node(id);
    const OpDef* def = OpOf(node);
    if (def == nullptr) continue;
    auto share = [&](size_t output, size_t input, bool written) {
      if (input >= node.inputs.size() || output >= node.outputs.size()) return;
      const ValueId root = shared.root[static_cast<size_t>(node.inputs[input])];
      shared.root[static_cast<size_t>(node.outputs[output])] = root;
      if (written) shared.persistent[static_cast<size_t>(root)] = 1;
    };
    if (def->alias) share(0, 0, false);
    for (size_t k = 0; k < def->updates_input.size(); ++k) {
      if (def->updates_input[k] >= 0) share(k, static_cast<size_t>(def->updates_input[k]), true);
    }
  }
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    const auto root = static_cast<size_t>(shared.root[static_cast<size_t>(v)]);
    shared.persistent[static_cast<size_t>(v)] = shared.persistent[root];
  }
  return shared;
}

}  // namespace memfold
