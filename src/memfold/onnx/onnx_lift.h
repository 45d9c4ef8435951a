// 1-D window operators as 2-D ones, rewritten in the ONNX graph before import: a Conv,
// ConvTranspose, QLinearConv, MaxPool or AveragePool over [N, C, L] (PyTorch's Conv1d,
// ConvTranspose1d, MaxPool1d, AvgPool1d: keyword spotting and audio models) becomes the same
// operator over [N, C, 1, L], after a Reshape to that form. Its attributes gain a leading
// spatial axis of size 1 (kernel 1, stride 1, dilation 1, no padding) and its weights become
// [O, I, 1, k]: the same arithmetic, so the importer's 2-D converters, int8 kernels and
// splitting apply unchanged.
//
// The Reshape back to 1-D is moved past the operator's chain of single readers that work on
// either form (elementwise activations, batch norm, QuantizeLinear and DequantizeLinear on the
// channel axis), and left out where every reader is a lifted operator, which takes the 4-D form
// as it is: a Conv1d stack converts as a Conv2d stack, and in QDQ models each convolution still
// feeds its QuantizeLinear (the int8 kernel). Weights only one convolution reads are reshaped
// where they are stored, so that a quantized initializer keeps its quantisation. A node is 1-D
// when its kernel_shape has one entry, or (a convolution without one) when its weights are a
// 3-D initializer or the DequantizeLinear of one. Complexity: O(nodes + initializers + edges).
// Precondition: the model's names are unique.
#pragma once

#include "onnx/onnx_pb.h"

namespace memfold {

void LiftOneDimensionalWindows(onnx::ModelProto* model);

}  // namespace memfold
