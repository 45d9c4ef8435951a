// The picture of a plan of a graph's tensor arena, as a self-contained SVG document (no
// scripts, fonts or links).
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
// Names from model files are escaped (io/xml.h).
#pragma once

#include <string>
#include <string_view>

#include "memfold/ir/graph.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {

// `title` heads the picture (e.g. "zoo:mobilenet_v2, diagonal plan").
std::string ArenaSvg(const Graph& graph, const GraphPlan& plan, std::string_view title);

}  // namespace memfold
