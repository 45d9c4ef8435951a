// Joint forward + backward graphs from outside memfold: the file format PyTorch's AOTAutograd
// joint graph is exported in (python/memfold/torch.py writes it), read into memfold IR with
// the gradient data-dependencies the file itself records, and planned by the same training
// pipeline `memfold train` uses (passes/training_plan.h: Echo, Mirror, the baseline).
//
// Format ("memfold-joint-graph", version 2), one JSON object:
//   values:  [{name, dtype (PyTorch's name: float32, int64, bool, ...), shape, role}], role one
//            of input, weight (a parameter: outside the arena), state, activation, gradient;
//   nodes:   [{name, target (e.g. "aten.relu.default"), inputs: [value ids], outputs: [value
//            ids], forward: true|false, view: true when output 0 shares the storage of input 0,
//            flops: the operator's arithmetic, recompute: false for operators that must not
//            run twice (random draws, in-place updates)}] in execution order, forward first;
//   forward_outputs: [value ids], params: [value ids], grads: [value ids] (same order; -1 for a
//            parameter without one).
// Every node is modelled as memory, whatever its operator: a view is memfold's traced_view
// (an alias: no bytes of its own), any other recomputable node a traced_op whose outputs are
// the traced types and whose cost is its flops (so Echo never re-runs compute-heavy ones),
// and a node that must not run twice an opaque node that is never recomputed. memfold never
// runs these graphs: the framework that traced them re-runs what Echo recomputes.
// O(V + E). Errors name the entry at fault.
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
  // Forward targets that must not run twice (kept, never recomputed), with counts.
  std::map<std::string, int> kept_forward;
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
