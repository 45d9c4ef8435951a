// float32 matrix products by the system BLAS (see float_kernels.h): training graphs only. Host
// code: BLAS visits memory in its own order, so these kernels have no safe-overlap model, no
// trace and no device build.
#include "memfold/ops/kernels/host_gemm.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/kernel_util.h"
#include "memfold/ops/kernels/window_geometry.h"

namespace memfold {

namespace {

// OpenBLAS's threads cost more than they save on small products (the convolutions' per-row
// products above all): those run on one thread, larger ones on all of them. Switching only
// when the class changes keeps the calls rare.
void UseThreadsFor(double multiply_adds) {
  constexpr double kParallelFrom = 1 << 22;
  static const int all = openblas_get_num_threads();
  static int current = all;
  const int wanted = multiply_adds < kParallelFrom ? 1 : all;
  if (wanted == current) return;
  openblas_set_num_threads(wanted);
  current = wanted;
}

// C = op(A) op(B) + beta C, row-major, by BLAS: op(A) [m, k] (lda), op(B) [k, n] (ldb), C [m, n]
// (ldc).
void Sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  UseThreadsFor(static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k));
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

// Rows [i0, i0 + m) of one [rows, k] x [k, n] product (with optional transposes) at element
// offsets a0, b0, into `y` at `c` with leading dimension ldc, by the system BLAS (OpenBLAS
// sgemm packs its operands, so results do not depend on where tensors sit).
void Gemm(const float* a, const float* b, float* c, int64_t i0, int64_t m, int64_t n, int64_t k,
          int64_t rows, bool ta, bool tb, int64_t ldc) {
  const int64_t lda = std::max<int64_t>(1, ta ? rows : k);
  Sgemm(ta, tb, m, n, k, a + (ta ? i0 : i0 * lda), lda, b, std::max<int64_t>(1, tb ? k : n), 0.0f,
        c, ldc);
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

// A conv2d-shaped op: input [N, H, W, IC], filter [OC, KH, KW, IC], output [N, OH, OW, OC].
// Its im2col matrix has a row per output pixel of the batch, (image, oy, ox), and the columns
// (fy, fx, ic).
struct ConvShape {
  Window2D win;
  int64_t h = 0, w = 0, in_c = 0, out_c = 0;
  int64_t k_h = 0, k_w = 0;
  int64_t rows = 0;   // N * OH * OW
  int64_t depth = 0;  // KH * KW * IC
  // 1x1 with the output the input's size (stride 1, no padding): im2col(x) is x itself.
  bool pointwise = false;
  int64_t chunk = 1;  // im2col rows per product: all of them when pointwise

  ConvShape(const KernelContext& ctx, ShapeView x, ShapeView f)
      : win(WindowOf(ctx, x, f[1], f[2])),
        h(x[1]),
        w(x[2]),
        in_c(x[3]),
        out_c(f[0]),
        k_h(f[1]),
        k_w(f[2]),
        rows(x[0] * win.out_h * win.out_w),
        depth(f[1] * f[2] * f[3]),
        pointwise(IsPointwiseConv(x[1], x[2], win.out_h, win.out_w, f[1], f[2])),
        chunk(pointwise ? std::max<int64_t>(1, rows) : ConvColumnRows(rows)) {}

  // Visits the im2col rows a chunk at a time: visit(first row, rows).
  template <typename Visit>
  void ForEachChunk(Visit visit) const {
    for (int64_t r = 0; r < rows; r += chunk) visit(r, std::min(chunk, rows - r));
  }

  // Visits every entry run of im2col rows [first, first + count) — one tap's IC values — with
  // its element offset in the chunk and, when the tap lies inside the image, the offset of the
  // pixel it copies in the input tensor; padded taps get `outside`.
  template <typename Inside, typename Outside>
  void ForEachTap(int64_t first, int64_t count, Inside inside, Outside outside) const {
    const int64_t pixels = win.out_h * win.out_w;
    int64_t at = 0;
    for (int64_t r = first; r < first + count; ++r) {
      const int64_t image = r / pixels * h * w * in_c;
      const int64_t oy = r % pixels / win.out_w, ox = r % win.out_w;
      for (int64_t fy = 0; fy < k_h; ++fy) {
        const int64_t iy = oy * win.stride_h - win.pad_top + win.dil_h * fy;
        for (int64_t fx = 0; fx < k_w; ++fx, at += in_c) {
          const int64_t ix = ox * win.stride_w - win.pad_left + win.dil_w * fx;
          if (iy >= 0 && iy < h && ix >= 0 && ix < w) {
            inside(at, image + (iy * w + ix) * in_c);
          } else {
            outside(at);
          }
        }
      }
    }
  }
};

// Rows [first, first + count) of im2col(x); zero in the padding.
void Im2Col(const ConvShape& s, const float* x, int64_t first, int64_t count, float* col) {
  s.ForEachTap(
      first, count,
      [&](int64_t at, int64_t from) {
        std::memcpy(col + at, x + from, static_cast<size_t>(s.in_c) * sizeof(float));
      },
      [&](int64_t at) { std::fill_n(col + at, s.in_c, 0.0f); });
}

// Im2Col's adjoint for rows [first, first + count): each input pixel of `x` gets the entries
// of those rows that copy it added; padded entries are dropped.
void AddCol2Im(const ConvShape& s, const float* col, int64_t first, int64_t count, float* x) {
  s.ForEachTap(
      first, count,
      [&](int64_t at, int64_t from) {
        for (int64_t c = 0; c < s.in_c; ++c) x[from + c] += col[at + c];
      },
      [](int64_t) {});
}

// The epilogue of conv2d and fully_connected: y += bias (per channel, the last dimension),
// then the fused activation's clamp.
void AddBiasAndClamp(const KernelContext& ctx, int64_t channels) {
  const ActivationRange act = KernelActivation(ctx.attrs);
  const float* bias = HasBias(ctx) ? ctx.inputs[2].ptr<float>() : nullptr;
  float* y = ctx.outputs[0].ptr<float>();
  const int64_t n = ctx.outputs[0].elements();
  for (int64_t i = 0; i < n; ++i) {
    const float v = y[i] + (bias != nullptr ? bias[i % channels] : 0.0f);
    y[i] = std::min(std::max(v, act.min), act.max);
  }
}

// Training graphs' outputs are plain tensors; a concat's in-place row layout is never planned
// for them (only inference plans make concats copy-free).
bool RefuseRowLayout(const KernelContext& ctx) {
  if (ctx.outputs[0].row == 0) return false;
  if (ctx.error != nullptr) ctx.error->message = "a BLAS convolution cannot write a row layout";
  return true;
}

}  // namespace

std::string BetterBlasCoreType() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return "";
  if (std::string_view(openblas_get_corename()) != "Prescott") return "";
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")) {
    return "SkylakeX";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return "";
}

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

