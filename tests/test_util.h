// Helpers shared by the end-to-end training tests (tests/*_test.cc).
//
// LossWithMoved is the forward half of a central finite difference: it runs a copy of a
// forward graph, unplanned, with one element of one f32 parameter moved by `delta`, and
// returns the graph's first output (the scalar loss). The graph itself is left unchanged.
// O(one forward run).
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "memfold/exec/executor.h"

namespace memfold {

// The loss of `forward` on `inputs` with element `element` of parameter `param` moved by
// `delta`.
inline float LossWithMoved(const Graph& forward, ValueId param, int64_t element, float delta,
                           const std::vector<Bytes>& inputs = {}) {
  Graph g = forward;
  auto data = std::make_shared<Bytes>(*g.value(param).data);
  float w;
  std::memcpy(&w, data->data() + 4 * element, 4);
  w += delta;
  std::memcpy(data->data() + 4 * element, &w, 4);
  g.value(param).data = data;
  Result<RunOutputs> out = RunUnplanned(g, inputs);
  float loss;
  std::memcpy(&loss, out->outputs[0].data(), 4);
  return loss;
}

}  // namespace memfold
