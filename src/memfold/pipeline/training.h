// The training entry point: what `memfold train`, `fit`, reports and Python plan. A training
// source is either a forward graph memfold differentiates itself (a zoo training model, a
// .tflite file) or a joint forward + backward graph traced by PyTorch (a .json file
// memfold.torch.export wrote); either is planned under a recomputation strategy by the
// training pipeline (passes/training_plan.h). Cost: the pipeline's.
#pragma once

#include <optional>
#include <string>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"
#include "memfold/joint/joint_graph.h"
#include "memfold/passes/training_plan.h"

namespace memfold {

struct TrainingSource {
  Graph forward;                    // differentiated by memfold (when `joint` is empty)
  std::optional<JointGraph> joint;  // traced elsewhere, backward included
  const Graph& shown() const { return joint ? joint->graph : forward; }
};

// A model name as LoadModel takes it, or a joint graph's .json file. Errors name the file.
Result<TrainingSource> LoadTrainingSource(const std::string& model);

// The training step of `source` planned under `strategy` with the placement strategy `planner`.
Result<PlannedTraining> PlanSource(const TrainingSource& source, const std::string& strategy,
                                   const TrainingConfig& config, const std::string& planner);

// A training model: its first output is a float32 scalar made by a loss layer, as the zoo's
// training models build it (zoo/training_models.cc).
bool IsTrainingModel(const Graph& graph);

}  // namespace memfold
