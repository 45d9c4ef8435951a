// Channels-last graph inputs (--input-layout nhwc). A model exported from PyTorch takes NCHW
// images and transposes them to memfold's NHWC first thing (the ONNX importer's transpose, maybe
// after a per-tensor QuantizeLinear). That transpose keeps the whole image and its copy
// resident, so neither streaming the input (passes/stream_inputs.h) nor operation splitting can
// touch the model's first layers. A camera or a JPEG decoder delivers interleaved (HWC) rows
// anyway: this pass makes such inputs NHWC, so the caller gives the image in that layout, the
// transpose disappears and the first layers split and stream like a TFLite model's.
//
// Every image (rank-4) input must qualify: not a graph output, and read only through a chain
// of unary elementwise ops of per-tensor quantisation (each the only reader of the one before)
// that ends in one transpose with perm [0, 2, 3, 1], of the same type and quantisation, whose
// output is no graph output. The chain's values become NHWC, the transpose's readers read the
// chain's end and the transpose is removed. Inputs of other ranks are left as they are.
// O(V + E).
#pragma once

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"

namespace memfold {

// Makes every image input NHWC (above). Returns how many changed; an error, naming the input
// and why, when one does not qualify (TFLite models take NHWC inputs already) or there is none.
Result<int> MakeInputsChannelsLast(Graph* graph);

}  // namespace memfold
