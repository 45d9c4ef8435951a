// The training entry point: what `memfold train`, `fit`, reports and Python plan. A training
// source is either a forward graph memfold differentiates itself (a zoo training model, a
// .tflite file) or a joint forward + backward graph traced by PyTorch (a .json file
// memfold.torch.export wrote); either is planned under a recomputation strategy by the
// training pipeline (passes/training_plan.h). Cost: the pipeline's.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/exec/training.h"
#include "memfold/ir/graph.h"
#include "memfold/joint/joint_graph.h"
#include "memfold/passes/training_plan.h"

namespace memfold {

struct TrainingSource {
  Graph forward;                    // differentiated by memfold (when `joint` is empty)
  std::optional<JointGraph> joint;  // traced elsewhere, backward included
  const Graph& shown() const { return joint ? joint->graph : forward; }  // the graph read
};

// A model name as LoadModel takes it, or a joint graph's .json file. Errors name the file.
Result<TrainingSource> LoadTrainingSource(const std::string& model);

// The training step of `source` planned under `strategy` with the placement strategy `planner`.
Result<PlannedTraining> PlanSource(const TrainingSource& source, const std::string& strategy,
                                   const TrainingConfig& config, const std::string& planner);

// A training model: its first output is a float32 scalar made by a loss layer, as the zoo's
// training models build it (zoo/training_models.cc).
bool IsTrainingModel(const Graph& graph);

// What a long run reports as it goes: a step starts (its name), then ends (a result, e.g. the
// loss). Either may be empty.
struct StepProgress {
  std::function<void(const std::string& what)> starting;
  std::function<void(const std::string& result)> done;
};

// `steps` planned training steps, each checked against an unplanned twin (exec/training.h).
struct TrainingRun {
  std::vector<float> losses;
  StepResult last;                         // the last step (its gradients)
  std::map<std::string, double> layer_ms;  // planned runs' time per layer type, summed
  int64_t measured_peak_bytes = -1;        // the highest over the steps; -1: unknown
  std::vector<double> step_ms;             // per step
  double median_step_ms() const;
};
// Errors: a step needing more memory than the machine has available (before any is made), a
// step that differs from its twin. Precondition: steps >= 1.
Result<TrainingRun> TrainChecked(const PlannedTraining& planned, int steps,
                                 const StepProgress& progress = {});

// Every strategy's first step checked against its unplanned twin (then freed), then `rounds`
// planned steps of all of them interleaved in one process, the order rotating every round so
// that the machine's drift falls on all alike. The sessions stay alive together: before each
// is made, the footprints of those alive plus what its checked step needs are compared with
// the memory available.
struct StrategyTiming {
  StepResult checked;        // the checked first step
  std::vector<double> runs;  // the timed steps' operators' time, ms
  double median_ms() const;
};
Result<std::vector<StrategyTiming>> TimeInterleaved(const std::vector<PlannedTraining>& planned,
                                                    int rounds, const StepProgress& progress = {});

}  // namespace memfold