template <typename A>
void Conv2DGemmF32(const KernelContext& ctx) {
  static_assert(std::is_same_v<A, Direct>, "BLAS products cannot be traced");
  if (RefuseRowLayout(ctx)) return;
  const ConvShape s(ctx, ctx.inputs[0].shape, ctx.inputs[1].shape);
  const float* x = ctx.inputs[0].ptr<float>();
  const float* filter = ctx.inputs[1].ptr<float>();
  float* y = ctx.outputs[0].ptr<float>();
  float* col = s.pointwise ? nullptr : reinterpret_cast<float*>(ctx.scratch[0]);
  // y [rows, OC] = im2col(x) [rows, depth] x W^T [depth, OC], a chunk of rows at a time.
  s.ForEachChunk([&](int64_t first, int64_t count) {
    if (!s.pointwise) Im2Col(s, x, first, count, col);
    Sgemm(false, true, count, s.out_c, s.depth, s.pointwise ? x + first * s.depth : col, s.depth,
          filter, s.depth, 0.0f, y + first * s.out_c, s.out_c);
  });
  AddBiasAndClamp(ctx, s.out_c);
}

template <typename A>
void FullyConnectedGemmF32(const KernelContext& ctx) {
  static_assert(std::is_same_v<A, Direct>, "BLAS products cannot be traced");
  if (RefuseRowLayout(ctx)) return;
  const ShapeView w = ctx.inputs[1].shape;  // [out, depth]
  const int64_t rows = ctx.inputs[0].elements() / std::max<int64_t>(1, w[1]);
  Sgemm(false, true, rows, w[0], w[1], ctx.inputs[0].ptr<float>(), w[1], ctx.inputs[1].ptr<float>(),
        w[1], 0.0f, ctx.outputs[0].ptr<float>(), w[0]);
  AddBiasAndClamp(ctx, w[0]);
}

