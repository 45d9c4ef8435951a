// Geometry of 2-D sliding-window ops (conv2d, depthwise conv2d, pooling) in NHWC layout:
// output size and padding from the attributes, computed the way TensorFlow Lite does
// (SAME: out = ceil(in / stride), total padding split with the smaller half first; VALID: no
// padding; explicit: pads given as [top, bottom, left, right]).
//
// Shared by shape inference, kernels, cost and (later) safe-overlap models so that all agree.
// O(1).
#pragma once

#include <cstdint>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"

namespace memfold {

struct Window2D {
  int64_t in_h = 0, in_w = 0;
  int64_t out_h = 0, out_w = 0;
  int64_t k_h = 0, k_w = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dil_h = 1, dil_w = 1;
  int64_t pad_top = 0, pad_left = 0;
};

// Reads attributes "stride", "dilation" (optional), "padding", "pads".
Result<Window2D> ComputeWindow(const Attrs& attrs, int64_t in_h, int64_t in_w, int64_t k_h,
                               int64_t k_w);

// Fused activation attribute ("none", "relu", "relu6", "relu_n1_to_1") as a clamp range.
struct ActivationRange {
  float min;
  float max;
};
Result<ActivationRange> ParseActivation(const Attrs& attrs);

}  // namespace memfold
