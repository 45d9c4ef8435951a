// Pad folding: an explicit PAD (or PADV2) that only feeds a convolution becomes that
// convolution's own padding. Converters emit such pads (PyTorch's symmetric padding before every
// strided window, TinyEngine's exports); folded, the padded copy of the activation is never
// stored, and split regions (passes/split.h) see one window op.
//
// Exact, so the folded graph runs bit-identically: the pad must add rows and columns only
// (H and W of an NHWC tensor), with the value the convolution's padding stands for — 0.0 in
// float, the input's zero point in int8 (TFLM's kernels skip padded taps, which contribute
// (zero point - zero point) * weight = 0). Pools are never folded: max pooling ignores padded
// taps instead of reading zeros, and average pooling divides by the taps it read. The
// convolution's padding becomes explicit: its own (same or valid) plus the pad's.
//
// Complexity O(V + E). Returns how many pads it folded; the pads' nodes are removed, value ids
// kept.
#pragma once

#include "memfold/ir/graph.h"

namespace memfold {

int FoldPads(Graph* graph);

}  // namespace memfold
