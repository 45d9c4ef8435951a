// The int8 SIMD kernels (ops/kernels/int8_simd.h) against an independent oracle written here
// from TFLM's reference loops (int64 sums, then TFLite's requantisation), on random shapes that
// reach every path: channel counts that are not multiples of four (partial blocks), depths with
// a remainder below four, 1x1 / 3x3 / 5x5 / 7x7 windows with stride, dilation and both paddings,
// depthwise multipliers 1 (lanes), 4 and 8 (shared input) and 2 or 3 (one product at a time),
// input zero points far outside int8 (the scalar fallback where the lanes would overflow),
// output zero points outside int8 (clamp bounds beyond int8), absent biases, relu and relu6,
// fully-connected with per-tensor filters that carry a zero point, and negative filter scales
// (their multipliers have no prepared record: the reference loops run). For every
// case the trace of the kernel's accesses must give a safe overlap at least the algorithmic
// model's (TFLM's reference order, which plans use), and at most Int8SimdOverlapSlack output
// elements above it (the rest of a channel block, or of a pixel for a conv that gathers its
// window).
#include "memfold/ops/kernels/int8_simd.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "memfold/exec/overlap_trace.h"
#include "memfold/ops/kernels/quant_math.h"
#include "memfold/ops/registry.h"
#include "tests/kernels/kernel_test_util.h"