template <typename A>
void Conv2DBackpropInputF32(const KernelContext& ctx) {
  static_assert(std::is_same_v<A, Direct>, "BLAS products cannot be traced");
  if (RefuseRowLayout(ctx)) return;
  const ConvShape s(ctx, ctx.outputs[0].shape, ctx.inputs[1].shape);
  const float* dy = ctx.inputs[0].ptr<float>();
  const float* filter = ctx.inputs[1].ptr<float>();
  float* dx = ctx.outputs[0].ptr<float>();
  if (s.pointwise) {  // dx [rows, IC] = dy [rows, OC] x W [OC, IC]
    Sgemm(false, false, s.rows, s.in_c, s.out_c, dy, s.out_c, filter, s.in_c, 0.0f, dx, s.in_c);
    return;
  }
  // dx = col2im(dy [rows, OC] x W [OC, depth]), a chunk of rows at a time.
  float* col = reinterpret_cast<float*>(ctx.scratch[0]);
  std::fill_n(dx, ctx.outputs[0].elements(), 0.0f);
  s.ForEachChunk([&](int64_t first, int64_t count) {
    Sgemm(false, false, count, s.depth, s.out_c, dy + first * s.out_c, s.out_c, filter, s.depth,
          0.0f, col, s.depth);
    AddCol2Im(s, col, first, count, dx);
  });
}

template <typename A>
void Conv2DBackpropFilterF32(const KernelContext& ctx) {
  static_assert(std::is_same_v<A, Direct>, "BLAS products cannot be traced");
  if (RefuseRowLayout(ctx)) return;
  const ConvShape s(ctx, ctx.inputs[0].shape, ctx.outputs[0].shape);
  const float* x = ctx.inputs[0].ptr<float>();
  const float* dy = ctx.inputs[1].ptr<float>();
  float* dw = ctx.outputs[0].ptr<float>();
  float* col = s.pointwise ? nullptr : reinterpret_cast<float*>(ctx.scratch[0]);
  if (s.rows == 0) std::fill_n(dw, ctx.outputs[0].elements(), 0.0f);
  // dW [OC, depth] = sum over chunks of dy^T [OC, count] x im2col(x) [count, depth].
  s.ForEachChunk([&](int64_t first, int64_t count) {
    if (!s.pointwise) Im2Col(s, x, first, count, col);
    Sgemm(true, false, s.out_c, s.depth, count, dy + first * s.out_c, s.out_c,
          s.pointwise ? x + first * s.depth : col, s.depth, first == 0 ? 0.0f : 1.0f, dw, s.depth);
  });
}

template void MatMulF32<Direct>(const KernelContext&);
template void BatchMatMulF32<Direct>(const KernelContext&);
template void Conv2DGemmF32<Direct>(const KernelContext&);
template void FullyConnectedGemmF32<Direct>(const KernelContext&);
template void Conv2DBackpropInputF32<Direct>(const KernelContext&);
template void Conv2DBackpropFilterF32<Direct>(const KernelContext&);

}  // namespace memfold
