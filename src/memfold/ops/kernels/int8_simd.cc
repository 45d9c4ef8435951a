// The int8 SIMD kernels (see int8_simd.h). Freestanding.
#include "memfold/ops/kernels/int8_simd.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "memfold/ops/kernels/access.h"
#include "memfold/ops/kernels/dsp.h"
#include "memfold/ops/kernels/int_kernels.h"
#include "memfold/ops/kernels/kernel_util.h"
#include "memfold/ops/kernels/quant_math.h"

namespace memfold {
namespace {

// A machine-word index: 32 bits on the device, where every 64-bit operation costs two or more.
using Index = std::ptrdiff_t;
constexpr Index kBlock = kInt8ChannelBlock;

// An operand's offset (minus its zero point): added to each value before the products, in
// both int16 lanes for the SIMD path, which holds whenever value + offset fits in 16 bits.
struct Offset {
  int32_t value;
  uint32_t lanes;
  bool fits_lanes;
  explicit Offset(int32_t v)
      : value(v), lanes(dsp::Lanes(v)), fits_lanes(v >= -32768 + 128 && v <= 32767 - 128) {}
};

// Calls f(0), ..., f(N - 1), unrolled at compile time (the loop over a block's channels must
// be, for its sums to live in registers).
template <int N, typename F>
void Unrolled(F f) {
  [&]<int... J>(std::integer_sequence<int, J...>) { (f(J), ...); }
  (std::make_integer_sequence<int, N>{});
}

// The output stage: the channel's bias (where the sums start), its requantisation (the records
// of PrepareMultiplier the prepare stored, one per channel or one for all), the output zero
// point, the clamp to the activation's range (reference_integer_ops' order).
template <typename A, bool kPerChannel = true>
class OutputStage {
 public:
  explicit OutputStage(const KernelContext& ctx)
      : records_(ctx.prepared.data()),
        bias_(HasBias(ctx) ? BiasInput<A, int32_t>(ctx) : ZeroBiases(ctx)),
        zero_point_(ZeroPoint(ctx.outputs[0])),
        range_(OutputRange(ctx)) {
    // The range in bytes. Its ends lie in int8's range unless a zero point does not (a broken
    // model): then the range is empty (min > 127 or max < -128 while min >= -128 and max <= 127)
    // and every output is max cast to int8, which a range of that single value gives.
    const bool in_int8 = range_.min <= 127 && range_.max >= -128;
    const int32_t lo = in_int8 ? range_.min : static_cast<int8_t>(range_.max);
    const int32_t hi = in_int8 ? range_.max : static_cast<int8_t>(range_.max);
    lo_bytes_ = dsp::Bytes(lo), hi_bytes_ = dsp::Bytes(hi);
  }

  int32_t Bias(Index channel) const { return bias_[channel]; }

  int8_t operator()(int32_t acc, Index channel) const {
    const int32_t v = Unclamped(acc, records_ + channel * record_stride_);
    return static_cast<int8_t>(std::min(std::max(v, range_.min), range_.max));
  }
  // Four channels' outputs, channel .. channel + 3, packed in a word (channel first): each
  // saturated to int8, then clamped bytewise to the range (the same values: the range lies
  // within int8's).
  [[gnu::always_inline]] uint32_t Four(const int32_t* acc, Index channel) const {
    const int32_t* record = records_ + channel * record_stride_;
    int32_t v[4];
    Unrolled<4>(
        [&](int j) { v[j] = dsp::Saturate8(Unclamped(acc[j], record + j * record_stride_)); });
    return dsp::ClampBytes(dsp::PackBytes(v[0], v[1], v[2], v[3]), lo_bytes_, hi_bytes_);
  }

 private:
  // The zero biases the prepare stored after the records for a node without a bias.
  static In<A, int32_t> ZeroBiases(const KernelContext& ctx) {
    const Index records = kPerChannel ? static_cast<Index>(ctx.outputs[0].shape.back()) : 1;
    return In<A, int32_t>{ctx.prepared.data() + records * kPreparedMultiplierWords};
  }
  // A sum rescaled by its channel's record and moved by the output zero point, before the clamp.
  int32_t Unclamped(int32_t acc, const int32_t* record) const {
    return WrapAdd(MultiplyByPreparedMultiplier(acc, record), zero_point_);
  }

