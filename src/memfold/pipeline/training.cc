#include "memfold/pipeline/training.h"

#include <algorithm>
#include <memory>

#include "memfold/exec/process_memory.h"
#include "memfold/io/file.h"
#include "memfold/io/text.h"
#include "memfold/pipeline/model_loader.h"

namespace memfold {

Result<TrainingSource> LoadTrainingSource(const std::string& model) {
  TrainingSource source;
  if (model.size() > 5 && model.compare(model.size() - 5, 5, ".json") == 0) {
    MF_ASSIGN_OR_RETURN(const std::string text, ReadWholeFile(model));
    if (!IsJointGraphText(text)) {
      return Status::Error(model + " is not a joint graph (memfold.torch.export writes them)");
    }
    Result<JointGraph> joint = ReadJointGraph(text);
    if (!joint.ok()) return Status::Error(model + ": " + joint.status().message());
    source.joint = std::move(joint).value();
    return source;
  }
  MF_ASSIGN_OR_RETURN(source.forward, LoadModel(model));
  return source;
}

Result<PlannedTraining> PlanSource(const TrainingSource& source, const std::string& strategy,
                                   const TrainingConfig& config, const std::string& planner) {
  if (source.joint) return PlanJointGraph(*source.joint, strategy, planner);
  return PlanTraining(source.forward, strategy, config, planner);
}

bool IsTrainingModel(const Graph& graph) {
  if (graph.outputs.empty()) return false;
  const Value& loss = graph.value(graph.outputs[0]);
  return loss.dtype == DType::kF32 && loss.elements() == 1 && loss.producer != kNoNode &&
         graph.node(loss.producer).layer == "loss";
}

namespace {

// The median of `values` (the upper one of an even count); 0 when empty.
double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

void Starting(const StepProgress& progress, const std::string& what) {
  if (progress.starting) progress.starting(what);
}

void Done(const StepProgress& progress, const std::string& result) {
  if (progress.done) progress.done(result);
}

std::string Loss(float loss) {
  char text[32];
  std::snprintf(text, sizeof(text), "loss %.5f", static_cast<double>(loss));
  return text;
}

}  // namespace

double TrainingRun::median_step_ms() const { return Median(step_ms); }

double StrategyTiming::median_ms() const { return Median(runs); }

Result<TrainingRun> TrainChecked(const PlannedTraining& p, int steps,
                                 const StepProgress& progress) {
  const int64_t needed = CheckedStepBytes(p.graph, p.plan, p.training.grads);
  const int64_t available = AvailableMemoryBytes();
  if (available >= 0 && needed > available) {
    return Status::Error("a checked training step needs about " + HumanBytes(needed) +
                         " (the planned step and its unplanned twin) but the machine has " +
                         HumanBytes(available) +
                         " available; plan without running steps, or use a smaller batch");
  }
  Trainer trainer(p.graph, p.training.grads, p.plan);
  const std::vector<Bytes> inputs = TrainingInputs(p.graph);
  TrainingRun run;
  for (int step = 0; step < steps; ++step) {
    Starting(progress, "step " + std::to_string(step + 1) + " of " + std::to_string(steps) +
                           " (planned and unplanned)");
    Result<StepResult> result = trainer.Step(inputs);
    if (!result.ok())
      return Status::Error("step " + std::to_string(step) + ": " + result.status().message());
    Done(progress, Loss(result->loss));
    run.losses.push_back(result->loss);
    run.measured_peak_bytes = std::max(run.measured_peak_bytes, result->measured_peak_bytes);
    run.step_ms.push_back(result->step_ms);
    for (const auto& [layer, ms] : result->layer_ms) run.layer_ms[layer] += ms;
    run.last = std::move(result).value();
  }
  return run;
}

Result<std::vector<StrategyTiming>> TimeInterleaved(const std::vector<PlannedTraining>& planned,
                                                    int rounds, const StepProgress& progress) {
  const int64_t available = AvailableMemoryBytes();
  const std::vector<Bytes> inputs = TrainingInputs(planned.front().graph);
  std::vector<std::unique_ptr<Trainer>> trainers;
  std::vector<StrategyTiming> timings(planned.size());
  int64_t alive = 0;
  for (size_t s = 0; s < planned.size(); ++s) {
    const PlannedTraining& p = planned[s];
    const int64_t needed = alive + CheckedStepBytes(p.graph, p.plan, p.training.grads);
    if (available >= 0 && needed > available) {
      return Status::Error("checking " + p.strategy() + "'s step beside the other " +
                           "strategies' sessions needs about " + HumanBytes(needed) +
                           " but the machine has " + HumanBytes(available) +
                           " available; time the strategies one at a time");
    }
    Starting(progress, "checked step (" + p.strategy() + ", planned and unplanned)");
    trainers.push_back(std::make_unique<Trainer>(p.graph, p.training.grads, p.plan));
    Result<StepResult> checked = trainers.back()->Step(inputs);
    if (!checked.ok()) return Status::Error(p.strategy() + ": " + checked.status().message());
    trainers.back()->DropTwin();
    Done(progress, Loss(checked->loss));
    alive += p.profile.breakdown.total();
    timings[s].checked = std::move(checked).value();
  }
  for (int round = 0; round < rounds; ++round) {
    Starting(progress, "round " + std::to_string(round + 1) + " of " + std::to_string(rounds) +
                           " (one planned step of each strategy)");
    for (size_t k = 0; k < planned.size(); ++k) {
      const size_t s = (k + static_cast<size_t>(round)) % planned.size();
      MF_ASSIGN_OR_RETURN(const double ms, trainers[s]->TimedStep(inputs));
      timings[s].runs.push_back(ms);
    }
    Done(progress, "");
  }
  return timings;
}

}  // namespace memfold