namespace memfold {
namespace {

// Dyadic scales: their products and quotients are exact in float and double, so the oracle's
// multipliers are the prepare's whatever precision it multiplies in. The output scale is chosen
// per case (OutScaleFor) so that outputs spread over int8 instead of saturating.
constexpr float kInScale = 0.5f;
// With `negative`, every third channel's scale is negative (a real MCUNet model has such
// scales): its multiplier has no prepared record, and the kernels run the reference loops.
float FilterScale(int64_t c, bool negative = false) {
  const float scale = 0.03125f * static_cast<float>(1 + c % 5);
  return negative && c % 3 == 2 ? -scale : scale;
}

struct Window {
  int64_t k_h, k_w, stride, dilation;
  bool same;
};

int64_t OutSize(int64_t in, int64_t k, int64_t stride, int64_t dilation, bool same) {
  const int64_t effective = (k - 1) * dilation + 1;
  return same ? (in + stride - 1) / stride : (in - effective + stride) / stride;
}

int64_t PadBefore(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t dilation, bool same) {
  if (!same) return 0;
  return std::max<int64_t>(0, (out - 1) * stride + (k - 1) * dilation + 1 - in) / 2;
}

// The power of two that maps the largest |biased sum| times `product_scale` (input scale times
// the largest filter scale) to about 100.
float OutScaleFor(const std::vector<int64_t>& biased_sums, double product_scale) {
  int64_t largest = 1;
  for (int64_t v : biased_sums) largest = std::max(largest, v < 0 ? -v : v);
  return std::exp2f(std::ceil(std::log2(static_cast<double>(largest) * product_scale / 100.0)));
}

// TFLite's output stage: MultiplyByQuantizedMultiplier of the biased sum, zero point, the
// activation's clamp (none, relu or relu6 at the output scale), cast to int8 (which wraps a
// clamp bound outside int8 that a zero point outside int8 makes).
int8_t Requantize(int64_t sum, double real_multiplier, int64_t out_zp,
                  const std::string& activation, float out_scale) {
  int32_t multiplier = 0;
  int shift = 0;
  QuantizeMultiplier(real_multiplier, &multiplier, &shift);
  const auto acc = static_cast<int32_t>(static_cast<uint32_t>(sum));
  const int64_t v = MultiplyByQuantizedMultiplier(acc, multiplier, shift) + out_zp;
  const int64_t low = activation == "none" ? -128 : std::max<int64_t>(-128, out_zp);
  const int64_t six = out_zp + static_cast<int64_t>(std::round(6.0f / out_scale));
  const int64_t high = activation == "relu6" ? std::min<int64_t>(127, six) : 127;
  return static_cast<int8_t>(std::min(std::max(v, low), high));
}

struct Case {
  int64_t h, w, in_c, out_c;
  Window win;
  int64_t in_zp, out_zp;
  bool bias;
  std::string activation;
  bool negative_scales;
};

class Oracle {
 public:
  explicit Oracle(uint32_t seed) : rng_(seed) {}
  std::vector<int8_t> Bytes(size_t n) {
    std::vector<int8_t> v(n);
    for (int8_t& b : v) b = static_cast<int8_t>(Int(-128, 127));
    return v;
  }
  std::vector<int32_t> Biases(size_t n) {
    std::vector<int32_t> v(n);
    for (int32_t& b : v) b = static_cast<int32_t>(Int(-5000, 5000));
    return v;
  }
  int64_t Int(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  template <typename T>
  T Pick(std::initializer_list<T> items) {
    return items.begin()[Int(0, static_cast<int64_t>(items.size()) - 1)];
  }

 private:
  std::mt19937 rng_;
};

Attrs WindowAttrs(const Case& c) {
  return MakeAttrs({{"padding", std::string(c.win.same ? "same" : "valid")},
                    {"stride", std::vector<int64_t>{c.win.stride, c.win.stride}},
                    {"dilation", std::vector<int64_t>{c.win.dilation, c.win.dilation}},
                    {"activation", c.activation}});
}

std::vector<float> FilterScales(int64_t channels, bool negative = false) {
  std::vector<float> s;
  for (int64_t c = 0; c < channels; ++c) s.push_back(FilterScale(c, negative));
  return s;
}

// What a case expects: the outputs at its output scale.
struct Expected {
  std::vector<int8_t> values;
  float out_scale;
};

// How many outputs the cases checked, and how many of them sat at an end of int8 (a test whose
// outputs mostly saturate would pass wrong sums).
struct Tally {
  int64_t outputs = 0, saturated = 0;
  void Add(const std::vector<int8_t>& values) {
    outputs += static_cast<int64_t>(values.size());
    for (int8_t v : values) saturated += v == -128 || v == 127 ? 1 : 0;
  }
};

// Runs the one-op graph and checks its output against `want` and its trace against the
// algorithmic safe overlap.
void CheckNet(TestNet& net, ValueId y, int64_t out_zp, const Expected& expected,
              const std::string& what, Tally* tally) {
  ASSERT_NE(y, kNoValue) << what;
  const std::vector<int8_t>& want = expected.values;
  if (out_zp >= -128 && out_zp <= 127) tally->Add(want);  // else every output is one bound
  net.graph().value(y).quant = Quant({expected.out_scale}, out_zp);
  const Bytes got = net.RunBytes(y);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(static_cast<int8_t>(got[i]), want[i]) << what << " element " << i;
  // The kernel reads no later than TFLM's reference order, whose safe overlap the model gives
  // and the planner uses: at least that, at most the rest of the last block above it.
  const Graph& g = net.graph();
  const Node& node = g.node(g.schedule.back());
  const int64_t trace = SafeOverlapByTrace(g, node, 0).value_or(-1);
  const int64_t model = OpOf(node)->overlap_algorithmic(g, node, 0).value_or(-1);
  EXPECT_GE(trace, model) << what;
  const bool gathers =
      node.op == "conv2d" &&
      Int8ConvGathersWindow(g.value(node.inputs[1]).shape[1] * g.value(node.inputs[1]).shape[2] *
                                g.value(node.inputs[0]).shape[3],
                            g.value(node.inputs[0]).quant->zero_point[0]);
  EXPECT_LE(trace - model, Int8SimdOverlapSlack(gathers, g.value(y).shape.back())) << what;
}

// The reference loop of conv (groups of one) or depthwise conv over `x` (NHWC, batch 1).
Expected WindowOracle(const Case& c, bool depthwise, const std::vector<int8_t>& x,
                      const std::vector<int8_t>& w, const std::vector<int32_t>& bias) {
  const Window& win = c.win;
  const int64_t out_h = OutSize(c.h, win.k_h, win.stride, win.dilation, win.same);
  const int64_t out_w = OutSize(c.w, win.k_w, win.stride, win.dilation, win.same);
  const int64_t pad_t = PadBefore(c.h, out_h, win.k_h, win.stride, win.dilation, win.same);
  const int64_t pad_l = PadBefore(c.w, out_w, win.k_w, win.stride, win.dilation, win.same);
  std::vector<int64_t> sums;  // biased, output order
  for (int64_t oy = 0; oy < out_h; ++oy) {
    for (int64_t ox = 0; ox < out_w; ++ox) {
      for (int64_t oc = 0; oc < c.out_c; ++oc) {
        int64_t sum = c.bias ? bias[oc] : 0;
        for (int64_t fy = 0; fy < win.k_h; ++fy) {
          for (int64_t fx = 0; fx < win.k_w; ++fx) {
            const int64_t iy = oy * win.stride - pad_t + fy * win.dilation;
            const int64_t ix = ox * win.stride - pad_l + fx * win.dilation;
            if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
            const int64_t pixel = (iy * c.w + ix) * c.in_c;
            if (depthwise) {
              const int64_t ic = oc / (c.out_c / c.in_c);
              sum += (x[pixel + ic] - c.in_zp) * w[(fy * win.k_w + fx) * c.out_c + oc];
              continue;
            }
            for (int64_t ic = 0; ic < c.in_c; ++ic) {
              sum +=
                  (x[pixel + ic] - c.in_zp) * w[((oc * win.k_h + fy) * win.k_w + fx) * c.in_c + ic];
            }
          }
        }
        sums.push_back(sum);
      }
    }
  }
  Expected e{{}, OutScaleFor(sums, double{kInScale} * FilterScale(4))};
  for (size_t i = 0; i < sums.size(); ++i) {
    const int64_t oc = static_cast<int64_t>(i) % c.out_c;
    const double m =
        double{kInScale} * double{FilterScale(oc, c.negative_scales)} / double{e.out_scale};
    e.values.push_back(Requantize(sums[i], m, c.out_zp, c.activation, e.out_scale));
  }
  return e;
}

void RunWindowCase(const Case& c, bool depthwise, Oracle& rng, const std::string& what,
                   Tally* tally) {
  TestNet net;
  const std::vector<int8_t> x = rng.Bytes(static_cast<size_t>(c.h * c.w * c.in_c));
  const ValueId xv =
      net.AddInput({1, c.h, c.w, c.in_c}, DType::kI8, ToBytes(x), Quant({kInScale}, c.in_zp));
  const Shape w_shape = depthwise ? Shape{1, c.win.k_h, c.win.k_w, c.out_c}
                                  : Shape{c.out_c, c.win.k_h, c.win.k_w, c.in_c};
  int64_t w_size = 1;
  for (int64_t d : w_shape) w_size *= d;
  const std::vector<int8_t> w = rng.Bytes(static_cast<size_t>(w_size));
  const std::vector<int32_t> bias = rng.Biases(static_cast<size_t>(c.out_c));
  std::vector<ValueId> inputs = {
      xv, net.AddConstant(w_shape, DType::kI8, ToBytes(w),
                          Quant(FilterScales(c.out_c, c.negative_scales), 0, depthwise ? 3 : 0))};
  if (c.bias) {
    std::vector<float> bias_scales;
    for (int64_t oc = 0; oc < c.out_c; ++oc) bias_scales.push_back(kInScale * FilterScale(oc));
    inputs.push_back(net.AddConstant({c.out_c}, DType::kI32, ToBytes(bias), Quant(bias_scales)));
  }
  Attrs attrs = WindowAttrs(c);
  if (depthwise) attrs.Set("multiplier", c.out_c / c.in_c);
  const ValueId y = net.AddNode(depthwise ? "depthwise_conv2d" : "conv2d", inputs, attrs);
  CheckNet(net, y, c.out_zp, WindowOracle(c, depthwise, x, w, bias), what, tally);
}

Case RandomCase(Oracle& rng, bool depthwise) {
  Case c;
  c.h = rng.Int(1, 9);
  c.w = rng.Int(1, 9);
  c.in_c = depthwise ? rng.Pick<int64_t>({1, 2, 3, 4, 5, 8, 12}) : rng.Int(1, 13);
  c.out_c = depthwise ? c.in_c * rng.Pick<int64_t>({1, 1, 2, 3, 4, 8}) : rng.Int(1, 11);
  const int64_t k = rng.Pick<int64_t>({1, 1, 3, 3, 5, 7});  // 7x7: beyond the tap table
  c.win = {k, rng.Pick<int64_t>({k, 1, 3}), rng.Pick<int64_t>({1, 2}), rng.Pick<int64_t>({1, 1, 2}),
           rng.Int(0, 1) == 1};
  // Zero points mostly int8's, sometimes far outside (no lane arithmetic then).
  c.in_zp = rng.Int(0, 9) == 0 ? rng.Pick<int64_t>({40000, -40000}) : rng.Int(-128, 127);
  // Output zero points near 0, sometimes outside int8 (a broken model; the clamp's bounds then
  // leave int8).
  c.out_zp = rng.Int(0, 14) == 0 ? rng.Pick<int64_t>({300, -300}) : rng.Int(-20, 20);
  c.bias = rng.Int(0, 3) != 0;
  c.activation = rng.Pick<std::string>({"none", "relu", "relu6"});
  c.negative_scales = rng.Int(0, 7) == 0;
  return c;
}

bool FitsInput(const Case& c) {
  const int64_t effective_h = (c.win.k_h - 1) * c.win.dilation + 1;
  const int64_t effective_w = (c.win.k_w - 1) * c.win.dilation + 1;
  return c.win.same || (effective_h <= c.h && effective_w <= c.w);
}

// 80 random cases of the conv or the depthwise conv from `seed`.
void RunRandomWindowCases(bool depthwise, uint32_t seed) {
  Oracle rng(seed);
  Tally tally;
  int negative_cases = 0;
  for (int n = 0; n < 80; ++n) {
    const Case c = RandomCase(rng, depthwise);
    if (!FitsInput(c)) continue;
    negative_cases += c.negative_scales && c.out_c >= 3 ? 1 : 0;
    RunWindowCase(c, depthwise, rng,
                  (depthwise ? "depthwise case " : "conv case ") + std::to_string(n), &tally);
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(tally.outputs, 1000);
  EXPECT_LT(tally.saturated * 10, tally.outputs) << "most outputs must not saturate";
  EXPECT_GE(negative_cases, 3) << "the reference loops of negative scales must run";
}

TEST(Int8Simd, ConvMatchesTheReferenceLoopAndItsOverlapModel) {
  RunRandomWindowCases(false, 20261203);
}

TEST(Int8Simd, DepthwiseMatchesTheReferenceLoopAndItsOverlapModel) {
  RunRandomWindowCases(true, 31);
}

TEST(Int8Simd, FullyConnectedMatchesTheReferenceLoopAndItsOverlapModel) {
  Oracle rng(7);
  Tally tally;
  int negative_cases = 0;
  for (int n = 0; n < 60; ++n) {
    const int64_t batches = rng.Int(1, 3), depth = rng.Int(1, 37), out = rng.Int(1, 11);
    const bool per_channel = rng.Int(0, 1) == 1;
    // reference FullyConnected subtracts a per-tensor filter's zero point; per-channel filters
    // are symmetric.
    const int64_t w_zp = per_channel ? 0 : rng.Int(-5, 5);
    const int64_t in_zp = rng.Int(0, 9) == 0 ? 40000 : rng.Int(-128, 127), out_zp = rng.Int(-9, 9);
    const std::string activation = rng.Pick<std::string>({"none", "relu", "relu6"});
    const bool negative = rng.Int(0, 5) == 0;
    negative_cases += negative && (!per_channel || out >= 3) ? 1 : 0;
    TestNet net;
    const std::vector<int8_t> x = rng.Bytes(static_cast<size_t>(batches * depth));
    const std::vector<int8_t> w = rng.Bytes(static_cast<size_t>(out * depth));
    const std::vector<int32_t> bias = rng.Biases(static_cast<size_t>(out));
    const std::vector<float> w_scales = per_channel
                                            ? FilterScales(out, negative)
                                            : std::vector<float>{negative ? -0.0625f : 0.0625f};
    const ValueId y = net.AddNode(
        "fully_connected",
        {net.AddInput({batches, depth}, DType::kI8, ToBytes(x), Quant({kInScale}, in_zp)),
         net.AddConstant({out, depth}, DType::kI8, ToBytes(w), Quant(w_scales, w_zp)),
         net.AddConstant({out}, DType::kI32, ToBytes(bias), Quant({1.0f}))},
        MakeAttrs({{"activation", activation}}));
    std::vector<int64_t> sums;  // biased, output order
    for (int64_t b = 0; b < batches; ++b) {
      for (int64_t oc = 0; oc < out; ++oc) {
        int64_t sum = bias[oc];
        for (int64_t d = 0; d < depth; ++d)
          sum += (x[b * depth + d] - in_zp) * (w[oc * depth + d] - w_zp);
        sums.push_back(sum);
      }
    }
    Expected e{{}, OutScaleFor(sums, double{kInScale} * (per_channel ? FilterScale(4) : 0.0625))};
    for (size_t i = 0; i < sums.size(); ++i) {
      const float w_scale = w_scales[per_channel ? i % static_cast<size_t>(out) : 0];
      const double m = per_channel ? double{kInScale} * double{w_scale} / double{e.out_scale}
                                   : double{kInScale * w_scale} / double{e.out_scale};
      e.values.push_back(Requantize(sums[i], m, out_zp, activation, e.out_scale));
    }
    CheckNet(net, y, out_zp, e, "fully-connected case " + std::to_string(n), &tally);
    if (HasFailure()) return;
  }
  EXPECT_GT(tally.outputs, 500);
  EXPECT_LT(tally.saturated * 10, tally.outputs) << "most outputs must not saturate";
  EXPECT_GE(negative_cases, 3) << "the reference loop of negative scales must run";
}

// Output zero points outside int8 (a broken model) put the activation's clamp bounds outside
// int8: relu6 at zero point -300 and scale 1/16 clamps to [-128, -204], so every output is
// -204 cast to int8 (52), as TFLite's clamp-then-cast gives; the packed four-channel store must
// give the same.
TEST(Int8Simd, ClampBoundsOutsideInt8) {
  Oracle rng(5);
  const int64_t depth = 8, out = 8;
  for (const auto& [out_zp, activation] :
       std::vector<std::pair<int64_t, std::string>>{{-300, "relu6"}, {300, "relu"}}) {
    TestNet net;
    const std::vector<int8_t> x = rng.Bytes(depth), w = rng.Bytes(out * depth);
    const ValueId y =
        net.AddNode("fully_connected",
                    {net.AddInput({1, depth}, DType::kI8, ToBytes(x), Quant({kInScale}, 0)),
                     net.AddConstant({out, depth}, DType::kI8, ToBytes(w), Quant({0.0625f}, 0))},
                    MakeAttrs({{"activation", activation}}));
    Expected e{{}, 0.0625f};
    for (int64_t oc = 0; oc < out; ++oc) {
      int64_t sum = 0;
      for (int64_t d = 0; d < depth; ++d) sum += x[d] * w[oc * depth + d];
      e.values.push_back(Requantize(sum, double{kInScale}, out_zp, activation, e.out_scale));
    }
    EXPECT_EQ(e.values[0], out_zp < 0 ? 52 : 127);  // the oracle's own arithmetic
    Tally unused;
    CheckNet(net, y, out_zp, e, activation + " at zero point " + std::to_string(out_zp), &unused);
  }
}

}  // namespace
}  // namespace memfold