  // One record per channel or one for all: a stride known at compile time, so that a block's
  // four records are read at immediate offsets.
  static constexpr Index record_stride_ = kPerChannel ? kPreparedMultiplierWords : 0;
  const int32_t* records_;
  In<A, int32_t> bias_;
  int32_t zero_point_;
  QuantRange range_;
  uint32_t lo_bytes_, hi_bytes_;
};

// Starts the sums of channels channel .. channel + N - 1 at their biases.
template <int N, typename Stage>
[[gnu::always_inline]] inline void StartSums(const Stage& output, Index channel, int32_t* acc) {
  Unrolled<N>([&](int j) { acc[j] = output.Bias(channel + j); });
}

// acc[j] += sum over d < depth of (w[wi + j * w_stride + d] + w_off) * (x[xi + d] + x_off), for
// the N output channels j of a block: four depths per word load while the offsets fit the
// lanes, then one at a time. The sums and the N + 1 walking pointers are locals (registers).
// kWholeWords: the caller knows that depth is a multiple of four and that the offsets fit the
// lanes (no test, no tail loop).
template <int N, bool kSymmetric, bool kWholeWords = false, typename A>
[[gnu::always_inline]] inline void DotRows(In<A, int8_t> x, Index xi, const Offset& x_off,
                                           In<A, int8_t> w, Index wi, Index w_stride,
                                           const Offset& w_off, Index depth, int32_t* acc) {
  int32_t sum[N];
  const int8_t* wp[N];
  Unrolled<N>([&](int j) {
    sum[j] = acc[j];
    wp[j] = w.base + wi + j * w_stride;
  });
  const int8_t* xp = x.base + xi;
  const int8_t* const x_end = xp + depth;
  if (kWholeWords || (x_off.fits_lanes && w_off.fits_lanes)) {
    const int8_t* const x_end4 = kWholeWords ? x_end : xp + (depth & ~Index{3});
    for (; xp != x_end4; xp += 4) {
      const uint32_t xw = In<A, int8_t>{xp}.Word(0);
      const uint32_t x_even = dsp::Sxtab16(x_off.lanes, xw);
      const uint32_t x_odd = dsp::Sxtab16Odd(x_off.lanes, xw);
      Unrolled<N>([&](int j) {
        const uint32_t ww = In<A, int8_t>{wp[j]}.Word(0);
        wp[j] += 4;
        const uint32_t w_even = kSymmetric ? dsp::Sxtb16(ww) : dsp::Sxtab16(w_off.lanes, ww);
        const uint32_t w_odd = kSymmetric ? dsp::Sxtb16Odd(ww) : dsp::Sxtab16Odd(w_off.lanes, ww);
        sum[j] = dsp::Smlad(x_odd, w_odd, dsp::Smlad(x_even, w_even, sum[j]));
      });
    }
  }
  for (; !kWholeWords && xp != x_end; ++xp) {
    const int32_t xv = WrapAdd(In<A, int8_t>{xp}[0], x_off.value);
    Unrolled<N>([&](int j) {
      sum[j] = WrapAdd(sum[j], WrapMul(WrapAdd(In<A, int8_t>{wp[j]}[0], w_off.value), xv));
      ++wp[j];
    });
  }
  Unrolled<N>([&](int j) { acc[j] = sum[j]; });
}

#ifdef MEMFOLD_ARM_DSP
// One input word (four depths) of DotFourLoop: 23 instructions for 16 products.
#define MEMFOLD_DOT_FOUR_WORD                  \
  "ldr %[xw], [%[xp]], #4\n\t"                 \
  "sxtab16 %[xe], %[lanes], %[xw]\n\t"         \
  "sxtab16 %[xw], %[lanes], %[xw], ror #8\n\t" \
  "ldr %[w], [%[w01], %[stride]]\n\t"          \
  "sxtb16 %[t], %[w]\n\t"                      \
  "smlad %[s1], %[xe], %[t], %[s1]\n\t"        \
  "sxtb16 %[w], %[w], ror #8\n\t"              \
  "smlad %[s1], %[xw], %[w], %[s1]\n\t"        \
  "ldr %[w], [%[w01]], #4\n\t"                 \
  "sxtb16 %[t], %[w]\n\t"                      \
  "smlad %[s0], %[xe], %[t], %[s0]\n\t"        \
  "sxtb16 %[w], %[w], ror #8\n\t"              \
  "smlad %[s0], %[xw], %[w], %[s0]\n\t"        \
  "ldr %[w], [%[w23], %[stride]]\n\t"          \
  "sxtb16 %[t], %[w]\n\t"                      \
  "smlad %[s3], %[xe], %[t], %[s3]\n\t"        \
  "sxtb16 %[w], %[w], ror #8\n\t"              \
  "smlad %[s3], %[xw], %[w], %[s3]\n\t"        \
  "ldr %[w], [%[w23]], #4\n\t"                 \
  "sxtb16 %[t], %[w]\n\t"                      \
  "smlad %[s2], %[xe], %[t], %[s2]\n\t"        \
  "sxtb16 %[w], %[w], ror #8\n\t"              \
  "smlad %[s2], %[xw], %[w], %[s2]\n\t"

// DotFour's loop on the DSP core, written out, kWords input words per iteration (GCC's own
// allocation of the C loop spills four values per word). Its 13 operands are pinned to
// registers (all of r0-r12 and lr but r7, the Thumb frame pointer; the loop's end is read from
// memory): left to choose, GCC fails to find them inside some callers ("impossible
// constraints"), depending on what else the caller keeps live. Advances xp, w01 and w23 to the
// end.
template <int kWords>
[[gnu::always_inline]] inline void DotFourLoop(const int8_t*& xp, const int8_t* x_end,
                                               uint32_t x_lanes, const int8_t*& w01,
                                               const int8_t*& w23, Index stride, int32_t* acc) {
  static_assert(kWords == 1 || kWords == 2);
  register const int8_t* x_at asm("r0") = xp;
  register const int8_t* w01_at asm("r1") = w01;
  register const int8_t* w23_at asm("r2") = w23;
  register int32_t s0 asm("r3") = acc[0];
  register int32_t s1 asm("r4") = acc[1];
  register int32_t s2 asm("r5") = acc[2];
  register int32_t s3 asm("r6") = acc[3];
  register uint32_t xw asm("r8");
  register uint32_t xe asm("r9");
  register uint32_t w asm("r10");
  register uint32_t t asm("r11");
  register uint32_t lanes asm("r12") = x_lanes;
  register Index w_stride asm("lr") = stride;
#define MEMFOLD_DOT_FOUR_OPERANDS                                                            \
  : [xp] "+r"(x_at), [w01] "+r"(w01_at), [w23] "+r"(w23_at), [s0] "+r"(s0), [s1] "+r"(s1), \
    [s2] "+r"(s2), [s3] "+r"(s3), [xw] "=&r"(xw), [xe] "=&r"(xe), [w] "=&r"(w), [t] "=&r"(t) \
  : [x_end] "m"(x_end), [lanes] "r"(lanes), [stride] "r"(w_stride)                       \
  : "cc", "memory"
#define MEMFOLD_DOT_FOUR_NEXT "ldr %[w], %[x_end]\n\tcmp %[xp], %[w]\n\tbne 1b"
  if constexpr (kWords == 2) {
    __asm__ volatile("1:\n\t" MEMFOLD_DOT_FOUR_WORD MEMFOLD_DOT_FOUR_WORD MEMFOLD_DOT_FOUR_NEXT
                         MEMFOLD_DOT_FOUR_OPERANDS);
  } else {
    __asm__ volatile(
        "1:\n\t" MEMFOLD_DOT_FOUR_WORD MEMFOLD_DOT_FOUR_NEXT MEMFOLD_DOT_FOUR_OPERANDS);
  }
#undef MEMFOLD_DOT_FOUR_NEXT
#undef MEMFOLD_DOT_FOUR_OPERANDS
  xp = x_at, w01 = w01_at, w23 = w23_at;
  acc[0] = s0, acc[1] = s1, acc[2] = s2, acc[3] = s3;
}
#undef MEMFOLD_DOT_FOUR_WORD
#endif

// The sums of four channels at once, for a depth that is a multiple of four and offsets that
// fit the lanes: filter rows w01 and w01 + stride, w23 and w23 + stride, four sums per input
// word instead of two. DotFourLoop on the DSP core; elsewhere, and for tracing, in C.
template <typename A>
[[gnu::always_inline]] inline void DotFour(const int8_t* xp, const int8_t* x_end, uint32_t x_lanes,
                                           const int8_t* w01, const int8_t* w23, Index stride,
                                           int32_t* acc) {
#ifdef MEMFOLD_ARM_DSP
  if constexpr (std::is_same_v<A, Direct>) {
    // An odd word first, alone, then two at a time.
    if (((x_end - xp) & 4) != 0) DotFourLoop<1>(xp, xp + 4, x_lanes, w01, w23, stride, acc);
    if (xp != x_end) DotFourLoop<2>(xp, x_end, x_lanes, w01, w23, stride, acc);
    return;
  }
#endif
  int32_t s0 = acc[0], s1 = acc[1], s2 = acc[2], s3 = acc[3];
  auto mac = [](uint32_t x_even, uint32_t x_odd, uint32_t ww, int32_t sum) {
    return dsp::Smlad(x_odd, dsp::Sxtb16Odd(ww), dsp::Smlad(x_even, dsp::Sxtb16(ww), sum));
  };
  for (; xp != x_end; xp += 4, w01 += 4, w23 += 4) {
    const uint32_t xw = In<A, int8_t>{xp}.Word(0);
    const uint32_t x_even = dsp::Sxtab16(x_lanes, xw), x_odd = dsp::Sxtab16Odd(x_lanes, xw);
    s0 = mac(x_even, x_odd, In<A, int8_t>{w01}.Word(0), s0);
    s1 = mac(x_even, x_odd, In<A, int8_t>{w01}.Word(stride), s1);
    s2 = mac(x_even, x_odd, In<A, int8_t>{w23}.Word(0), s2);
    s3 = mac(x_even, x_odd, In<A, int8_t>{w23}.Word(stride), s3);
  }
  acc[0] = s0, acc[1] = s1, acc[2] = s2, acc[3] = s3;
}

// The same for a block of N channels, two at a time: four at once need more registers than
// Armv7-M has (the sums, five pointers, the offsets and the expanded words), and the spills
// cost more than reading the input twice. Every read still precedes the block's writes. Kept
// out of line: inlined into the pixel loop, GCC spills the inner loop's registers (measured on
// person_detect: 21 % more instructions).
template <int N, bool kSymmetric, typename A>
[[gnu::noinline]] void Dot(In<A, int8_t> x, Index xi, const Offset& x_off, In<A, int8_t> w,
                           Index wi, Index w_stride, const Offset& w_off, Index depth,
                           int32_t* acc) {
  if constexpr (N > 2) {
    DotRows<2, kSymmetric>(x, xi, x_off, w, wi, w_stride, w_off, depth, acc);
    DotRows<N - 2, kSymmetric>(x, xi, x_off, w, wi + 2 * w_stride, w_stride, w_off, depth, acc + 2);
  } else {
    DotRows<N, kSymmetric>(x, xi, x_off, w, wi, w_stride, w_off, depth, acc);
  }
}

// The taps t in [begin, end) of a window whose input position origin + dilation * t lies in
// [0, extent): contiguous, as positions grow with t.
struct TapRange {
  Index begin, end;
  TapRange(Index origin, Index taps, Index dilation, Index extent) : begin(0), end(taps) {
    while (begin < end && origin + dilation * begin < 0) ++begin;
    while (end > begin && origin + dilation * (end - 1) >= extent) --end;
  }
};

// A 2-D window's geometry in machine words, and the input pixel (b, y, x)'s first element.
struct Geometry {
  Index in_h, in_w, in_c, out_h, out_w, k_h, k_w, stride_h, stride_w, dil_h, dil_w, pad_top,
      pad_left;
  Geometry(const Window2D& w, int64_t channels)
      : in_h(w.in_h),
        in_w(w.in_w),
        in_c(channels),
        out_h(w.out_h),
        out_w(w.out_w),
        k_h(w.k_h),
        k_w(w.k_w),
        stride_h(w.stride_h),
        stride_w(w.stride_w),
        dil_h(w.dil_h),
        dil_w(w.dil_w),
        pad_top(w.pad_top),
        pad_left(w.pad_left) {}
  Index Pixel(Index b, Index y, Index x) const { return ((b * in_h + y) * in_w + x) * in_c; }
  TapRange Rows(Index oy) const { return {oy * stride_h - pad_top, k_h, dil_h, in_h}; }
  TapRange Cols(Index ox) const { return {ox * stride_w - pad_left, k_w, dil_w, in_w}; }
};

// The output columns whose window row lies wholly inside the input: [begin, end), empty when
// there are none (paddings are not negative).
struct FullColumns {
  Index begin, end;
  explicit FullColumns(const Geometry& g) : begin((g.pad_left + g.stride_w - 1) / g.stride_w) {
    // ox * stride_w - pad_left >= 0, and its last tap, (k_w - 1) * dil_w further, < in_w.
    const Index last = g.in_w - 1 - (g.k_w - 1) * g.dil_w + g.pad_left;
    end = last < 0 ? begin : std::max(begin, std::min(g.out_w, last / g.stride_w + 1));
  }
};

// An output pixel and the taps of its window inside the input.
struct Tap {
  Index b, oy, ox;
  TapRange rows, cols;
};

// What a window kernel reads and writes, and how it rescales its sums.
template <typename A>
struct WindowArgs {
  Geometry g;
  In<A, int8_t> x, w;
  Out<A, int8_t> y;
  OutputStage<A> output;
  Offset x_off;
  WindowArgs(const KernelContext& ctx, const Geometry& geometry)
      : g(geometry),
        x{ctx.inputs[0].ptr<int8_t>()},
        w{ctx.inputs[1].ptr<int8_t>()},
        y(OutputOf<A, int8_t>(ctx.outputs[0])),
        output(ctx),
        x_off(-ZeroPoint(ctx.inputs[0])) {}
};

// Writes the N sums of a block: outputs y_index + j of channels channel + j, in order.
// (All N values are computed before the first store: a byte store may alias anything, so a
// store between them would make the compiler reload the output stage's fields.)
template <int N, typename A, typename Stage>
[[gnu::always_inline]] inline void StoreBlock(const Out<A, int8_t>& y, const Stage& output,
                                              Index y_index, Index channel, const int32_t* acc) {
  if constexpr (N == 4) {
    y.SetWord(y_index, output.Four(acc, channel));
  } else {
    int8_t value[N];
    Unrolled<N>([&](int j) { value[j] = output(acc[j], channel + j); });
    Unrolled<N>([&](int j) { y.Set(y_index + j, value[j]); });
  }
}

// Calls block(integral N) for the channel blocks [c, c + N) of `channels` in order: whole blocks
// of kBlock, then the rest.
template <typename Block>
void ForEachChannelBlock(Index channels, Block block) {
  static_assert(kBlock == 4, "the partial blocks below are 3, 2 and 1 channels");
  Index c = 0;
  for (; c + kBlock <= channels; c += kBlock) block(std::integral_constant<int, 4>{}, c);
  switch (channels - c) {
    case 3:
      return block(std::integral_constant<int, 3>{}, c);
    case 2:
      return block(std::integral_constant<int, 2>{}, c);
    case 1:
      return block(std::integral_constant<int, 1>{}, c);
    default:
      return;
  }
}

// The input runs one output pixel of the conv reads: with dilation 1 a window row is one run of
// memory in both the input and the filter (`rows` runs of `run` elements, `x_step` and `w_step`
// apart, from x_first and block + w_first); with a dilated row, one run per tap.
struct ConvRuns {
  Index rows, x_first, x_step, w_first, w_step, run;
  Index cols, x_col_step, w_col_step;  // taps per row: 1 for dilation 1
  ConvRuns(const Geometry& g, const Tap& at) {
    const Index iy = at.oy * g.stride_h - g.pad_top + at.rows.begin * g.dil_h;
    const Index ix = at.ox * g.stride_w - g.pad_left + at.cols.begin * g.dil_w;
    const Index taps = at.cols.end - at.cols.begin;
    rows = at.rows.end - at.rows.begin;
    x_first = g.Pixel(at.b, iy, ix);
    x_step = g.dil_h * g.in_w * g.in_c;
    w_first = (at.rows.begin * g.k_w + at.cols.begin) * g.in_c;
    w_step = g.k_w * g.in_c;
    const bool joined = g.dil_w == 1;
    run = joined ? taps * g.in_c : g.in_c;
    cols = joined ? 1 : taps;
    x_col_step = g.dil_w * g.in_c;
    w_col_step = g.in_c;
  }
};

// One block of N output channels of the conv at one output pixel: the dot products of every
// run of its window, then the N writes.
template <int N, typename A>
[[gnu::always_inline]] inline void ConvBlock(const WindowArgs<A>& a, const ConvRuns& r,
                                             Index filter_stride, Index oc, Index y_index) {
  const Offset no_offset(0);
  int32_t acc[N];
  StartSums<N>(a.output, oc, acc);
  Index x_row = r.x_first, w_row = oc * filter_stride + r.w_first;
  for (Index fy = 0; fy < r.rows; ++fy, x_row += r.x_step, w_row += r.w_step) {
    Index xi = x_row, wi = w_row;
    for (Index fx = 0; fx < r.cols; ++fx, xi += r.x_col_step, wi += r.w_col_step) {
      if (N == 4 && r.run % 4 == 0 && a.x_off.fits_lanes) {
        const int8_t* const xp = a.x.base + xi;
        DotFour<A>(xp, xp + r.run, a.x_off.lanes, a.w.base + wi, a.w.base + wi + 2 * filter_stride,
                   filter_stride, acc);
      } else {
        Dot<N, true>(a.x, xi, a.x_off, a.w, wi, filter_stride, no_offset, r.run, acc);
      }
    }
  }
  StoreBlock<N>(a.y, a.output, y_index, oc, acc);
}

// Every output channel of the conv at one output pixel, block by block.
template <typename A>
[[gnu::noinline]] void ConvPixel(const WindowArgs<A>& a, const Tap& at, Index out_c,
                                 Index y_index) {
  const ConvRuns runs(a.g, at);
  const Index filter_stride = a.g.k_h * a.g.k_w * a.g.in_c;
  ForEachChannelBlock(
      out_c, [&](auto n, Index oc) { ConvBlock<n()>(a, runs, filter_stride, oc, y_index + oc); });
}

// A conv whose whole window (k_h x k_w x in_c, the filter's row) fits kInt8ConvPatchBytes: layers
// with few input channels, whose window rows are too short for the row-by-row walk to pay
// (KWS's 10x4 over one channel: four bytes a row). Per output pixel the window is gathered
// into a patch on the stack, taps outside the input set to the input's zero point (so that
// they add zero once offset), and every block of channels is then one dot product of the
// patch with the filter rows. The gather reads the whole window before the pixel's first
// write: no read happens later, relative to the writes, than in the reference order.
class ConvPatch {
 public:
  // Whether the conv of `a` runs this way (Int8ConvGathersWindow).
  template <typename A>
  static bool Fits(const WindowArgs<A>& a) {
    return Int8ConvGathersWindow(a.g.k_h * a.g.k_w * a.g.in_c, -a.x_off.value);
  }

