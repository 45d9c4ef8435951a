// float32 matrix products by the system BLAS (see float_kernels.h): training graphs only. Host
// code: BLAS visits memory in its own order, so these kernels have no safe-overlap model, no
// trace and no device build.
#include "memfold/ops/kernels/host_gemm.h"

#include <cblas.h>

#include <algorithm>
#include <type_traits>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/kernel_util.h"

namespace memfold {

namespace {

// Rows [i0, i0 + m) of one [rows, k] x [k, n] product (with optional transposes) at element
// offsets a0, b0, into `y` at `c` with leading dimension ldc, by the system BLAS (OpenBLAS
// sgemm packs its operands, so results do not depend on where tensors sit).
void Gemm(const float* a, const float* b, float* c, int64_t i0, int64_t m, int64_t n, int64_t k,
          int64_t rows, bool ta, bool tb, int64_t ldc) {
  const int64_t lda = std::max<int64_t>(1, ta ? rows : k);
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f,
              a + (ta ? i0 : i0 * lda), static_cast<int>(lda), b,
              static_cast<int>(std::max<int64_t>(1, tb ? k : n)), 0.0f, c, static_cast<int>(ldc));
}

// One [m, k] x [k, n] product at element offsets a0, b0, y0. An output in rows (a concat
// input written in place) holds whole product rows in each of its rows, as the concat axis is
// never inside the last dimension: one product per run of product rows sharing a row.
// BLAS visits memory in its own order: matmul has no safe-overlap model and no trace.
template <typename A>
void MatMulBlock(In<A, float> a, In<A, float> b, Out<A, float> y, int64_t a0, int64_t b0,
                 int64_t y0, int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
  static_assert(std::is_same_v<A, Direct>, "BLAS products cannot be traced");
  if (m == 0 || n == 0) return;
  if (y.row == 0 || y.row == n) {
    Gemm(a.base + a0, b.base + b0, y.base + y.At(y0), 0, m, n, k, m, ta, tb,
         y.row == 0 ? n : y.stride);
    return;
  }
  for (int64_t i = 0; i < m;) {
    const int64_t flat = y0 + i * n;
    const int64_t run = std::min(m - i, (y.row - flat % y.row) / n);
    Gemm(a.base + a0, b.base + b0, y.base + y.At(flat), i, run, n, k, m, ta, tb, n);
    i += run;
  }
}

}  // namespace

template <typename A>
void MatMulF32(const KernelContext& ctx) {
  const bool ta = ctx.attrs.Int("transpose_a") != 0;
  const bool tb = ctx.attrs.Int("transpose_b") != 0;
  const ShapeView y_shape = ctx.outputs[0].shape;
  const ShapeView a_shape = ctx.inputs[0].shape;
  const int64_t k = ta ? a_shape[0] : a_shape[1];
  MatMulBlock<A>({ctx.inputs[0].ptr<float>()}, {ctx.inputs[1].ptr<float>()},
                 {OutputOf<A, float>(ctx.outputs[0])}, 0, 0, 0, y_shape[0], y_shape[1], k, ta, tb);
}

template <typename A>
void BatchMatMulF32(const KernelContext& ctx) {
  const bool ta = ctx.attrs.Int("transpose_a") != 0;
  const bool tb = ctx.attrs.Int("transpose_b") != 0;
  const ShapeView a_shape = ctx.inputs[0].shape;
  const ShapeView b_shape = ctx.inputs[1].shape;
  const ShapeView y_shape = ctx.outputs[0].shape;
  const size_t rank = y_shape.size();
  const int64_t m = y_shape[rank - 2], n = y_shape[rank - 1];
  const int64_t k = ta ? a_shape[a_shape.size() - 2] : a_shape[a_shape.size() - 1];
  const int64_t a_block = a_shape[a_shape.size() - 2] * a_shape[a_shape.size() - 1];
  const int64_t b_block = b_shape[b_shape.size() - 2] * b_shape[b_shape.size() - 1];
  const int64_t batches = ctx.outputs[0].elements() / std::max<int64_t>(1, m * n);
  for (int64_t batch = 0; batch < batches; ++batch) {
    // Map the output batch index to each input's batch index (broadcast dims repeat).
    int64_t rest = batch, a_index = 0, b_index = 0, a_step = 1, b_step = 1;
    for (size_t d = rank - 2; d-- > 0;) {
      const int64_t coord = rest % y_shape[d];
      rest /= y_shape[d];
      const size_t back = rank - 2 - d;  // 1 for the innermost batch dim
      if (a_shape.size() >= 2 + back) {
        const int64_t dim = a_shape[a_shape.size() - 2 - back];
        a_index += (dim == 1 ? 0 : coord) * a_step;
        a_step *= dim;
      }
      if (b_shape.size() >= 2 + back) {
        const int64_t dim = b_shape[b_shape.size() - 2 - back];
        b_index += (dim == 1 ? 0 : coord) * b_step;
        b_step *= dim;
      }
    }
    MatMulBlock<A>({ctx.inputs[0].ptr<float>()}, {ctx.inputs[1].ptr<float>()},
                   {OutputOf<A, float>(ctx.outputs[0])}, a_index * a_block, b_index * b_block,
                   batch * m * n, m, n, k, ta, tb);
  }
}

template void MatMulF32<Direct>(const KernelContext&);
template void BatchMatMulF32<Direct>(const KernelContext&);

}  // namespace memfold
