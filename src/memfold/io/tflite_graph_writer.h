// Writes a memfold Graph as a TensorFlow Lite flatbuffer: the inverse of the reader for every
// operator in the TFLite mapping table (tflite_ops.cc) whose attributes TFLite can express.
//
// Tensor k of the file is value k of the graph (constants keep their bytes, each in its own
// 16-byte-aligned buffer; buffer 0 is the empty buffer, as converters write it); operators
// follow the graph's schedule. Parameters that TFLite passes as constant inputs rather than
// options (MEAN's axes, TRANSPOSE's permutation, PAD's paddings, PADV2's value) become extra
// constant int32 / value tensors after the graph's own. Reading the file back gives the same
// values, nodes, attributes and outputs (tests/tflite_graph_writer_test.cc).
//
// Explicit pads of a convolution or max pool (ONNX's symmetric pads) are written as a PAD or
// PADV2 before the window op, as TFLite's converter writes them (the file then reads back with
// those pads as operators). Errors name the node and what TFLite cannot express (a training op,
// an explicitly padded average pool, softmax over an axis other than the last, a packed 1-bit
// tensor). Complexity O(graph + weight bytes).
#pragma once

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"

namespace memfold {

Result<Bytes> GraphToTflite(const Graph& graph);

}  // namespace memfold