  // The window of output pixel `at`, row by row: the taps inside the input copied (a window row
  // without dilation is one run), the others the padding value.
  template <typename A>
  void Gather(const WindowArgs<A>& a, const Tap& at) {
    const Geometry& g = a.g;
    const auto pad = static_cast<int8_t>(-a.x_off.value);
    const Index row_bytes = g.k_w * g.in_c;
    const Index first = at.cols.begin * g.in_c, last = at.cols.end * g.in_c;
    const Index ix = at.ox * g.stride_w - g.pad_left + at.cols.begin * g.dil_w;
    int8_t* row = bytes_;
    for (Index fy = 0; fy < g.k_h; ++fy, row += row_bytes) {
      if (fy < at.rows.begin || fy >= at.rows.end) {
        Fill(row, row_bytes, pad);
        continue;
      }
      const Index iy = at.oy * g.stride_h - g.pad_top + fy * g.dil_h;
      const In<A, int8_t> x{a.x.base + g.Pixel(at.b, iy, ix)};
      Fill(row, first, pad);
      if (g.dil_w == 1) {
        Copy(row + first, x, last - first);
      } else {
        for (Index t = first; t < last; t += g.in_c)
          Copy(row + t, In<A, int8_t>{x.base + (t - first) * g.dil_w}, g.in_c);
      }
      Fill(row + last, row_bytes - last, pad);
    }
  }

