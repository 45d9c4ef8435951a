// The Python extension memfold._memfold (pybind11): memfold's joint-graph reader and training
// pipeline for PyTorch's partitioner (python/memfold/torch.py). The graph crosses as the
// joint-graph file's JSON text (joint/joint_graph.h), so Python and `memfold train FILE` read
// the same format through the same code. Errors raise ValueError with memfold's message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <vector>

#include "memfold/joint/joint_graph.h"
#include "memfold/passes/budget.h"
#include "memfold/passes/echo.h"
#include "memfold/passes/recompute.h"
#include "memfold/passes/stash_model.h"

namespace py = pybind11;

namespace {

template <typename T>
T OrRaise(memfold::Result<T> result) {
  if (!result.ok()) throw py::value_error(result.status().message());
  return std::move(result).value();
}

// The node ids marked in `choice` among the file's first `nodes`.
std::vector<int> Marked(const std::vector<char>& choice, size_t nodes) {
  std::vector<int> ids;
  for (size_t id = 0; id < nodes && id < choice.size(); ++id) {
    if (choice[id]) ids.push_back(static_cast<int>(id));
  }
  return ids;
}

// Plans the joint graph `json_text` under `strategy` and says what the plan keeps.
py::dict PlanJoint(const std::string& json_text, const std::string& strategy,
                   const std::string& planner) {
  memfold::JointGraph joint = OrRaise(memfold::ReadJointGraph(json_text));
  const std::map<std::string, int> kept = joint.kept_forward;
  const auto nodes = static_cast<size_t>(joint.graph.num_nodes());
  memfold::PlannedTraining p =
      OrRaise(memfold::PlanJointGraph(std::move(joint), strategy, planner));
  py::dict out;
  out["recomputed"] = Marked(p.recomputed, nodes);
  out["chosen_strategy"] = p.chosen_strategy;
  out["fell_back"] = p.fell_back;
  out["total_bytes"] = p.profile.breakdown.total();
  out["feature_map_bytes"] = p.profile.breakdown.feature_maps;
  out["echo_own_bytes"] = p.echo_own_bytes;
  out["recomputed_nodes"] = p.recomputed_nodes;
  out["forward_nodes"] = p.training.forward_nodes;
  out["kept_forward"] = kept;
  out["plan_ms"] = p.plan_ms;
  return out;
}

// Echo's and Mirror's recomputation choices for the joint graph, without planning, and the
// memory-budget choice for `budget` bytes when it is not negative.
py::dict RecomputeChoices(const std::string& json_text, int64_t budget) {
  const memfold::JointGraph joint = OrRaise(memfold::ReadJointGraph(json_text));
  const auto nodes = static_cast<size_t>(joint.graph.num_nodes());
  const memfold::StashModel stash(joint.graph, joint.training);
  py::dict out, kept;
  auto add = [&](const char* name, const std::vector<char>& choice) {
    out[name] = Marked(choice, nodes);
    kept[name] = stash.TotalKeptBytes(choice);
  };
  add("echo", memfold::EchoChoice(joint.graph, joint.training));
  add("mirror", memfold::MirrorChoice(joint.graph, joint.training));
  if (budget >= 0) add("budget", memfold::BudgetChoice(joint.graph, joint.training, budget));
  out["kept_bytes"] = kept;  // memfold's estimate of what each choice keeps
  return out;
}

}  // namespace

PYBIND11_MODULE(_memfold, m) {
  m.doc() = "memfold's joint-graph planning (Echo) for PyTorch";
  m.def("plan_joint", &PlanJoint, py::arg("json_text"), py::arg("strategy") = "echo",
        py::arg("planner") = "mxnet",
        "Plans a memfold-joint-graph (JSON text) under none, mirror or echo; returns the "
        "recomputed node indices, whose graph was kept and the planned bytes.");
  m.def("recompute_choices", &RecomputeChoices, py::arg("json_text"), py::arg("budget") = -1,
        "Echo's and Mirror's choices of forward nodes to recompute (node indices), unplanned, "
        "and with budget >= 0 the fewest-FLOPs choice that keeps at most `budget` bytes.");
}
