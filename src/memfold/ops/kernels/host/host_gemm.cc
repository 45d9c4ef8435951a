// float32 matrix products by the system BLAS (see float_kernels.h): training graphs only. Host
// code: BLAS visits memory in its own order, so these kernels have no safe-overlap model, no
// trace and no device build.
#include "memfold/ops/kernels/host/host_gemm.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string_view>
#include <type_traits>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/host/host_workers.h"
#include "memfold/ops/kernels/kernel_util.h"
#include "memfold/ops/kernels/window_geometry.h"

namespace memfold {

namespace {

// The fewest im2col rows a worker takes at a time (below that a product is shared by columns).
constexpr int64_t kMinPartRows = 64;

// OpenBLAS's threads cost more than they save on small products: those run on one thread,
// larger ones on all of them (matrix products and fully connected layers; convolutions split
// their products themselves, RunConvParts). Switching only when the class changes keeps the
// calls rare.
void UseThreadsFor(double multiply_adds) {
  constexpr double kParallelFrom = 1 << 22;
  static const int all = openblas_get_num_threads();
  static int current = all;
  const int wanted = multiply_adds < kParallelFrom ? 1 : all;
  if (wanted == current) return;
  openblas_set_num_threads(wanted);
  current = wanted;
}

// Runs body(w) for every worker w (HostWorkers) with BLAS on one thread: each part of a
// convolution's products is one thread's product.
void RunConvParts(const std::function<void(int)>& body) {
  HostWorkers& workers = HostWorkers::Get();  // first: it reads OpenBLAS's own thread count
  UseThreadsFor(0);
  workers.Run(body);
}

// C = op(A) op(B) + beta C, row-major, by BLAS: op(A) [m, k] (lda), op(B) [k, n] (ldb), C [m, n]
// (ldc). `shared`: BLAS may spread the product over its threads; otherwise it runs on the
// calling thread alone (a worker's part, with BLAS set to one thread by RunConvParts).
void Sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc, bool shared = true) {
  if (shared) {
    UseThreadsFor(static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k));
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

// A convolution's product. `whole`: the calling thread has it alone, so the workers share it
// by columns of C, each one thread's product; otherwise it is one worker's part and runs on
// the calling thread.
void ConvProduct(bool whole, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (!whole) {
    Sgemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc, false);
    return;
  }
  RunConvParts([&](int w) {
    const int64_t begin = HostWorkers::ShareBegin(n, w), end = HostWorkers::ShareBegin(n, w + 1);
    if (end == begin) return;
    Sgemm(ta, tb, m, end - begin, k, a, lda, tb ? b + begin * ldb : b + begin, ldb, beta, c + begin,
          ldc, false);
  });
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
// (fy, fx, ic): a tap's IC values per filter tap (fy, fx).
struct ConvShape {
  Window2D win;
  int64_t batch = 0, h = 0, w = 0, in_c = 0, out_c = 0;
  int64_t k_h = 0, k_w = 0;
  int64_t pixels = 0;  // OH * OW: one image's rows
  int64_t rows = 0;    // N * OH * OW
  int64_t depth = 0;   // KH * KW * IC
  // 1x1 with the output the input's size (stride 1, no padding): im2col(x) is x itself.
  bool pointwise = false;
  int64_t chunk = 1;  // im2col rows in the scratch (ConvColumnRows): all of them when pointwise
  // Whether the workers share the rows, each filling its `part` rows of the scratch at a time.
  bool split_rows = false;
  int64_t part = 1;

  ConvShape(const KernelContext& ctx, ShapeView x, ShapeView f)
      : win(WindowOf(ctx, x, f[1], f[2])),
        batch(x[0]),
        h(x[1]),
        w(x[2]),
        in_c(x[3]),
        out_c(f[0]),
        k_h(f[1]),
        k_w(f[2]),
        pixels(win.out_h * win.out_w),
        rows(x[0] * pixels),
        depth(f[1] * f[2] * f[3]),
        pointwise(IsPointwiseConv(x[1], x[2], win.out_h, win.out_w, f[1], f[2])),
        chunk(pointwise ? std::max<int64_t>(1, rows) : ConvColumnRows(rows)),
        split_rows(!pointwise && chunk >= kHostWorkers * kMinPartRows),
        part(split_rows ? chunk / kHostWorkers : chunk) {}

  int64_t taps() const { return k_h * k_w; }

  // Visits the im2col rows a chunk at a time: visit(first row, rows).
  template <typename Visit>
  void ForEachChunk(Visit visit) const {
    for (int64_t r = 0; r < rows; r += chunk) visit(r, std::min(chunk, rows - r));
  }

  // Visits, for im2col rows [first, first + count) restricted to the columns of taps
  // [tap_begin, tap_end), every tap's run of IC entries, with its element offset in that
  // (count x (tap_end - tap_begin) * IC) matrix and, when the tap lies inside the image, the
  // offset of the pixel it copies in the input tensor; padded taps get `outside`.
  template <typename Inside, typename Outside>
  void ForEachTap(int64_t first, int64_t count, int64_t tap_begin, int64_t tap_end, Inside inside,
                  Outside outside) const {
    int64_t at = 0;
    for (int64_t r = first; r < first + count; ++r) {
      const int64_t image = r / pixels * h * w * in_c;
      const int64_t oy = r % pixels / win.out_w, ox = r % win.out_w;
      for (int64_t tap = tap_begin; tap < tap_end; ++tap, at += in_c) {
        const int64_t iy = oy * win.stride_h - win.pad_top + win.dil_h * (tap / k_w);
        const int64_t ix = ox * win.stride_w - win.pad_left + win.dil_w * (tap % k_w);
        if (iy >= 0 && iy < h && ix >= 0 && ix < w) {
          inside(at, image + (iy * w + ix) * in_c);
        } else {
          outside(at);
        }
      }
    }
  }
};

// Rows [first, first + count) of im2col(x), the columns of taps [tap_begin, tap_end) (all by
// default); zero in the padding.
void Im2Col(const ConvShape& s, const float* x, int64_t first, int64_t count, float* col,
            int64_t tap_begin = 0, int64_t tap_end = -1) {
  s.ForEachTap(
      first, count, tap_begin, tap_end < 0 ? s.taps() : tap_end,
      [&](int64_t at, int64_t from) {
        std::memcpy(col + at, x + from, static_cast<size_t>(s.in_c) * sizeof(float));
      },
      [&](int64_t at) { std::fill_n(col + at, s.in_c, 0.0f); });
}

// Im2Col's adjoint for rows [first, first + count): each input pixel of `x` gets the entries
// of those rows that copy it added; padded entries are dropped.
void AddCol2Im(const ConvShape& s, const float* col, int64_t first, int64_t count, float* x) {
  s.ForEachTap(
      first, count, 0, s.taps(),
      [&](int64_t at, int64_t from) {
        for (int64_t c = 0; c < s.in_c; ++c) x[from + c] += col[at + c];
      },
      [](int64_t) {});
}

// Runs piece(first, count, col, whole) over im2col rows [0, rows) with `col` the scratch for
// those rows. Split rows: each worker takes its share of the rows (whole images when
// `by_image`, so that no two workers touch one image), `part` rows at a time into its own part
// of the scratch (whole = false). Otherwise the caller takes them a chunk at a time (whole =
// true: the workers share each product by columns, ConvProduct).
template <typename Piece>
void ForEachRowPiece(const ConvShape& s, bool by_image, float* col, Piece piece) {
  if (!s.split_rows || (by_image && s.batch < kHostWorkers)) {
    s.ForEachChunk([&](int64_t first, int64_t count) { piece(first, count, col, true); });
    return;
  }
  const int64_t unit = by_image ? s.pixels : 1, units = s.rows / unit;
  RunConvParts([&](int w) {
    const int64_t begin = HostWorkers::ShareBegin(units, w) * unit;
    const int64_t end = HostWorkers::ShareBegin(units, w + 1) * unit;
    float* own = col + w * s.part * s.depth;
    for (int64_t first = begin; first < end; first += s.part) {
      piece(first, std::min(s.part, end - first), own, false);
    }
  });
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
  // y [rows, OC] = im2col(x) [rows, depth] x W^T [depth, OC], piece by piece.
  ForEachRowPiece(s, false, col, [&](int64_t first, int64_t count, float* own, bool whole) {
    if (!s.pointwise) Im2Col(s, x, first, count, own);
    ConvProduct(whole, false, true, count, s.out_c, s.depth,
                s.pointwise ? x + first * s.depth : own, s.depth, filter, s.depth, 0.0f,
                y + first * s.out_c, s.out_c);
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
    ConvProduct(true, false, false, s.rows, s.in_c, s.out_c, dy, s.out_c, filter, s.in_c, 0.0f, dx,
                s.in_c);
    return;
  }
  // dx = col2im(dy [rows, OC] x W [OC, depth]), piece by piece; a worker's pieces cover whole
  // images, so no two workers add into one pixel.
  std::fill_n(dx, ctx.outputs[0].elements(), 0.0f);
  ForEachRowPiece(s, true, reinterpret_cast<float*>(ctx.scratch[0]),
                  [&](int64_t first, int64_t count, float* own, bool whole) {
                    ConvProduct(whole, false, false, count, s.depth, s.out_c, dy + first * s.out_c,
                                s.out_c, filter, s.depth, 0.0f, own, s.depth);
                    AddCol2Im(s, own, first, count, dx);
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
  // dW [OC, depth] = sum over chunks of dy^T [OC, count] x im2col(x) [count, depth]. With two
  // taps or more the workers share the columns: each takes its taps' columns of every chunk
  // into its own part of the scratch (chunk x its columns) and owns those columns of dW.
  if (s.pointwise || s.taps() < kHostWorkers) {
    s.ForEachChunk([&](int64_t first, int64_t count) {
      if (!s.pointwise) Im2Col(s, x, first, count, col);
      ConvProduct(true, true, false, s.out_c, s.depth, count, dy + first * s.out_c, s.out_c,
                  s.pointwise ? x + first * s.depth : col, s.depth, first == 0 ? 0.0f : 1.0f, dw,
                  s.depth);
    });
    return;
  }
  RunConvParts([&](int w) {
    const int64_t tap_begin = HostWorkers::ShareBegin(s.taps(), w);
    const int64_t tap_end = HostWorkers::ShareBegin(s.taps(), w + 1);
    const int64_t columns = (tap_end - tap_begin) * s.in_c;
    float* own = col + s.chunk * tap_begin * s.in_c;
    s.ForEachChunk([&](int64_t first, int64_t count) {
      Im2Col(s, x, first, count, own, tap_begin, tap_end);
      Sgemm(true, false, s.out_c, columns, count, dy + first * s.out_c, s.out_c, own, columns,
            first == 0 ? 0.0f : 1.0f, dw + tap_begin * s.in_c, s.depth, false);
    });
  });
}

template void MatMulF32<Direct>(const KernelContext&);
template void BatchMatMulF32<Direct>(const KernelContext&);
template void Conv2DGemmF32<Direct>(const KernelContext&);
template void FullyConnectedGemmF32<Direct>(const KernelContext&);
template void Conv2DBackpropInputF32<Direct>(const KernelContext&);
template void Conv2DBackpropFilterF32<Direct>(const KernelContext&);

}  // namespace memfold