  // Every output channel of the pixel, block by block, from the gathered patch.
  template <typename A>
  void Pixel(const WindowArgs<A>& a, Index out_c, Index y_index) const {
    const Offset no_offset(0);
    const Index depth = a.g.k_h * a.g.k_w * a.g.in_c;
    const In<A, int8_t> patch{bytes_};
    ForEachChannelBlock(out_c, [&](auto n, Index oc) {
      constexpr int N = n();
      int32_t acc[N];
      StartSums<N>(a.output, oc, acc);
      if (N == 4 && depth >= 4) {  // whole words four channels at a time, then the rest
        const Index whole = depth & ~Index{3};
        DotFour<A>(bytes_, bytes_ + whole, a.x_off.lanes, a.w.base + oc * depth,
                   a.w.base + (oc + 2) * depth, depth, acc);
        if (whole != depth) {
          DotRows<2, true>(patch, whole, a.x_off, a.w, oc * depth + whole, depth, no_offset,
                           depth - whole, acc);
          DotRows<2, true>(patch, whole, a.x_off, a.w, (oc + 2) * depth + whole, depth, no_offset,
                           depth - whole, acc + 2);
        }
      } else {
        Dot<N, true>(patch, 0, a.x_off, a.w, oc * depth, depth, no_offset, depth, acc);
      }
      StoreBlock<N>(a.y, a.output, y_index + oc, oc, acc);
    });
  }

