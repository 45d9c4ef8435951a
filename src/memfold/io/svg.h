// Pictures of memory as self-contained SVG documents (no scripts, fonts or links).
//
// ArenaSvg draws one plan of a graph's tensor arena, like TFLM's PrintMemoryPlan but to
// scale: x is the schedule (time step 0 = graph inputs, step i + 1 = the operator at schedule
// position i, labelled with its name), y is the byte offset, and every buffer is a rectangle
// spanning its lifetime and its bytes, with a <title> giving its name, size, offset and
// lifetime. Where the plan lets an output overlap the input that dies at its operator
// (diagonal memory optimisation), the shared bytes are hatched at that step. The arena size
// (the peak) and the lower bound are horizontal lines; the peak step is marked. The width grows
// with the schedule so 60–300 operators stay labelled; buffers under a few pixels in either
// direction (and any beyond the 1,000 largest) are merged into grey runs, so file size stays
// bounded for tens of thousands of buffers.
// O(B + T + pixels of merged buffers).
//
// TrainingSvg draws the live memory of one training step (forward then backward) under
// several recomputation strategies on one shared y axis, stacked by kind (weights and
// optimizer state are persistent; feature maps, gradients and workspace live in the arena),
// plus the peak breakdown as one stacked bar per strategy (Echo's Figure 4). Long schedules
// are sampled to a few hundred columns, each showing the step of its stretch with the most
// live bytes, so the peak is never lost. O(T) per strategy.
//
// Every name that reaches a document passes through XmlEscape: tensor names from model files
// are user input.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "memfold/ir/graph.h"
#include "memfold/plan/plan_graph.h"
#include "memfold/plan/profile.h"

namespace memfold {

// Text made safe for XML content and attribute values: & < > " ' escaped, and bytes that are
// not valid UTF-8, or characters XML 1.0 forbids (controls, U+FFFE, U+FFFF), replaced by
// U+FFFD.
std::string XmlEscape(std::string_view text);

// `title` heads the picture (e.g. "zoo:mobilenet_v2, diagonal plan").
std::string ArenaSvg(const Graph& graph, const GraphPlan& plan, std::string_view title);

// One strategy's planned training step, as TrainingSvg draws it.
struct StrategyMemory {
  std::string strategy;          // "none", "mirror", "echo"
  const MemoryProfile* profile;  // live curves by kind and the peak breakdown
  size_t forward_nodes;          // schedule[0, forward_nodes) is the forward pass
  int recomputed_nodes = 0;
};

std::string TrainingSvg(std::span<const StrategyMemory> strategies, std::string_view title);

}  // namespace memfold
