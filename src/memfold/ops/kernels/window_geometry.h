// Geometry of 2-D sliding-window ops (conv2d, depthwise conv2d, pooling) in NHWC layout, and
// fused activation ranges, computed the way TensorFlow Lite does (SAME: out = ceil(in /
// stride), total padding split with the smaller half first; VALID: no padding; explicit: pads
// given as [top, bottom, left, right]).
//
// Freestanding (kernels run it on the device too). ops/window.h validates attributes and then
// uses the same arithmetic, so inference, kernels, cost and safe-overlap models all agree. O(1).
//
// Preconditions: attributes already validated (ops/window.h ComputeWindow, ParseActivation).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>

#include "memfold/ops/kernels/kernel_context.h"

namespace memfold {

struct Window2D {
  int64_t in_h = 0, in_w = 0;
  int64_t out_h = 0, out_w = 0;
  int64_t k_h = 0, k_w = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t dil_h = 1, dil_w = 1;
  int64_t pad_top = 0, pad_left = 0;
};

// Fills out_h/out_w and the leading pads of `w` (sizes, strides and dilations set) for
// `padding` "same", "valid" or "explicit" (`pads` = [top, bottom, left, right]).
inline void PlaceWindow(std::string_view padding, std::span<const int64_t> pads, Window2D* w) {
  const int64_t eff_h = (w->k_h - 1) * w->dil_h + 1;
  const int64_t eff_w = (w->k_w - 1) * w->dil_w + 1;
  if (padding == "same") {
    w->out_h = (w->in_h + w->stride_h - 1) / w->stride_h;
    w->out_w = (w->in_w + w->stride_w - 1) / w->stride_w;
    w->pad_top = std::max<int64_t>(0, (w->out_h - 1) * w->stride_h + eff_h - w->in_h) / 2;
    w->pad_left = std::max<int64_t>(0, (w->out_w - 1) * w->stride_w + eff_w - w->in_w) / 2;
    return;
  }
  int64_t pad_h = 0, pad_w = 0;
  if (padding == "explicit") {
    w->pad_top = pads[0];
    w->pad_left = pads[2];
    pad_h = pads[0] + pads[1];
    pad_w = pads[2] + pads[3];
  }
  w->out_h = (w->in_h + pad_h - eff_h) / w->stride_h + 1;
  w->out_w = (w->in_w + pad_w - eff_w) / w->stride_w + 1;
}

// The window of a node with attributes "stride", "dilation" (optional), "padding", "pads".
inline Window2D KernelWindow(const AttrArgs& attrs, int64_t in_h, int64_t in_w, int64_t k_h,
                             int64_t k_w) {
  Window2D w;
  w.in_h = in_h;
  w.in_w = in_w;
  w.k_h = k_h;
  w.k_w = k_w;
  if (const AttrArg* s = attrs.Find("stride")) {
    w.stride_h = s->ints[0];
    w.stride_w = s->ints[1];
  }
  if (const AttrArg* d = attrs.Find("dilation")) {
    w.dil_h = d->ints[0];
    w.dil_w = d->ints[1];
  }
  const AttrArg* pads = attrs.Find("pads");
  PlaceWindow(attrs.Str("padding"), pads ? pads->ints : std::span<const int64_t>{}, &w);
  return w;
}

// Fused activation as a clamp range.
struct ActivationRange {
  float min;
  float max;
};

// The range of "none", "relu", "relu6" or "relu_n1_to_1"; nullptr-free: anything else is
// `none` (ParseActivation rejects it before a kernel runs).
inline ActivationRange ActivationRangeOf(std::string_view name) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  if (name == "relu") return {0.0f, kInf};
  if (name == "relu6") return {0.0f, 6.0f};
  if (name == "relu_n1_to_1") return {-1.0f, 1.0f};
  return {-kInf, kInf};
}

// The node's fused activation ("none" when it has none).
inline ActivationRange KernelActivation(const AttrArgs& attrs) {
  return ActivationRangeOf(attrs.StrOr("activation", "none"));
}

}  // namespace memfold
