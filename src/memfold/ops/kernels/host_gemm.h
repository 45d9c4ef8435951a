// float32 matrix products by the system BLAS (host_gemm.cc), for training graphs: instantiated
// for Direct only, as BLAS's access order cannot be traced; no device build. Convolutions and
// their input gradient need no scratch: each filter tap is one product per output row over the
// pixels it reads (a 1x1 convolution with stride 1 and no padding: one product per image); the
// filter gradient multiplies one image's im2col matrix (its scratch) at a time.
#pragma once

#include <string>

#include "memfold/ops/kernels/kernel_context.h"

namespace memfold {

// The OpenBLAS core type (for OPENBLAS_CORETYPE) this CPU's instruction sets call for, when
// OpenBLAS's own choice at load time, which goes by the CPU's model number, fell back to its
// generic Prescott kernels: a virtual CPU that hides its model ("Intel(R) Xeon(R) Processor")
// gets SSE3 kernels 2-3x slower than the AVX2 or AVX-512 ones it has. "" when OpenBLAS chose
// well, was told a core type already, or the CPU has neither.
std::string BetterBlasCoreType();

// Row-major [m, k] x [k, n] products, optionally transposed operands.
template <typename A>
void MatMulF32(const KernelContext& ctx);
// Batched products with numpy broadcasting of the batch dimensions.
template <typename A>
void BatchMatMulF32(const KernelContext& ctx);
// conv2d (filter [OC, KH, KW, IC], optional bias, fused activation) by BLAS products: the
// training graphs' convolution (op conv2d_gemm; inference keeps TFLM's reference order).
template <typename A>
void Conv2DGemmF32(const KernelContext& ctx);
// fully_connected (weights [out, depth], optional bias, fused activation) as one BLAS product:
// the training graphs' (op fully_connected_gemm).
template <typename A>
void FullyConnectedGemmF32(const KernelContext& ctx);
// The gradients of conv2d: dx, tap by tap, and dW = sum over images of dy^T im2col(x).
template <typename A>
void Conv2DBackpropInputF32(const KernelContext& ctx);
template <typename A>
void Conv2DBackpropFilterF32(const KernelContext& ctx);

}  // namespace memfold
