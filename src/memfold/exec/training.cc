#include "memfold/exec/training.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "memfold/exec/process_memory.h"
#include "memfold/ops/registry.h"
#include "memfold/plan/shared_storage.h"

namespace memfold {
namespace {

// The exclusive upper bound of the integers `v` may hold, from the ops that read it.
int64_t IntegerRange(const Graph& g, ValueId v) {
  int64_t range = 1000;  // the contract's int32 rule, when no reader constrains it
  for (NodeId id : g.schedule) {
    const Node& n = g.node(id);
    const IndexRule index = RulesOf(n).index;
    const auto k = static_cast<size_t>(index.input);
    if (index.input < 0 || n.inputs.size() <= k || n.inputs[k] != v) continue;
    const Shape& table = g.value(n.inputs[0]).shape;
    range = std::min(range, index.axis < 0 ? table.back() : table[static_cast<size_t>(index.axis)]);
  }
  return std::max<int64_t>(range, 1);
}

// The resident size once the heap's free pages are back with the OS, so that what a session
// adds after it is its own and not pages a freed allocation left resident.
int64_t TrimmedResidentBytes() {
  ReturnFreedHeapMemory();
  return ResidentBytes();
}

}  // namespace

std::vector<Bytes> TrainingInputs(const Graph& graph) {
  std::vector<Bytes> inputs = DefaultInputs(graph);
  for (size_t k = 0; k < graph.inputs.size(); ++k) {
    const Value& v = graph.value(graph.inputs[k]);
    if (v.dtype != DType::kI32 && v.dtype != DType::kI64) continue;
    const int64_t range = IntegerRange(graph, graph.inputs[k]);
    for (int64_t e = 0; e < v.elements(); ++e) {
      const int64_t value = (7 * e + 3) % range;
      if (v.dtype == DType::kI64) {
        std::memcpy(inputs[k].data() + 8 * e, &value, 8);
      } else {
        const auto narrow = static_cast<int32_t>(value);
        std::memcpy(inputs[k].data() + 4 * e, &narrow, 4);
      }
    }
  }
  return inputs;
}

int64_t CheckedStepBytes(const Graph& graph, const GraphPlan& plan,
                         const std::vector<ValueId>& gradients) {
  int64_t persistent = 0;
  const SharedStorage& shared = plan.liveness.shared;
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    if (shared.persistent[static_cast<size_t>(v)] && shared.root[static_cast<size_t>(v)] == v)
      persistent += graph.value(v).bytes();
  }
  int64_t captured = 0;
  for (ValueId v : gradients) captured += graph.value(v).bytes();
  const std::vector<int64_t> live = LiveBytesPerStep(plan.liveness);
  const int64_t live_peak = live.empty() ? 0 : *std::max_element(live.begin(), live.end());
  return plan.plan.arena_bytes + 2 * persistent + live_peak + 2 * captured;
}

Trainer::Trainer(const Graph& graph, std::vector<ValueId> gradients, const GraphPlan& plan)
    : graph_(graph),
      gradients_(std::move(gradients)),
      plan_(plan),
      planned_resident_(TrimmedResidentBytes()),
      planned_(graph) {
  const int64_t after = ResidentBytes();
  planned_resident_ = planned_resident_ < 0 || after < 0 ? -1 : after - planned_resident_;
}

Result<StepResult> Trainer::Step(const std::vector<Bytes>& inputs) {
  StepResult step;
  ExecOptions options;
  options.capture = gradients_;
  options.layer_ms = &step.layer_ms;
  const bool peak_reset = ResetPeakResident();
  const int64_t before = ResidentBytes();
  MF_ASSIGN_OR_RETURN(RunOutputs planned,
                      planned_.Run(inputs, &plan_.liveness, &plan_.plan, options));
  for (const auto& [layer, ms] : step.layer_ms) step.step_ms += ms;
  const int64_t peak = PeakResidentBytes();
  if (peak_reset && before >= 0 && peak >= 0 && planned_resident_ >= 0)
    step.measured_peak_bytes = planned_resident_ + (peak - before);
  options.layer_ms = nullptr;
  if (!unplanned_) unplanned_.emplace(graph_);
  MF_ASSIGN_OR_RETURN(RunOutputs unplanned, unplanned_->Run(inputs, nullptr, nullptr, options));
  if (planned.outputs != unplanned.outputs || planned.captured != unplanned.captured) {
    return Status::Error(
        "the planned training step differs from the unplanned one: the plan is unsafe");
  }
  std::memcpy(&step.loss, planned.outputs[0].data(), 4);
  step.gradients = std::move(planned.captured);
  return step;
}

Result<double> Trainer::TimedStep(const std::vector<Bytes>& inputs) {
  std::map<std::string, double> layer_ms;
  ExecOptions options;
  options.poison = false;
  options.layer_ms = &layer_ms;
  MF_RETURN_IF_ERROR(planned_.Run(inputs, &plan_.liveness, &plan_.plan, options).status());
  double ms = 0;
  for (const auto& [layer, layer_time] : layer_ms) ms += layer_time;
  return ms;
}

}  // namespace memfold
