// TFLite's BATCH_MATMUL as TFLM's reference kernel computes it (reference_ops::BatchMatMul
// behind micro/kernels/batch_matmul.cc): float32, and int8/int16 with per-tensor
// quantisation. Freestanding.
//
// TFLM copies a transposed operand (LHS when adj_x, RHS unless adj_y) into persistent buffers
// it allocates in Prepare and then runs one loop over the copies. Transposing moves no value
// through arithmetic, so these kernels read the operands where they lie instead (kernels keep
// no private copies, see access.h) and accumulate the very same products in the very same
// order: every output element is exact.
#pragma once

#include <cstdint>

#include "memfold/ops/kernels/kernel_context.h"

namespace memfold {

// The loop geometry: both shapes extended to rank 5 with leading ones, the three batch
// dimensions broadcast, an operand's batch stride 0 where its dimension is 1 (TFLM's
// batch_matmul::extent). The output is [batch..., rows, cols]; rows x depth comes from the
// LHS ([.., rows, depth], or [.., depth, rows] with adj_x), depth x cols from the RHS
// ([.., depth, cols], or [.., cols, depth] with adj_y).
struct BatchMatMulGeometry {
  int64_t batch[3] = {1, 1, 1};
  int64_t lhs_batch_stride[3] = {0, 0, 0};
  int64_t rhs_batch_stride[3] = {0, 0, 0};
  int64_t rows = 0, cols = 0, depth = 0;
  int64_t lhs_row_stride = 0, lhs_depth_stride = 0;  // LHS element (row, k)
  int64_t rhs_col_stride = 0, rhs_depth_stride = 0;  // RHS element (k, col)

  static BatchMatMulGeometry Of(ShapeView lhs, ShapeView rhs, bool adj_x, bool adj_y) {
    int64_t l[5] = {1, 1, 1, 1, 1}, r[5] = {1, 1, 1, 1, 1};
    for (size_t d = 0; d < lhs.size() && d < 5; ++d) l[5 - lhs.size() + d] = lhs[d];
    for (size_t d = 0; d < rhs.size() && d < 5; ++d) r[5 - rhs.size() + d] = rhs[d];
    BatchMatMulGeometry g;
    for (int d = 0; d < 3; ++d) {
      g.batch[d] = l[d] == 1 ? r[d] : l[d];
      int64_t lp = 1, rp = 1;
      for (int e = d + 1; e < 5; ++e) {
        lp *= l[e];
        rp *= r[e];
      }
      g.lhs_batch_stride[d] = l[d] == 1 ? 0 : lp;
      g.rhs_batch_stride[d] = r[d] == 1 ? 0 : rp;
    }
    g.rows = adj_x ? l[4] : l[3];
    g.depth = adj_x ? l[3] : l[4];
    g.lhs_row_stride = adj_x ? 1 : l[4];
    g.lhs_depth_stride = adj_x ? l[4] : 1;
    g.cols = adj_y ? r[3] : r[4];
    g.rhs_col_stride = adj_y ? r[4] : 1;
    g.rhs_depth_stride = adj_y ? 1 : r[4];
    return g;
  }
};

// TFLM's loop order: batches b0, b1, b2, then each output row, then each column — the output
// is written in index order. visit(out_index, lhs_row_start, rhs_col_start); element k of the
// sum is lhs[lhs_row_start + k * lhs_depth_stride] and rhs[rhs_col_start + k *
// rhs_depth_stride], k ascending.
template <typename Visit>
void ForEachBatchMatMulOutput(const BatchMatMulGeometry& g, Visit visit) {
  int64_t out = 0;
  for (int64_t b0 = 0; b0 < g.batch[0]; ++b0) {
    for (int64_t b1 = 0; b1 < g.batch[1]; ++b1) {
      for (int64_t b2 = 0; b2 < g.batch[2]; ++b2) {
        const int64_t lhs =
            b0 * g.lhs_batch_stride[0] + b1 * g.lhs_batch_stride[1] + b2 * g.lhs_batch_stride[2];
        const int64_t rhs =
            b0 * g.rhs_batch_stride[0] + b1 * g.rhs_batch_stride[1] + b2 * g.rhs_batch_stride[2];
        for (int64_t i = 0; i < g.rows; ++i) {
          for (int64_t j = 0; j < g.cols; ++j) {
            visit(out++, lhs + i * g.lhs_row_stride, rhs + j * g.rhs_col_stride);
          }
        }
      }
    }
  }
}

// Float sums from 0 in float, k ascending. Int8 (int32 sums) and int16 (int64 sums, zero
// points 0): sum of (rhs - rhs_zp) * (lhs - lhs_zp), then TFLite's MultiplyByQuantizedMultiplier
// with [multiplier, shift] from PrepareBatchMatMulQuantized, the output zero point, and the
// type's range.
template <typename A>
void TfliteBatchMatMulF32(const KernelContext& ctx);
template <typename A>
void TfliteBatchMatMulI8(const KernelContext& ctx);
template <typename A>
void TfliteBatchMatMulI16(const KernelContext& ctx);

}  // namespace memfold