 private:
  static void Fill(int8_t* to, Index n, int8_t value) {
    for (Index k = 0; k < n; ++k) to[k] = value;  // a few bytes: a call to memset costs more
  }
  // n bytes from x, a word at a time while they last (CopyRun writes through an output view,
  // whose row test per call costs 1 % of vww_96's instructions here).
  template <typename A>
  static void Copy(int8_t* to, In<A, int8_t> x, Index n) {
    Index k = 0;
    for (; k + 4 <= n; k += 4) {
      const uint32_t word = x.Word(k);
      std::memcpy(to + k, &word, sizeof(word));
    }
    for (; k < n; ++k) to[k] = x[k];
  }

  int8_t bytes_[kInt8ConvPatchBytes];
};

// The offsets of the taps of a window of rows x cols taps from its first tap, as (input,
// filter) pairs row by row, for windows of at most kTaps taps: every block of channels of a
// pixel walks them as one flat loop (per-row set-up costs as much as the taps of a 3x3 window).
// Consecutive pixels mostly clip their windows alike, so the list is rebuilt only when the
// window's extent changes.
class TapTable {
 public:
  static constexpr Index kTaps = 25;  // 5x5: 200 bytes of stack

  // The list for a rows x cols window with the given steps, or nullptr when it is too large.
  const Index* For(Index rows, Index cols, Index x_col, Index x_row, Index w_col, Index w_row) {
    if (rows * cols > kTaps) return nullptr;
    if (rows != rows_ || cols != cols_) {
      Index* t = offsets_;
      for (Index r = 0; r < rows; ++r) {
        for (Index c = 0; c < cols; ++c, t += 2) {
          t[0] = r * x_row + c * x_col;
          t[1] = r * w_row + c * w_col;
        }
      }
      rows_ = rows, cols_ = cols;
    }
    return offsets_;
  }

