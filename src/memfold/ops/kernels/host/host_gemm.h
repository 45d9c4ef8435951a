// float32 matrix products by the system BLAS (host_gemm.cc), for training graphs: instantiated
// for Direct only, as BLAS's access order cannot be traced; no device build. A convolution and
// both its gradients are one product per chunk of im2col rows (output pixels of the batch);
// the chunk is their planned scratch (ConvColumnScratchBytes). A pointwise convolution reads
// the input itself: one product per op, no scratch. Two threads share a convolution's products
// (by rows, by filter taps, or by output columns), each running single-threaded BLAS, so that
// OpenBLAS's own threads do not wait spinning on the core the other half needs; matrix
// products and fully connected layers use OpenBLAS's threads. Which thread computes a part
// never changes the result: planned and unplanned runs agree bit for bit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>

#include "memfold/ops/kernels/kernel_context.h"

namespace memfold {

// The OpenBLAS core type (for OPENBLAS_CORETYPE) this CPU's instruction sets call for, when
// OpenBLAS's own choice at load time, which goes by the CPU's model number, fell back to its
// generic Prescott kernels: a virtual CPU that hides its model ("Intel(R) Xeon(R) Processor")
// gets SSE3 kernels 2-3x slower than the AVX2 or AVX-512 ones it has. "" when OpenBLAS chose
// well, was told a core type already, or the CPU has neither.
std::string BetterBlasCoreType();

// im2col rows per product of a convolution whose im2col matrix has `rows` rows: about 128
// (BLAS is near its peak from there, and the scratch stays a small slice of a feature map),
// at least one.
inline int64_t ConvColumnRows(int64_t rows) {
  constexpr int64_t kProductRows = 128;
  return std::clamp<int64_t>(rows, 1, kProductRows);
}

// A 1x1 convolution whose output has its input's height and width (so stride 1 and no
// padding): its im2col matrix is the input itself.
inline bool IsPointwiseConv(int64_t in_h, int64_t in_w, int64_t out_h, int64_t out_w, int64_t k_h,
                            int64_t k_w) {
  return k_h == 1 && k_w == 1 && out_h == in_h && out_w == in_w;
}

// The im2col scratch of a BLAS convolution or either of its gradients: input [N, H, W, IC],
// output [N, OH, OW, OC], filter [OC, KH, KW, IC]. Zero when pointwise.
inline int64_t ConvColumnScratchBytes(std::span<const int64_t> x, std::span<const int64_t> y,
                                      std::span<const int64_t> filter) {
  if (IsPointwiseConv(x[1], x[2], y[1], y[2], filter[1], filter[2])) return 0;
  return ConvColumnRows(x[0] * y[1] * y[2]) * filter[1] * filter[2] * filter[3] *
         static_cast<int64_t>(sizeof(float));
}

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
// The gradients of conv2d: dx = col2im(dy W) and dW = sum over chunks of dy^T im2col(x).
template <typename A>
void Conv2DBackpropInputF32(const KernelContext& ctx);
template <typename A>
void Conv2DBackpropFilterF32(const KernelContext& ctx);

}  // namespace memfold
