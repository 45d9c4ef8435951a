// A planned program written where TFLM and C code can use it: the model's .tflite file with the
// plan as its offline memory plan (TFLM's OfflineMemoryAllocation metadata: TFLM then places
// every tensor at memfold's offset), and a C header of the arena size and every value's offset.
// A re-ordered program's file is its graph written anew; programs TFLM's kernels cannot run as
// planned (split bands, concatenations written in place) are refused, naming the planner that
// can. Errors name the flag of the command line they serve. O(model size).
#pragma once

#include <string>

#include "memfold/base/status.h"
#include "memfold/pipeline/program.h"

namespace memfold {

// `path`: the .tflite file the program was planned from.
Result<Bytes> TfliteWithPlan(const std::string& path, const PlannedProgram& program);

// `model`: what the program was loaded from, for the header's comment.
Result<std::string> CHeaderOfPlan(const std::string& model, const PlannedProgram& program);

}  // namespace memfold
