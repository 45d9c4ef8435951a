// The channel axis of a batch normalisation: per-channel statistics over every other axis.
// TensorFlow keeps channels last (the default, axis -1); PyTorch keeps them at axis 1 (NCHW),
// which is how a joint graph traced from PyTorch arrives (torch_bridge/). A tensor is viewed
// as [outer, channels, inner]; element m of channel c (m < outer * inner) is at Index(c, m).
// O(1) per call. Precondition: the axis is in range (inference checks it).
#pragma once

#include <cstdint>
#include <span>

#include "memfold/ir/dtype.h"

namespace memfold {

struct ChannelLayout {
  int64_t outer = 1, channels = 1, inner = 1;

  int64_t per_channel() const { return outer * inner; }
  int64_t Index(int64_t c, int64_t m) const {
    return ((m / inner) * channels + c) * inner + m % inner;
  }
};

// The axis named by `axis` (negative counts from the end), or -1 when out of range.
inline int64_t ResolveAxis(std::span<const int64_t> shape, int64_t axis) {
  const auto rank = static_cast<int64_t>(shape.size());
  const int64_t resolved = axis < 0 ? axis + rank : axis;
  return resolved >= 0 && resolved < rank ? resolved : -1;
}

// Precondition: ResolveAxis(shape, axis) >= 0.
inline ChannelLayout LayoutOf(std::span<const int64_t> shape, int64_t axis) {
  ChannelLayout layout;
  const int64_t a = ResolveAxis(shape, axis);
  for (int64_t k = 0; k < static_cast<int64_t>(shape.size()); ++k) {
    const int64_t d = shape[static_cast<size_t>(k)];
    if (k < a) layout.outer *= d;
    if (k == a) layout.channels = d;
    if (k > a) layout.inner *= d;
  }
  return layout;
}

}  // namespace memfold
