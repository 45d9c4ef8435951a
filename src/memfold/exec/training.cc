#include "memfold/exec/training.h"

#include <cstring>

#include <chrono>

#include "memfold/io/sha256.h"
#include "memfold/ops/registry.h"
#include "memfold/passes/binarize.h"
#include "memfold/passes/echo.h"
#include "memfold/passes/recompute.h"

namespace memfold {
namespace {

// The exclusive upper bound of the integers `v` may hold, from the ops that read it.
int64_t IntegerRange(const Graph& g, ValueId v) {
  int64_t range = 1000;  // the contract's int32 rule, when no reader constrains it
  for (NodeId id : g.schedule) {
    const Node& n = g.node(id);
    if (n.op == "gather" && n.inputs.size() > 1 && n.inputs[1] == v) range = std::min(range, g.value(n.inputs[0]).shape[0]);
    if (n.op == "softmax_cross_entropy" && n.inputs.size() > 1 && n.inputs[1] == v) range = std::min(range, g.value(n.inputs[0]).shape.back());
  }
  return std::max<int64_t>(range, 1);
}

}  // namespace

namespace {

// Plans with `planner`: "mxnet" (MXNet's storage strategy), "greedy" (TFLM's planner over the
// buffers themselves) or "best" (the smaller of the two). Every strategy uses the same one.
Result<PlannedTraining> Finish(PlannedTraining p, const std::string& planner) {
  MF_ASSIGN_OR_RETURN(p.plan, PlanGraph(p.graph, planner == "greedy" ? "greedy" : "mxnet"));
  if (planner == "best") {
    MF_ASSIGN_OR_RETURN(GraphPlan greedy, PlanGraph(p.graph, "greedy"));
    if (greedy.plan.arena_bytes < p.plan.plan.arena_bytes) p.plan = std::move(greedy);
  }
  p.profile = ProfileMemory(p.graph, p.training.forward_nodes, p.plan);
  return p;
}

}  // namespace

Result<PlannedTraining> PlanTraining(Graph forward, const std::string& strategy, const TrainingConfig& config,
                                     const std::string& planner) {
  if (strategy != "none" && strategy != "mirror" && strategy != "echo") {
    return Status::Error("strategy must be none, mirror or echo, not '" + strategy + "'");
  }
  if (planner != "mxnet" && planner != "greedy" && planner != "best") {
    return Status::Error("training planner must be mxnet, greedy or best, not '" + planner + "'");
  }
  const auto start = std::chrono::steady_clock::now();
  PlannedTraining base;
  base.graph = std::move(forward);
  base.strategy = strategy;
  MF_ASSIGN_OR_RETURN(base.training, BuildTrainingGraph(&base.graph, config));
  for (size_t pos = 0; pos < base.training.forward_nodes; ++pos) {
    base.forward_flops += NodeCost(base.graph, base.graph.node(base.graph.schedule[pos])).flops;
  }
  auto with_recomputation = [&](const std::vector<char>& choice) -> Result<PlannedTraining> {
    PlannedTraining p = base;
    MF_ASSIGN_OR_RETURN(RecomputeResult r, ApplyRecomputation(&p.graph, p.training, choice));
    p.recomputed_nodes = r.recomputed_nodes;
    p.recompute_flops = r.recompute_flops;
    return Finish(std::move(p), planner);
  };
  PlannedTraining chosen;
  if (strategy == "none") {
    MF_ASSIGN_OR_RETURN(chosen, Finish(base, planner));
    chosen.chosen_strategy = "none";
  } else if (strategy == "mirror") {
    MF_ASSIGN_OR_RETURN(chosen, with_recomputation(MirrorChoice(base.graph, base.training)));
    chosen.chosen_strategy = "mirror";
  } else {
    // Echo's choice with 1-bit masks, checked by planning against the baseline (the paper's
    // guarantee) and against Mirror's blanket choice: the smallest plan is kept.
    PlannedTraining echo = base;
    MF_ASSIGN_OR_RETURN(RecomputeResult r, ApplyRecomputation(&echo.graph, echo.training, EchoChoice(base.graph, base.training)));
    echo.recomputed_nodes = r.recomputed_nodes;
    echo.recompute_flops = r.recompute_flops;
    BinarizeMasks(&echo.graph, &echo.training);
    MF_ASSIGN_OR_RETURN(chosen, Finish(std::move(echo), planner));
    chosen.chosen_strategy = "echo";
    const int64_t echo_own = chosen.profile.breakdown.total();
    MF_ASSIGN_OR_RETURN(PlannedTraining mirror, with_recomputation(MirrorChoice(base.graph, base.training)));
    if (mirror.profile.breakdown.total() < chosen.profile.breakdown.total()) {
      chosen = std::move(mirror);
      chosen.chosen_strategy = "mirror";
    }
    MF_ASSIGN_OR_RETURN(PlannedTraining baseline, Finish(std::move(base), planner));
    if (chosen.profile.breakdown.total() >= baseline.profile.breakdown.total()) {
      chosen = std::move(baseline);
      chosen.chosen_strategy = "none";
      chosen.fell_back = true;
    }
    chosen.strategy = strategy;
    chosen.echo_own_bytes = echo_own;
  }
  chosen.plan_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return chosen;
}

std::vector<Bytes> TrainingInputs(const Graph& graph) {
  std::vector<Bytes> inputs = DefaultInputs(graph);
  for (size_t k = 0; k < graph.inputs.size(); ++k) {
    const Value& v = graph.value(graph.inputs[k]);
    if (v.dtype != DType::kI32) continue;
    const int64_t range = IntegerRange(graph, graph.inputs[k]);
    for (int64_t e = 0; e < v.elements(); ++e) {
      const auto value = static_cast<int32_t>((7 * e + 3) % range);
      std::memcpy(inputs[k].data() + 4 * e, &value, 4);
    }
  }
  return inputs;
}

Trainer::Trainer(const Graph& graph, const TrainingGraph& training, const GraphPlan& plan)
    : graph_(graph), training_(training), plan_(plan), planned_(graph), unplanned_(graph) {}

Result<StepResult> Trainer::Step(const std::vector<Bytes>& inputs) {
  StepResult step;
  ExecOptions options;
  options.capture = training_.grads;
  options.layer_ms = &step.layer_ms;
  MF_ASSIGN_OR_RETURN(RunOutputs planned, planned_.Run(inputs, &plan_.liveness, &plan_.plan, options));
  options.layer_ms = nullptr;
  MF_ASSIGN_OR_RETURN(RunOutputs unplanned, unplanned_.Run(inputs, nullptr, nullptr, options));
  if (planned.outputs != unplanned.outputs || planned.captured != unplanned.captured) {
    return Status::Error("the planned training step differs from the unplanned one: the plan is unsafe");
  }
  std::memcpy(&step.loss, planned.outputs[0].data(), 4);
  step.gradients = std::move(planned.captured);
  return step;
}

std::string GradientSha256(const StepResult& step) {
  Bytes all;
  for (const Bytes& g : step.gradients) all.insert(all.end(), g.begin(), g.end());
  return Sha256Hex(all.data(), all.size());
}

}  // namespace memfold
