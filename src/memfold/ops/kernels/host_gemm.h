// float32 matrix products by the system BLAS (host_gemm.cc), for training graphs: instantiated
// for Direct only, as BLAS's access order cannot be traced; no device build.
#pragma once

#include "memfold/ops/kernels/kernel_context.h"

namespace memfold {

// Row-major [m, k] x [k, n] products, optionally transposed operands.
template <typename A>
void MatMulF32(const KernelContext& ctx);
// Batched products with numpy broadcasting of the batch dimensions.
template <typename A>
void BatchMatMulF32(const KernelContext& ctx);

}  // namespace memfold
