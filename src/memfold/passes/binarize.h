// Echo's layer-specific encodings (after Gist): a dropout mask, or a ReLU output whose only
// backward readers are ReLU gradients (which need just its sign), is kept for the backward
// pass as one bit per element. mask_encode runs right after the forward node; mask_decode
// right before the first backward reader, which then reads the decoded mask: the 32-bit value
// dies at once, only its 1-bit encoding is stashed. Decoding gives back exactly the values the
// backward reader needs (the dropout scale or 1), so gradients are unchanged. O(V + E).
#pragma once

#include "memfold/ir/graph.h"
#include "memfold/passes/gradient.h"

namespace memfold {

// Returns the number of masks encoded; updates training->forward_nodes.
int BinarizeMasks(Graph* graph, TrainingGraph* training);

}  // namespace memfold
