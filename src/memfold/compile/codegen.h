// The code generator of `memfold compile`: a planned model as C++ for a bare-metal target. One
// static arena of exactly the planned size, the constants as const arrays (flash), persistent
// state as static arrays, and every node as a row of runtime/program.h's tables — its kernel
// (the host executor's own, freestanding), its tensors at their planned homes
// (plan/planned_layout.h), attributes, prepared data and scratch offsets — run in the planned
// schedule by memfold_<name>_invoke. Split bands, copy-free views and diagonal overlaps need
// nothing special: they are homes and row layouts, as in the host executor.
//
// Also writes the harness that runs the model once on a given input and reports its outputs
// and stack use through semihosting. O(model bytes) text.
#pragma once

#include <string>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"
#include "memfold/ops/registry.h"
#include "memfold/placement/buffer.h"
#include "memfold/plan/liveness.h"

namespace memfold {

struct GeneratedFile {
  std::string path;  // relative to the tree's root
  std::string text;
};

struct CodegenOptions {
  std::string name;     // C identifier part: memfold_<name>_invoke
  std::string source;   // what the model was loaded from, for comments
  std::string planner;  // for comments
};

// A C identifier made of `text` ([A-Za-z0-9_], never starting with a digit).
std::string CIdentifier(const std::string& text);

// Whether the device build has `def`'s kernel for inputs of `dtype` (its declaration is in a
// header the compiled tree carries; training and BLAS kernels are host-only).
bool HasDeviceKernel(const OpDef& def, DType dtype);

// Why `graph` cannot be compiled (an operator without a freestanding kernel, a value that no
// kernel writes, offsets beyond 32 bits), or OK.
Status CheckCompilable(const Graph& graph, int64_t arena_bytes);

// model/<name>.h and model/<name>.cc.
Result<std::vector<GeneratedFile>> GenerateModel(const Graph& graph, const Liveness& live,
                                                 const Plan& plan, const CodegenOptions& options);

// model/main.cc: runs the model once on `inputs` (one per graph input) and prints
// "memfold-output K HEX" per output and "memfold-stack BYTES".
GeneratedFile GenerateHarness(const Graph& graph, const CodegenOptions& options,
                              const std::vector<Bytes>& inputs);

}  // namespace memfold
