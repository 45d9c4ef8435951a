// Hands a plan to other runtimes: per-value arena offsets (aliases share their input's
// offset; values outside the arena get -1) and a C header for hand-written runtimes with the
// arena size, every planned tensor's offset and size, and the scratch buffers. O(values).
#pragma once

#include <string>
#include <vector>

#include "memfold/ir/graph.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {

std::vector<int32_t> ValueOffsets(const Graph& graph, const GraphPlan& plan);

// `model_label` is quoted in the header comment.
std::string PlanCHeader(const Graph& graph, const GraphPlan& plan, const std::string& model_label);

}  // namespace memfold
