// The rows of the op registry (see registry.h). Internal to ops/.
#pragma once

#include <vector>

#include "memfold/ops/registry.h"

namespace memfold {

std::vector<OpDef> BuildOpTable();

}  // namespace memfold
