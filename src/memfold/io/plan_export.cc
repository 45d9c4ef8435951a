#include "memfold/io/plan_export.h"

#include <sstream>

namespace memfold {
namespace {

// Text that cannot end a C comment or a line.
std::string CommentSafe(std::string text) {
  for (char& c : text) c = (c == '*' || c == '\n' || c == '\r') ? '_' : c;
  return text;
}

}  // namespace

std::vector<int32_t> ValueOffsets(const Graph& graph, const GraphPlan& plan) {
  std::vector<int32_t> offsets(static_cast<size_t>(graph.num_values()), -1);
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    const int32_t buffer = plan.liveness.buffer_of[static_cast<size_t>(v)];
    if (buffer != kNoBuffer)
      offsets[static_cast<size_t>(v)] = static_cast<int32_t>(
          plan.plan.offsets[static_cast<size_t>(buffer)] + ViewOffset(plan.liveness, v));
  }
  return offsets;
}

std::string PlanCHeader(const Graph& graph, const GraphPlan& plan, const std::string& model_label) {
  const std::vector<int32_t> offsets = ValueOffsets(graph, plan);
  std::ostringstream out;
  out << "// Arena plan for " << CommentSafe(model_label) << ", written by memfold (planner "
      << plan.plan.planner << ", verified: no two live buffers overlap).\n"
      << "// Tensor i of the model lives at memfold_tensor_offset[i] bytes into one arena of\n"
      << "// MEMFOLD_ARENA_BYTES bytes aligned to 16; -1 means the tensor is not in the arena\n"
      << "// (a constant or persistent state).\n"
      << "#ifndef MEMFOLD_PLAN_H_\n#define MEMFOLD_PLAN_H_\n\n#include <stdint.h>\n\n"
      << "#define MEMFOLD_ARENA_BYTES " << plan.plan.arena_bytes << "\n"
      << "#define MEMFOLD_TENSOR_COUNT " << graph.num_values() << "\n\n"
      << "static const int32_t memfold_tensor_offset[MEMFOLD_TENSOR_COUNT] = {\n";
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    out << "    " << offsets[static_cast<size_t>(v)] << ",  /* " << v << " "
        << CommentSafe(graph.value(v).name) << ", " << graph.value(v).bytes() << " B */\n";
  }
  out << "};\n\n";
  int scratch = 0;
  for (NodeId n = 0; n < graph.num_nodes(); ++n) {
    for (int32_t r : plan.liveness.scratch_of[static_cast<size_t>(n)]) {
      out << "#define MEMFOLD_SCRATCH_" << scratch << "_OFFSET "
          << plan.plan.offsets[static_cast<size_t>(r)] << "  /* operator " << n << ", "
          << plan.liveness.requests[static_cast<size_t>(r)].bytes << " B */\n";
      ++scratch;
    }
  }
  out << "\n#endif  // MEMFOLD_PLAN_H_\n";
  return out.str();
}

}  // namespace memfold
