// Geometry of 2-D sliding-window ops (conv2d, depthwise conv2d, pooling) in NHWC layout:
// output size and padding from the attributes, computed the way TensorFlow Lite does
// (SAME: out = ceil(in / stride), total padding split with the smaller half first; VALID: no
// padding; explicit: pads given as [top, bottom, left, right]).
//
// Validates the attributes, then uses the kernels' own arithmetic (kernels/window_geometry.h),
// so inference, kernels, cost and safe-overlap models all agree. O(1).
#pragma once

#include <cstdint>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"
#include "memfold/ops/kernels/window_geometry.h"

namespace memfold {

// Reads attributes "stride", "dilation" (optional), "padding", "pads".
Result<Window2D> ComputeWindow(const Attrs& attrs, int64_t in_h, int64_t in_w, int64_t k_h,
                               int64_t k_w);

// Checks the fused activation attribute ("none", "relu", "relu6", "relu_n1_to_1") and
// returns its clamp range.
Result<ActivationRange> ParseActivation(const Attrs& attrs);

}  // namespace memfold
