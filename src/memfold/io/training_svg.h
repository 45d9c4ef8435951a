// The picture of one training step's live memory under several recomputation strategies, as a
// self-contained SVG document (no scripts, fonts or links).
//
// TrainingSvg draws the live memory of one training step (forward then backward) under
// several recomputation strategies on one shared y axis, stacked by kind (weights and
// optimizer state are persistent; feature maps, gradients and workspace live in the arena),
// plus the peak breakdown as one stacked bar per strategy (Echo's Figure 4). Long schedules
// are sampled to a few hundred columns, each showing the step of its stretch with the most
// live bytes, so the peak is never lost. O(T) per strategy.
//
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "memfold/plan/profile.h"

namespace memfold {

// One strategy's planned training step, as TrainingSvg draws it.
struct StrategyMemory {
  std::string strategy;          // "none", "mirror", "echo"
  const MemoryProfile* profile;  // live curves by kind and the peak breakdown
  size_t forward_nodes;          // schedule[0, forward_nodes) is the forward pass
  int recomputed_nodes = 0;
};

std::string TrainingSvg(std::span<const StrategyMemory> strategies, std::string_view title);

}  // namespace memfold
