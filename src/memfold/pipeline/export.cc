#include "memfold/pipeline/export.h"

#include <limits>
#include <vector>

#include "memfold/io/plan_export.h"
#include "memfold/io/tflite_graph_writer.h"
#include "memfold/io/tflite_reader.h"
#include "memfold/io/tflite_writer.h"

namespace memfold {
namespace {

// Whether a plan's offsets fit the 32-bit integers TFLite's offline plan and the C header hold.
Status CheckOffsetsFit(const std::string& flag, int64_t arena_bytes) {
  if (arena_bytes <= std::numeric_limits<int32_t>::max()) return Status::Ok();
  return Status::Error(flag + ": the arena needs " + std::to_string(arena_bytes) +
                       " bytes, beyond the 32-bit offsets the file holds; use a smaller model "
                       "configuration");
}

// Why a rewritten graph cannot be written as a .tflite file, or "" when it can: only
// re-ordering is expressible (TFLM's own kernels copy concatenation inputs and know no
// per-band padding).
std::string NotExpressible(const PlannedProgram& chosen) {
  if (chosen.split()) return "splits operators into bands with explicit padding";
  if (chosen.concat()) return "writes concatenation inputs in place, which TFLM's kernels copy";
  return "";
}

// The .tflite file the plan belongs to: the model's own file, or for a re-ordered graph that
// graph written anew (operators in the new order, tensor k = value k, one subgraph).
Result<TfliteModel> FileForPlan(const std::string& path, const PlannedProgram& chosen) {
  MF_ASSIGN_OR_RETURN(TfliteModel model, ReadTfliteFile(path));
  if (!chosen.rewritten()) return model;
  if (const std::string why = NotExpressible(chosen); !why.empty()) {
    return Status::Error("--emit-tflite: the best plan " + why +
                         "; use --planner diagonal for a plan of the file as it is");
  }
  if (model.subgraphs > 1) {
    return Status::Error("--emit-tflite: the best plan re-orders the operators of a model with " +
                         std::to_string(model.subgraphs) +
                         " subgraphs, which memfold writes only with one; use --planner diagonal");
  }
  MF_ASSIGN_OR_RETURN(Bytes written, GraphToTflite(chosen.graph()));
  return ParseTflite(std::move(written), path + " (re-ordered)");
}

}  // namespace

Result<Bytes> TfliteWithPlan(const std::string& path, const PlannedProgram& chosen) {
  MF_RETURN_IF_ERROR(CheckOffsetsFit("--emit-tflite", chosen.arena_bytes()));
  if (path.rfind("zoo:", 0) == 0) {
    return Status::Error(
        "--emit-tflite rewrites a .tflite model; zoo models have no file (use --emit-c)");
  }
  MF_ASSIGN_OR_RETURN(TfliteModel model, FileForPlan(path, chosen));
  std::vector<int32_t> offsets = ValueOffsets(chosen.graph(), chosen.plan());
  offsets.resize(static_cast<size_t>(model.total_tensors), -1);
  return WithOfflinePlan(model, offsets);
}

Result<std::string> CHeaderOfPlan(const std::string& model, const PlannedProgram& chosen) {
  MF_RETURN_IF_ERROR(CheckOffsetsFit("--emit-c", chosen.arena_bytes()));
  if (chosen.rewritten()) {
    return Status::Error(
        "--emit-c: the best plan re-orders, splits or rewrites concatenations, "
        "so its tensors are not the model's; use --planner diagonal, or "
        "--emit-tflite for a re-ordered model");
  }
  return PlanCHeader(chosen.graph(), chosen.plan(), model);
}

}  // namespace memfold
