#include "memfold/pipeline/training.h"

#include "memfold/io/file.h"
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

}  // namespace memfold
