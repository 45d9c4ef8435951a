// Joint forward + backward graphs from outside memfold: the file format PyTorch's AOTAutograd
// joint graph is exported in (python/memfold/torch.py writes it), read into memfold IR with
// the gradient data-dependencies the file itself records, and planned by the same training
// pipeline `memfold train` uses (passes/training_plan.h: Echo, Mirror, the baseline).
//
// Format ("memfold-joint-graph", version 1), one JSON object:
//   values:  [{name, dtype (PyTorch's name: float32, int64, bool, ...), shape, role}], role one
//            of input, weight (a parameter: outside the arena), state (running statistics),
//            activation, gradient;
//   nodes:   [{name, target (e.g. "aten.relu.default"), args (positional; a tensor argument is
//            {"value": id}, a list of tensors {"values": [ids]}), outputs: [value ids],
//            forward: true|false}] in execution order, forward nodes first;
//   forward_outputs: [value ids], params: [value ids], grads: [value ids] (same order; -1 for a
//            parameter without one).
// Each node becomes one memfold node: the op aten_ops.h maps it to, or an opaque node that is
// never recomputed (conservative) when the target is unknown or memfold's inference of the
// mapped op disagrees with the traced types.
// O(V + E) plus the registry's inference per node. Errors name the entry at fault.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"
#include "memfold/passes/gradient.h"
#include "memfold/passes/training_plan.h"

namespace memfold {

struct JointGraph {
  Graph graph;
  TrainingGraph training;
  // Forward targets memfold has no translation for (kept, never recomputed), with counts.
  std::map<std::string, int> opaque_forward;
  int mapped_forward = 0;  // forward nodes translated to memfold ops
};

// Parses and translates a joint graph file's text. Node k of the file is memfold node k.
Result<JointGraph> ReadJointGraph(std::string_view json_text);

// Whether `text` looks like a joint graph file (its "format" key), for loaders that accept
// several formats.
bool IsJointGraphText(std::string_view text);

// Plans a joint graph under `strategy` (none, mirror, echo) and returns the plan, whose
// `recomputed` names the file's forward nodes the backward pass must recompute.
Result<PlannedTraining> PlanJointGraph(JointGraph joint, const std::string& strategy,
                                       const std::string& planner = "mxnet");

}  // namespace memfold
