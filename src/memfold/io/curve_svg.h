// The memory / extra-work curve of `memfold plan --pareto` as a self-contained SVG: arena
// bytes (y, from zero) against the compute overhead factor (x, total FLOPs over the model's,
// from 1), each point a verified plan, joined as a staircase (a point's arena holds until the
// next, cheaper-in-memory point). O(points).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace memfold {

struct CurvePoint {
  double overhead = 1;  // total FLOPs / the model's
  int64_t arena_bytes = 0;
  std::string label;  // tooltip
};

// Preconditions: points in order of overhead (any arenas).
std::string CurveSvg(const std::string& title, const std::vector<CurvePoint>& points);

}  // namespace memfold