 private:
  Index rows_ = -1, cols_ = -1;
  Index offsets_[2 * kTaps];
};

// The taps one output pixel of the depthwise conv reads: rows x cols of them, the first at input
// element x_first (+ the block's input channel) and filter element w_first (+ the block's
// output channel), the next column x_col / w_col further, the next row x_row / w_row; listed
// in `table` when the window is small enough.
struct DepthwiseTaps {
  Index rows, cols, x_first, x_col, x_row, w_first, w_col, w_row;
  const Index* table;
  const Index* table_end;
  DepthwiseTaps(const Geometry& g, const Tap& at, Index out_c, TapTable& tap_table) {
    const Index iy = at.oy * g.stride_h - g.pad_top + at.rows.begin * g.dil_h;
    const Index ix = at.ox * g.stride_w - g.pad_left + at.cols.begin * g.dil_w;
    rows = at.rows.end - at.rows.begin;
    cols = at.cols.end - at.cols.begin;
    x_first = g.Pixel(at.b, iy, ix);
    x_col = g.dil_w * g.in_c;
    x_row = g.dil_h * g.in_w * g.in_c;
    w_first = (at.rows.begin * g.k_w + at.cols.begin) * out_c;
    w_col = out_c;
    w_row = g.k_w * out_c;
    table = tap_table.For(rows, cols, x_col, x_row, w_col, w_row);
    table_end = table == nullptr ? nullptr : table + 2 * rows * cols;
  }
  // Calls tap(x, w) for every tap, with views starting at the tap's input and filter elements;
  // x_base and w_base: the first tap's (x_first and w_first, plus the block's channels).
  template <typename A, typename F>
  [[gnu::always_inline]] void ForEach(const int8_t* x_base, const int8_t* w_base, F tap) const {
    if (table != nullptr) {
      for (const Index* t = table; t != table_end; t += 2)
        tap(In<A, int8_t>{x_base + t[0]}, In<A, int8_t>{w_base + t[1]});
      return;
    }
    const int8_t* x_start = x_base;
    const int8_t* w_start = w_base;
    for (Index r = 0; r < rows; ++r, x_start += x_row, w_start += w_row) {
      const int8_t* xp = x_start;
      const int8_t* wp = w_start;
      const int8_t* const x_end = x_start + cols * x_col;
      for (; xp != x_end; xp += x_col, wp += w_col) tap(In<A, int8_t>{xp}, In<A, int8_t>{wp});
    }
  }
};

// How a block of four depthwise channels c..c+3 meets its inputs: channels c..c+3 in SIMD lanes
// (multiplier one: c, c + 2 in the even lanes, c + 1, c + 3 in the odd ones), one input
// channel shared by all four (a multiplier divisible by four: the value in both lanes), or one
// product at a time (any other block, or offsets beyond the lanes).
enum class DepthwiseKind { kLanes, kShared, kScalar };

// One block of four depthwise channels in lanes: with kShared all four read input channel
// x_channel (the value in both lanes of both words), else channels c..c+3 (a word of four).
template <bool kShared, typename A>
[[gnu::always_inline]] inline void DepthwiseLanes(const DepthwiseTaps& t, const int8_t* x_base,
                                                  const int8_t* w_base, const Offset& x_off,
                                                  int32_t* acc) {
  int32_t acc0 = acc[0], acc1 = acc[1], acc2 = acc[2], acc3 = acc[3];
  t.ForEach<A>(x_base, w_base, [&](In<A, int8_t> x, In<A, int8_t> w) {
    uint32_t x_even, x_odd;
    if constexpr (kShared) {
      x_even = x_odd = dsp::Lanes(WrapAdd(x[0], x_off.value));
    } else {
      const uint32_t xw = x.Word(0);
      x_even = dsp::Sxtab16(x_off.lanes, xw);
      x_odd = dsp::Sxtab16Odd(x_off.lanes, xw);
    }
    const uint32_t ww = w.Word(0);
    const uint32_t w_even = dsp::Sxtb16(ww), w_odd = dsp::Sxtb16Odd(ww);
    acc0 = dsp::Smlabb(x_even, w_even, acc0);
    acc1 = dsp::Smlabb(x_odd, w_odd, acc1);
    acc2 = dsp::Smlatt(x_even, w_even, acc2);
    acc3 = dsp::Smlatt(x_odd, w_odd, acc3);
  });
  acc[0] = acc0, acc[1] = acc1, acc[2] = acc2, acc[3] = acc3;
}

// Output channel c + j reads input channel (c + j) / multiplier.
template <int N, typename A>
void DepthwiseScalar(const WindowArgs<A>& a, const DepthwiseTaps& t, Index multiplier, Index c,
                     int32_t* acc) {
  Index x_channel[N];
  Unrolled<N>([&](int j) { x_channel[j] = (c + j) / multiplier; });
  t.ForEach<A>(a.x.base + t.x_first, a.w.base + t.w_first + c,
               [&](In<A, int8_t> x, In<A, int8_t> w) {
                 Unrolled<N>([&](int j) {
                   const int32_t xv = WrapAdd(x[x_channel[j]], a.x_off.value);
                   acc[j] = WrapAdd(acc[j], WrapMul(w[j], xv));
                 });
               });
}

// Every channel of the depthwise conv at one output pixel: the whole blocks of four in one loop
// of kKind (fixed per layer: no dispatch per block), then the rest one product at a time.
template <DepthwiseKind kKind, typename A>
[[gnu::noinline]] void DepthwisePixel(const WindowArgs<A>& a, const DepthwiseTaps& taps,
                                      Index multiplier, Index out_c, Index y_index) {
  const Index whole = kKind == DepthwiseKind::kScalar ? 0 : out_c & ~(kBlock - 1);
  const DepthwiseTaps& t = taps;
  const Offset& x_off = a.x_off;
  const int8_t* const x_first = a.x.base + t.x_first;
  const int8_t* const w_first = a.w.base + t.w_first;
  for (Index c = 0; c < whole; c += kBlock) {
    int32_t acc[kBlock];
    StartSums<kBlock>(a.output, c, acc);
    const Index x_channel = kKind == DepthwiseKind::kLanes ? c : c / multiplier;
    DepthwiseLanes<kKind == DepthwiseKind::kShared, A>(t, x_first + x_channel, w_first + c, x_off,
                                                       acc);
    StoreBlock<kBlock>(a.y, a.output, y_index + c, c, acc);
  }
  ForEachChannelBlock(out_c - whole, [&](auto n, Index block) {
    const Index c = whole + block;
    int32_t acc[n()];
    StartSums<n()>(a.output, c, acc);
    DepthwiseScalar<n()>(a, taps, multiplier, c, acc);
    StoreBlock<n()>(a.y, a.output, y_index + c, c, acc);
  });
}

// Calls pixel(tap, y_index) over the output pixels in order, with the pixel's window clipped to
// the input; y_index is the pixel's first output element.
template <typename Pixel>
void ForEachPixel(Index batches, const Geometry& g, Index out_c, Pixel pixel) {
  Index y_index = 0;
  for (Index b = 0; b < batches; ++b) {
    for (Index oy = 0; oy < g.out_h; ++oy) {
      const TapRange rows = g.Rows(oy);
      for (Index ox = 0; ox < g.out_w; ++ox, y_index += out_c)
        pixel(Tap{b, oy, ox, rows, g.Cols(ox)}, y_index);
    }
  }
}

}  // namespace

namespace {

// Whether output pixel p of the conv reads exactly input pixel p: a 1x1 filter, stride 1, no
// padding (then the conv is a matrix product).
bool IsPointwise(const Geometry& g) {
  return g.k_h == 1 && g.k_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_top == 0 &&
         g.pad_left == 0 && g.in_h == g.out_h && g.in_w == g.out_w;
}

// The pointwise conv: per pixel, the whole blocks of four channels in one loop (DotFour; a
// per-block lambda kept its state in memory), then the rest two sums at a time.
// kWholeWords: in_c is a multiple of four and the input offset fits the lanes.
template <bool kWholeWords, typename A>
void PointwiseConv(const WindowArgs<A>& a, Index pixels, Index out_c) {
  const Offset no_offset(0);
  const Index depth = a.g.in_c;
  const Index whole_blocks = kWholeWords ? out_c / kBlock * kBlock : 0;
  const uint32_t lanes = a.x_off.lanes;
  const int8_t* const x_base = a.x.base;
  const int8_t* const w_base = a.w.base;
  for (Index p = 0, xi = 0, yi = 0; p < pixels; ++p, xi += depth, yi += out_c) {
    // Whole blocks of four channels in one loop, everything it needs in locals.
    const int8_t* const xp = x_base + xi;
    const int8_t* wp = w_base;
    for (Index oc = 0; oc < whole_blocks; oc += kBlock, wp += kBlock * depth) {
      int32_t acc[kBlock];
      StartSums<kBlock>(a.output, oc, acc);
      DotFour<A>(xp, xp + depth, lanes, wp, wp + 2 * depth, depth, acc);
      StoreBlock<kBlock>(a.y, a.output, yi + oc, oc, acc);
    }
    ForEachChannelBlock(out_c - whole_blocks, [&](auto n, Index block) {
      constexpr int N = n();
      const Index oc = whole_blocks + block;
      int32_t acc[N];
      StartSums<N>(a.output, oc, acc);
      DotRows < N<2 ? N : 2, true, kWholeWords>(a.x, xi, a.x_off, a.w, oc * depth, depth, no_offset,
                                                depth, acc);
      if constexpr (N > 2) {
        DotRows<N - 2, true, kWholeWords>(a.x, xi, a.x_off, a.w, (oc + 2) * depth, depth, no_offset,
                                          depth, acc + 2);
      }
      StoreBlock<N>(a.y, a.output, yi + oc, oc, acc);
    });
  }
}

}  // namespace

template <typename A>
void Conv2DI8Simd(const KernelContext& ctx) {
  const ShapeView f = ctx.inputs[1].shape;  // [out_c, k_h, k_w, in_c]
  const WindowArgs<A> a(ctx, Geometry(WindowOf(ctx, f[1], f[2]), f[3]));
  const Index out_c = f[0], batches = ctx.inputs[0].shape[0];
  if (IsPointwise(a.g)) {
    const Index pixels = batches * a.g.out_h * a.g.out_w;
    if (a.x_off.fits_lanes && a.g.in_c % 4 == 0) return PointwiseConv<true>(a, pixels, out_c);
    return PointwiseConv<false>(a, pixels, out_c);
  }
  if (ConvPatch::Fits(a)) {
    ConvPatch patch;
    ForEachPixel(batches, a.g, out_c, [&](const Tap& at, Index y) {
      patch.Gather(a, at);
      patch.Pixel(a, out_c, y);
    });
    return;
  }
  ForEachPixel(batches, a.g, out_c, [&](const Tap& at, Index y) { ConvPixel(a, at, out_c, y); });
}

namespace {

// The depthwise conv over every output pixel, its blocks of kKind. A run of output columns whose
// window rows lie wholly inside the input reads the same taps one stride further on each time:
// their taps are worked out once per run.
template <DepthwiseKind kKind, typename A>
void DepthwiseConv(const WindowArgs<A>& a, Index batches, Index multiplier) {
  const Geometry& g = a.g;
  const Index out_c = g.in_c * multiplier, x_step = g.stride_w * g.in_c;
  const FullColumns full(g);
  TapTable tap_table;
  Index y_index = 0;
  for (Index b = 0; b < batches; ++b) {
    for (Index oy = 0; oy < g.out_h; ++oy) {
      const TapRange rows = g.Rows(oy);
      for (Index ox = 0; ox < g.out_w;) {
        DepthwiseTaps taps(g, Tap{b, oy, ox, rows, g.Cols(ox)}, out_c, tap_table);
        const Index run_end = ox >= full.begin && ox < full.end ? full.end : ox + 1;
        for (; ox < run_end; ++ox, y_index += out_c, taps.x_first += x_step)
          DepthwisePixel<kKind>(a, taps, multiplier, out_c, y_index);
      }
    }
  }
}

}  // namespace

template <typename A>
void DepthwiseConv2DI8Simd(const KernelContext& ctx) {
  const ShapeView f = ctx.inputs[1].shape;  // [1, k_h, k_w, out_c]
  const Index in_c = ctx.inputs[0].shape[3], multiplier = f[3] / in_c;
  const Index batches = ctx.inputs[0].shape[0];
  const WindowArgs<A> a(ctx, Geometry(WindowOf(ctx, f[1], f[2]), in_c));
  if (!a.x_off.fits_lanes) return DepthwiseConv<DepthwiseKind::kScalar>(a, batches, multiplier);
  if (multiplier == 1) return DepthwiseConv<DepthwiseKind::kLanes>(a, batches, multiplier);
  if (multiplier % 4 == 0) return DepthwiseConv<DepthwiseKind::kShared>(a, batches, multiplier);
  DepthwiseConv<DepthwiseKind::kScalar>(a, batches, multiplier);
}

namespace {

// What the fully-connected kernel reads and writes.
template <typename A, bool kPerChannel>
struct FullyConnectedArgs {
  Index out_depth, depth;
  In<A, int8_t> x, w;
  Out<A, int8_t> y;
  OutputStage<A, kPerChannel> output;
  Offset x_off, w_off;
  explicit FullyConnectedArgs(const KernelContext& ctx)
      : out_depth(ctx.inputs[1].shape[0]),
        depth(ctx.inputs[1].shape[1]),
        x{ctx.inputs[0].ptr<int8_t>()},
        w{ctx.inputs[1].ptr<int8_t>()},
        y(OutputOf<A, int8_t>(ctx.outputs[0])),
        output(ctx),
        x_off(-ZeroPoint(ctx.inputs[0])),
        // Per-channel filters are symmetric (reference FullyConnectedPerChannel has no filter
        // offset).
        w_off(kPerChannel ? 0 : -ZeroPoint(ctx.inputs[1])) {}
};

// Output channels [oc, oc + N) of batch b. Out of line, so that only one block's frame is on
// the stack at a time (the device's RAM counts the stack).
template <int N, typename A, bool kPerChannel>
[[gnu::noinline]] void FullyConnectedBlock(const FullyConnectedArgs<A, kPerChannel>& f, Index b,
                                           Index oc) {
  int32_t acc[N];
  StartSums<N>(f.output, oc, acc);
  if (N == 4 && f.w_off.value == 0 && f.x_off.fits_lanes && f.depth % 4 == 0) {
    const int8_t* const xp = f.x.base + b * f.depth;
    DotFour<A>(xp, xp + f.depth, f.x_off.lanes, f.w.base + oc * f.depth,
               f.w.base + (oc + 2) * f.depth, f.depth, acc);
  } else if (f.w_off.value == 0) {
    Dot<N, true>(f.x, b * f.depth, f.x_off, f.w, oc * f.depth, f.depth, f.w_off, f.depth, acc);
  } else {
    Dot<N, false>(f.x, b * f.depth, f.x_off, f.w, oc * f.depth, f.depth, f.w_off, f.depth, acc);
  }
  StoreBlock<N>(f.y, f.output, b * f.out_depth + oc, oc, acc);
}

}  // namespace

namespace {

template <bool kPerChannel, typename A>
void FullyConnected(const KernelContext& ctx) {
  const FullyConnectedArgs<A, kPerChannel> f(ctx);
  const Index batches = ctx.outputs[0].elements() / std::max<Index>(1, f.out_depth);
  for (Index b = 0; b < batches; ++b) {
    ForEachChannelBlock(f.out_depth, [&](auto n, Index oc) { FullyConnectedBlock<n()>(f, b, oc); });
  }
}

}  // namespace

template <typename A>
void FullyConnectedI8Simd(const KernelContext& ctx) {
  if (ctx.inputs[1].quant.per_channel()) return FullyConnected<true, A>(ctx);
  FullyConnected<false, A>(ctx);
}

MF_INSTANTIATE_KERNEL(Conv2DI8Simd)
MF_INSTANTIATE_KERNEL(DepthwiseConv2DI8Simd)
MF_INSTANTIATE_KERNEL(FullyConnectedI8Simd)

}  // namespace memfold
