// Training ops: every gradient op is checked against central finite differences of the forward
// op it differentiates (run through the registry and the unplanned executor), plus dropout's
// reproducibility, the optimizers' arithmetic and in-place updates, batch-norm running
// statistics, out-of-range indices and inference errors.
//
// Finite differences: L(x) = sum_k sum_i w_k[i] * forward(x)_k[i] with random weights w,
// accumulated in double; each input element is moved by +-1e-3 (in float) and
// (L(x+h) - L(x-h)) / 2h is compared with the gradient op fed dy = w.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "memfold/exec/executor.h"
#include "memfold/exec/overlap_trace.h"
#include "memfold/ir/graph.h"
#include "memfold/ops/kernel_args.h"
#include "memfold/ops/kernels/host/train_kernels.h"
#include "memfold/ops/registry.h"

namespace memfold {
namespace {

using Ints = std::vector<int64_t>;
using Floats = std::vector<float>;
using Weights = std::vector<Floats>;  // one per forward output; empty = not in the loss

constexpr float kStep = 1e-3f;
constexpr double kRelTol = 1e-2;
constexpr double kAbsTol = 5e-4;  // float rounding of the forward: about 1.5e-4 at worst here

// ---------------------------------------------------------------------------------------------
// Graph inputs and one-op graphs.

struct Arg {
  Shape shape;
  DType dtype = DType::kF32;
  Floats f;
  std::vector<int32_t> i;

  Bytes bytes() const {
    const void* src = dtype == DType::kF32 ? static_cast<const void*>(f.data()) : i.data();
    const size_t size =
        dtype == DType::kF32 ? f.size() * sizeof(float) : i.size() * sizeof(int32_t);
    Bytes out(size);
    if (size > 0) std::memcpy(out.data(), src, size);
    return out;
  }
};

Arg F32(Shape shape, Floats data) { return {std::move(shape), DType::kF32, std::move(data), {}}; }
Arg I32(Shape shape, std::vector<int32_t> data) {
  return {std::move(shape), DType::kI32, {}, std::move(data)};
}

Floats RandomFloats(int64_t n, std::mt19937* rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  Floats out(static_cast<size_t>(n));
  for (float& v : out) v = dist(*rng);
  return out;
}

Arg RandomArg(const Shape& shape, std::mt19937* rng, float lo = -1.0f, float hi = 1.0f) {
  return F32(shape, RandomFloats(NumElements(shape), rng, lo, hi));
}

Attrs MakeAttrs(std::initializer_list<std::pair<std::string, AttrValue>> items) {
  Attrs attrs;
  for (const auto& [name, value] : items) attrs.Set(name, value);
  return attrs;
}

Attrs With(Attrs attrs, std::string name, AttrValue value) {
  attrs.Set(std::move(name), std::move(value));
  return attrs;
}

Floats FloatsOf(const Bytes& bytes) {
  Floats out(bytes.size() / sizeof(float));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

// One op whose inputs are all graph inputs and whose outputs are all graph outputs.
class OpRun {
 public:
  OpRun(std::string_view op, const std::vector<Arg>& args, Attrs attrs = {}) {
    const OpDef* def = FindOp(op);
    expected_outputs_ = def ? static_cast<size_t>(def->num_outputs) : 1;
    std::vector<ValueId> inputs;
    for (size_t k = 0; k < args.size(); ++k) {
      Value v;
      v.name = "arg" + std::to_string(k);
      v.dtype = args[k].dtype;
      v.shape = args[k].shape;
      v.role = Role::kInput;
      const ValueId id = graph_.AddValue(std::move(v));
      graph_.inputs.push_back(id);
      inputs.push_back(id);
    }
    Result<std::vector<ValueId>> out = AddOp(&graph_, op, inputs, std::move(attrs), "op");
    if (!out.ok()) {
      ADD_FAILURE() << out.status().message();
      return;
    }
    graph_.outputs = *out;
    ok_ = true;
  }

  bool ok() const { return ok_; }
  const Graph& graph() const { return graph_; }
  Shape OutputShape(size_t k) const {
    return ok_ ? graph_.value(graph_.outputs[k]).shape : Shape{};
  }

  // Every output as floats; empty vectors (never too few) when building or running failed.
  std::vector<Floats> Run(const std::vector<Arg>& args) const {
    std::vector<Floats> result(std::max(expected_outputs_, graph_.outputs.size()));
    if (!ok_) return result;
    std::vector<Bytes> feeds;
    for (const Arg& a : args) feeds.push_back(a.bytes());
    Result<RunOutputs> run = RunUnplanned(graph_, feeds);
    if (!run.ok()) {
      ADD_FAILURE() << run.status().message();
      return result;
    }
    for (size_t k = 0; k < run->outputs.size(); ++k) result[k] = FloatsOf(run->outputs[k]);
    return result;
  }

 private:
  Graph graph_;
  size_t expected_outputs_ = 1;
  bool ok_ = false;
};

std::vector<Floats> RunOp(std::string_view op, const std::vector<Arg>& args, Attrs attrs = {}) {
  return OpRun(op, args, std::move(attrs)).Run(args);
}

// ---------------------------------------------------------------------------------------------
// Finite differences.

double WeightedSum(const std::vector<Floats>& outputs, const Weights& w) {
  double total = 0.0;
  for (size_t k = 0; k < w.size() && k < outputs.size(); ++k) {
    for (size_t i = 0; i < w[k].size() && i < outputs[k].size(); ++i) {
      total += static_cast<double>(w[k][i]) * outputs[k][i];
    }
  }
  return total;
}

// Random loss weights for every output of `fwd` listed in `used`.
Weights LossWeights(const OpRun& fwd, std::initializer_list<size_t> used, std::mt19937* rng) {
  Weights w;
  for (size_t k : used) {
    if (w.size() <= k) w.resize(k + 1);
    w[k] = RandomFloats(NumElements(fwd.OutputShape(k)), rng);
  }
  return w;
}

// Checks analytic dL/d(args[input]) against central differences of `fwd`.
void ExpectGradient(const OpRun& fwd, std::vector<Arg> args, const Weights& w, size_t input,
                    const Floats& analytic) {
  SCOPED_TRACE("gradient of input " + std::to_string(input));
  Floats& x = args[input].f;
  ASSERT_EQ(analytic.size(), x.size());
  double largest = 0.0;
  int mismatches = 0;
  for (size_t e = 0; e < x.size(); ++e) {
    const float v = x[e];
    const float up = v + kStep, down = v - kStep;
    x[e] = up;
    const double loss_up = WeightedSum(fwd.Run(args), w);
    x[e] = down;
    const double loss_down = WeightedSum(fwd.Run(args), w);
    x[e] = v;
    const double numeric = (loss_up - loss_down) / (static_cast<double>(up) - down);
    const double a = analytic[e];
    largest = std::max(largest, std::abs(a));
    if (!(std::abs(a - numeric) <= kRelTol * std::max(std::abs(a), std::abs(numeric)) + kAbsTol)) {
      if (++mismatches <= 5) {
        ADD_FAILURE() << "element " << e << ": analytic " << a << ", finite difference " << numeric;
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(largest, 1e-2) << "the gradient is (almost) zero everywhere; the check is vacuous";
}

// ---------------------------------------------------------------------------------------------
// Activation and softmax gradients against the forward ops in the registry.

// Training graphs' tanh and sigmoid (the gradient pass lowers float tanh and sigmoid to them):
// within 2e-7 absolute and 1e-6 relative of libm on a dense grid over [-40, 40] with tiny and
// infinite inputs; NaN stays NaN.
TEST(TrainOpGradTest, TrainingActivationsMatchLibm) {
  Floats x;
  for (int i = -400000; i <= 400000; ++i) x.push_back(static_cast<float>(i) * 1e-4f);
  for (float v :
       {1e-30f, -1e-30f, 1e-6f, -3e-5f, 0.2499999f, 0.25f, 86.9f, 87.5f, 88.5f, -88.5f, -100.0f,
        100.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()}) {
    x.push_back(v);
  }
  const auto n = static_cast<int64_t>(x.size());
  const std::pair<const char*, double (*)(double)> cases[] = {
      {"tanh_train", [](double v) { return std::tanh(v); }},
      {"sigmoid_train", [](double v) { return 1.0 / (1.0 + std::exp(-v)); }}};
  for (const auto& [op, exact] : cases) {
    SCOPED_TRACE(op);
    const Floats y = RunOp(op, {F32({n}, x)})[0];
    int bad = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = exact(x[i]), got = y[i];
      if (std::abs(got - want) > 2e-7 + 1e-6 * std::abs(want) && ++bad <= 5) {
        ADD_FAILURE() << op << "(" << x[i] << ") = " << got << ", libm " << want;
      }
    }
    EXPECT_EQ(bad, 0);
    EXPECT_TRUE(std::isnan(RunOp(op, {F32({1}, {std::nanf("")})})[0][0]));
  }
}

TEST(TrainOpGradTest, ActivationGradientsMatchFiniteDifferences) {
  const std::pair<const char*, const char*> cases[] = {
      {"relu", "relu_grad"}, {"tanh", "tanh_grad"}, {"sigmoid", "sigmoid_grad"}};
  std::mt19937 rng(11);
  for (const auto& [forward, gradient] : cases) {
    SCOPED_TRACE(gradient);
    Arg x = RandomArg({3, 7}, &rng, -2.5f, 2.5f);
    for (float& v : x.f) {
      if (std::abs(v) < 0.05f) v = v < 0.0f ? -0.3f : 0.3f;  // keep away from relu's kink
    }
    const OpRun fwd(forward, {x});
    const Weights w = LossWeights(fwd, {0}, &rng);
    const Floats y = fwd.Run({x})[0];
    const Floats dx = RunOp(gradient, {F32(x.shape, w[0]), F32(x.shape, y)})[0];
    ExpectGradient(fwd, {x}, w, 0, dx);
  }
}

TEST(TrainOpGradTest, ReluGradPassesWhereOutputPositive) {
  const Floats dx =
      RunOp("relu_grad", {F32({4}, {1, 2, 3, 4}), F32({4}, {0.5f, 0.0f, -1.0f, 2.0f})})[0];
  EXPECT_EQ(dx, (Floats{1, 0, 0, 4}));
}

TEST(TrainOpGradTest, SoftmaxGradMatchesFiniteDifferences) {
  std::mt19937 rng(12);
  const Arg x = RandomArg({4, 6}, &rng, -2.0f, 2.0f);
  const OpRun fwd("softmax", {x});
  const Weights w = LossWeights(fwd, {0}, &rng);
  const Floats y = fwd.Run({x})[0];
  const Floats dx = RunOp("softmax_grad", {F32(x.shape, w[0]), F32(x.shape, y)})[0];
  ExpectGradient(fwd, {x}, w, 0, dx);
}

// ---------------------------------------------------------------------------------------------
// Losses.

TEST(TrainOpLossTest, SoftmaxCrossEntropyValueAndGradient) {
  std::mt19937 rng(13);
  const Arg logits = RandomArg({5, 4}, &rng, -3.0f, 3.0f);
  // Rows 3 and 4 have labels outside [0, 4): they contribute zero loss and zero gradient.
  const Arg labels = I32({5}, {2, 0, 3, -1, 4});
  const OpRun fwd("softmax_cross_entropy", {logits, labels});
  ASSERT_TRUE(fwd.ok());
  EXPECT_EQ(fwd.OutputShape(0), Shape{});
  double expected = 0.0;
  for (int n = 0; n < 3; ++n) {
    double sum = 0.0;
    for (int c = 0; c < 4; ++c)
      sum += std::exp(static_cast<double>(logits.f[static_cast<size_t>(n * 4 + c)]));
    expected -=
        std::log(std::exp(static_cast<double>(
                     logits.f[static_cast<size_t>(n * 4 + labels.i[static_cast<size_t>(n)])])) /
                 sum);
  }
  expected /= 5.0;  // the mean divides by N, ignored rows included
  const Floats loss = fwd.Run({logits, labels})[0];
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_NEAR(loss[0], expected, 1e-6);

  const Weights w = {{0.7f}};
  const Floats grad = RunOp("softmax_cross_entropy_grad", {F32({}, {0.7f}), logits, labels})[0];
  ExpectGradient(fwd, {logits, labels}, w, 0, grad);
  for (size_t k = 12; k < 20; ++k) EXPECT_EQ(grad[k], 0.0f) << k;
}

TEST(TrainOpLossTest, SoftmaxCrossEntropyIsStableForLargeLogits) {
  const Arg logits = F32({2, 2}, {1000.0f, 0.0f, -500.0f, 500.0f});
  const Arg labels = I32({2}, {1, 1});
  const Floats loss = RunOp("softmax_cross_entropy", {logits, labels})[0];
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_NEAR(loss[0], (1000.0 + 0.0) / 2.0, 1e-3);  // row 0 loses 1000, row 1 about 0
  const Floats grad = RunOp("softmax_cross_entropy_grad", {F32({}, {1.0f}), logits, labels})[0];
  const Floats want = {0.5f, -0.5f, 0.0f, 0.0f};
  for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(grad[k], want[k], 1e-6) << k;
}

TEST(TrainOpLossTest, MseLossValueAndGradients) {
  std::mt19937 rng(14);
  const Arg pred = RandomArg({3, 5}, &rng);
  const Arg target = RandomArg({3, 5}, &rng);
  const OpRun fwd("mse_loss", {pred, target});
  double expected = 0.0;
  for (size_t k = 0; k < pred.f.size(); ++k) {
    const double d = static_cast<double>(pred.f[k]) - target.f[k];
    expected += d * d / 15.0;
  }
  const Floats loss = fwd.Run({pred, target})[0];
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_NEAR(loss[0], expected, 1e-6);
  const Weights w = {{1.3f}};
  const Floats dpred = RunOp("mse_loss_grad", {F32({}, {1.3f}), pred, target})[0];
  ExpectGradient(fwd, {pred, target}, w, 0, dpred);
  Floats dtarget = dpred;
  for (float& v : dtarget) v = -v;
  ExpectGradient(fwd, {pred, target}, w, 1, dtarget);
}

// ---------------------------------------------------------------------------------------------
// reduce_sum.

TEST(TrainOpReduceSumTest, SumsOverAxesWithAndWithoutKeepdims) {
  std::mt19937 rng(15);
  const Arg x = RandomArg({2, 3, 4}, &rng);
  auto at = [&](int64_t a, int64_t b, int64_t c) {
    return static_cast<double>(x.f[static_cast<size_t>((a * 3 + b) * 4 + c)]);
  };
  {
    const OpRun run("reduce_sum", {x}, MakeAttrs({{"axes", Ints{0, 2}}}));
    EXPECT_EQ(run.OutputShape(0), (Shape{3}));
    const Floats y = run.Run({x})[0];
    ASSERT_EQ(y.size(), 3u);
    for (int64_t b = 0; b < 3; ++b) {
      double want = 0.0;
      for (int64_t a = 0; a < 2; ++a)
        for (int64_t c = 0; c < 4; ++c) want += at(a, b, c);
      EXPECT_NEAR(y[static_cast<size_t>(b)], want, 1e-5);
    }
  }
  {
    const OpRun run("reduce_sum", {x}, MakeAttrs({{"axes", Ints{-1}}, {"keepdims", int64_t{1}}}));
    EXPECT_EQ(run.OutputShape(0), (Shape{2, 3, 1}));
    const Floats y = run.Run({x})[0];
    ASSERT_EQ(y.size(), 6u);
    for (int64_t a = 0; a < 2; ++a) {
      for (int64_t b = 0; b < 3; ++b) {
        double want = 0.0;
        for (int64_t c = 0; c < 4; ++c) want += at(a, b, c);
        EXPECT_NEAR(y[static_cast<size_t>(a * 3 + b)], want, 1e-5);
      }
    }
  }
  {
    const OpRun run("reduce_sum", {x}, MakeAttrs({{"axes", Ints{0, 1, 2}}}));
    EXPECT_EQ(run.OutputShape(0), Shape{});
    const Floats y = run.Run({x})[0];
    ASSERT_EQ(y.size(), 1u);
    EXPECT_NEAR(y[0], std::accumulate(x.f.begin(), x.f.end(), 0.0), 1e-5);
  }
}

// The gradient of a broadcast add with respect to the broadcast operand is a reduce_sum of dy.
TEST(TrainOpReduceSumTest, ReducesBroadcastGradientOfAdd) {
  std::mt19937 rng(16);
  const Arg x = RandomArg({2, 3, 4}, &rng);
  const Arg bias = RandomArg({4}, &rng);
  const OpRun fwd("add", {x, bias});
  const Weights w = LossWeights(fwd, {0}, &rng);
  const Floats dbias =
      RunOp("reduce_sum", {F32({2, 3, 4}, w[0])}, MakeAttrs({{"axes", Ints{0, 1}}}))[0];
  ExpectGradient(fwd, {x, bias}, w, 1, dbias);
}

// ---------------------------------------------------------------------------------------------
// Conv2d and depthwise backprops against the forward convolutions.

struct WindowCase {
  const char* name;
  Ints stride;
  Ints dilation;
  std::string padding;
  Ints pads;
};

const WindowCase kConvCases[] = {
    {"stride2_same", {2, 2}, {1, 1}, "same", {0, 0, 0, 0}},
    {"stride2_valid", {2, 2}, {1, 1}, "valid", {0, 0, 0, 0}},
    {"dilation2_same", {1, 1}, {2, 2}, "same", {0, 0, 0, 0}},
    {"dilation2_valid_stride2x1", {2, 1}, {2, 2}, "valid", {0, 0, 0, 0}},
    {"explicit_pads", {1, 2}, {1, 1}, "explicit", {1, 0, 2, 1}},
};

Attrs WindowAttrs(const WindowCase& c) {
  return MakeAttrs(
      {{"stride", c.stride}, {"dilation", c.dilation}, {"padding", c.padding}, {"pads", c.pads}});
}

// A stride-1 "same" convolution over 3 images of 9x10 pixels: 270 im2col rows, so the BLAS
// kernels run it in chunks of 128 rows (ConvColumnRows), the second chunk starting inside an
// image.
const WindowCase kChunkedCase{"same_chunked", {1, 1}, {1, 1}, "same", {0, 0, 0, 0}};
const Shape kChunkedInput{3, 9, 10, 2};

TEST(TrainOpConvTest, Conv2DBackpropsMatchFiniteDifferences) {
  std::mt19937 rng(17);
  std::vector<std::pair<WindowCase, Shape>> cases;
  for (const WindowCase& c : kConvCases) cases.push_back({c, {2, 7, 6, 3}});
  cases.push_back({kChunkedCase, kChunkedInput});
  for (const auto& [c, x_shape] : cases) {
    SCOPED_TRACE(c.name);
    const Arg x = RandomArg(x_shape, &rng);
    const Arg filter = RandomArg({4, 3, 3, x_shape[3]}, &rng);
    const Attrs attrs = WindowAttrs(c);
    const OpRun fwd("conv2d", {x, filter}, attrs);
    ASSERT_TRUE(fwd.ok());
    const Weights w = LossWeights(fwd, {0}, &rng);
    const Arg dy = F32(fwd.OutputShape(0), w[0]);
    const OpRun input_grad("conv2d_backprop_input", {dy, filter},
                           With(attrs, "input_shape", x.shape));
    EXPECT_EQ(input_grad.OutputShape(0), x.shape);
    ExpectGradient(fwd, {x, filter}, w, 0, input_grad.Run({dy, filter})[0]);
    const OpRun filter_grad("conv2d_backprop_filter", {x, dy},
                            With(attrs, "filter_shape", filter.shape));
    EXPECT_EQ(filter_grad.OutputShape(0), filter.shape);
    ExpectGradient(fwd, {x, filter}, w, 1, filter_grad.Run({x, dy})[0]);
  }
}

// Runs `reference` and its BLAS twin `gemm` on the same arguments and expects the same output
// within float rounding, with enough outputs away from an activation's clamp to mean something.
void ExpectGemmMatchesReference(const char* reference, const char* gemm,
                                const std::vector<Arg>& args, const Attrs& attrs) {
  const Floats want = OpRun(reference, args, attrs).Run(args)[0];
  const Floats got = OpRun(gemm, args, attrs).Run(args)[0];
  ASSERT_EQ(got.size(), want.size());
  size_t unclamped = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-5f) << i;
    unclamped += want[i] != 0.0f ? 1 : 0;
  }
  EXPECT_GT(unclamped, got.size() / 4);
}

// Training graphs compute conv2d as BLAS products (conv2d_gemm, over im2col chunks; pointwise
// filters read the input itself): within float rounding of TFLM's reference loop, bias
// included, for every window shape, a pointwise one and one of several chunks.
TEST(TrainOpConvTest, GemmConvolutionMatchesTheReferenceLoop) {
  std::mt19937 rng(23);
  std::vector<std::tuple<WindowCase, Shape, Shape>> cases;
  for (const WindowCase& c : kConvCases) cases.push_back({c, {2, 7, 6, 3}, {4, 3, 3, 3}});
  cases.push_back(
      {{"pointwise", {1, 1}, {1, 1}, "valid", {0, 0, 0, 0}}, {2, 7, 6, 3}, {4, 1, 1, 3}});
  cases.push_back({kChunkedCase, kChunkedInput, {4, 3, 3, 2}});
  for (const auto& [c, x_shape, filter_shape] : cases) {
    SCOPED_TRACE(c.name);
    const Arg x = RandomArg(x_shape, &rng);
    const Arg filter = RandomArg(filter_shape, &rng);
    const Arg bias = RandomArg({4}, &rng);
    ExpectGemmMatchesReference("conv2d", "conv2d_gemm", {x, filter, bias}, WindowAttrs(c));
  }
}

// fully_connected as one BLAS product (fully_connected_gemm), rank-3 input flattened to rows,
// with the fused activation's clamp (the shared epilogue of both BLAS kernels).
TEST(TrainOpConvTest, GemmFullyConnectedMatchesTheReferenceLoop) {
  std::mt19937 rng(31);
  const Arg x = RandomArg({2, 3, 5}, &rng);
  const Arg w = RandomArg({4, 5}, &rng);
  const Arg bias = RandomArg({4}, &rng);
  ExpectGemmMatchesReference("fully_connected", "fully_connected_gemm", {x, w, bias},
                             MakeAttrs({{"activation", std::string("relu")}}));
}

TEST(TrainOpConvTest, PointwiseBackpropsMatchFiniteDifferences) {
  std::mt19937 rng(29);
  const Arg x = RandomArg({2, 4, 5, 3}, &rng);
  const Arg filter = RandomArg({6, 1, 1, 3}, &rng);
  const Attrs attrs = WindowAttrs({"pointwise", {1, 1}, {1, 1}, "valid", {0, 0, 0, 0}});
  const OpRun fwd("conv2d", {x, filter}, attrs);
  const Weights w = LossWeights(fwd, {0}, &rng);
  const Arg dy = F32(fwd.OutputShape(0), w[0]);
  const OpRun input_grad("conv2d_backprop_input", {dy, filter},
                         With(attrs, "input_shape", x.shape));
  ExpectGradient(fwd, {x, filter}, w, 0, input_grad.Run({dy, filter})[0]);
  const OpRun filter_grad("conv2d_backprop_filter", {x, dy},
                          With(attrs, "filter_shape", filter.shape));
  ExpectGradient(fwd, {x, filter}, w, 1, filter_grad.Run({x, dy})[0]);
}

// The BLAS convolution and its gradients declare one im2col chunk as scratch: every row when
// there are at most 128, else 128 rows (of KH*KW*IC floats); none when pointwise.
TEST(TrainOpConvTest, ConvolutionsDeclareTheirIm2colChunk) {
  std::mt19937 rng(18);
  struct Case {
    Shape x, filter;
    WindowCase window;
    int64_t bytes;
  };
  const WindowCase pointwise{"pointwise", {1, 1}, {1, 1}, "valid", {0, 0, 0, 0}};
  for (const Case& c : {Case{{2, 7, 6, 3}, {4, 3, 3, 3}, kConvCases[0], 2 * 4 * 3 * 27 * 4},
                        Case{kChunkedInput, {4, 3, 3, 2}, kChunkedCase, 128 * 18 * 4},
                        Case{{2, 7, 6, 3}, {4, 1, 1, 3}, pointwise, 0}}) {
    SCOPED_TRACE(c.window.name);
    const Attrs attrs = WindowAttrs(c.window);
    const Arg x = RandomArg(c.x, &rng), filter = RandomArg(c.filter, &rng);
    const OpRun fwd("conv2d_gemm", {x, filter}, attrs);
    ASSERT_TRUE(fwd.ok());
    const Arg dy = RandomArg(fwd.OutputShape(0), &rng);
    const OpRun input_grad("conv2d_backprop_input", {dy, filter}, With(attrs, "input_shape", c.x));
    const OpRun filter_grad("conv2d_backprop_filter", {x, dy},
                            With(attrs, "filter_shape", c.filter));
    const std::vector<int64_t> want =
        c.bytes == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{c.bytes};
    for (const OpRun* run : {&fwd, &input_grad, &filter_grad}) {
      const Node& node = run->graph().node(0);
      const OpDef* def = FindOp(node.op);
      ASSERT_NE(def->scratch, nullptr) << node.op;
      EXPECT_EQ(def->scratch(run->graph(), node), want) << node.op;
    }
  }
}

TEST(TrainOpConvTest, BackpropCostsEqualTheForwardConvolution) {
  std::mt19937 rng(19);
  const Arg x = RandomArg({1, 8, 8, 3}, &rng);
  const Arg filter = RandomArg({5, 3, 3, 3}, &rng);
  const Attrs attrs = WindowAttrs(kConvCases[0]);
  const OpRun fwd("conv2d", {x, filter}, attrs);
  const Arg dy = RandomArg(fwd.OutputShape(0), &rng);
  const OpRun in_grad("conv2d_backprop_input", {dy, filter}, With(attrs, "input_shape", x.shape));
  const OpRun w_grad("conv2d_backprop_filter", {x, dy}, With(attrs, "filter_shape", filter.shape));
  const double flops = NodeCost(fwd.graph(), fwd.graph().node(0)).flops;
  EXPECT_GT(flops, 0.0);
  EXPECT_EQ(NodeCost(in_grad.graph(), in_grad.graph().node(0)).flops, flops);
  EXPECT_EQ(NodeCost(w_grad.graph(), w_grad.graph().node(0)).flops, flops);
}

TEST(TrainOpConvTest, DepthwiseBackpropsMatchFiniteDifferences) {
  std::mt19937 rng(20);
  for (const WindowCase& c : kConvCases) {
    SCOPED_TRACE(c.name);
    const Arg x = RandomArg({2, 7, 6, 2}, &rng);
    const Arg filter = RandomArg({1, 3, 3, 4}, &rng);  // multiplier 2
    const Attrs attrs = WindowAttrs(c);
    const OpRun fwd("depthwise_conv2d", {x, filter}, attrs);
    ASSERT_TRUE(fwd.ok());
    const Weights w = LossWeights(fwd, {0}, &rng);
    const Arg dy = F32(fwd.OutputShape(0), w[0]);
    const OpRun input_grad("depthwise_conv2d_backprop_input", {dy, filter},
                           With(attrs, "input_shape", x.shape));
    EXPECT_EQ(input_grad.OutputShape(0), x.shape);
    ExpectGradient(fwd, {x, filter}, w, 0, input_grad.Run({dy, filter})[0]);
    const OpRun filter_grad("depthwise_conv2d_backprop_filter", {x, dy},
                            With(attrs, "filter_shape", filter.shape));
    EXPECT_EQ(filter_grad.OutputShape(0), filter.shape);
    ExpectGradient(fwd, {x, filter}, w, 1, filter_grad.Run({x, dy})[0]);
  }
}

TEST(TrainOpConvTest, InferenceRejectsGroupsActivationAndWrongGradientShape) {
  Graph graph;
  auto input = [&](Shape shape) {
    Value v;
    v.name = "v" + std::to_string(graph.num_values());
    v.shape = std::move(shape);
    return graph.AddValue(std::move(v));
  };
  const ValueId dy = input({1, 4, 4, 4});
  const ValueId grouped = input({4, 3, 3, 2});  // 2 input channels per group, input has 4
  auto grouped_result = AddOp(&graph, "conv2d_backprop_input", {dy, grouped},
                              MakeAttrs({{"input_shape", Ints{1, 4, 4, 4}}}));
  ASSERT_FALSE(grouped_result.ok());
  EXPECT_NE(grouped_result.status().message().find("groups = 1"), std::string::npos)
      << grouped_result.status().message();
  const ValueId filter = input({4, 3, 3, 4});
  auto relu =
      AddOp(&graph, "conv2d_backprop_input", {dy, filter},
            MakeAttrs({{"input_shape", Ints{1, 4, 4, 4}}, {"activation", std::string("relu")}}));
  ASSERT_FALSE(relu.ok());
  EXPECT_NE(relu.status().message().find("activation"), std::string::npos);
  auto wrong = AddOp(&graph, "conv2d_backprop_input", {dy, filter},
                     MakeAttrs({{"input_shape", Ints{1, 9, 9, 4}}}));
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("produces [1x9x9x4]"), std::string::npos)
      << wrong.status().message();
  auto missing = AddOp(&graph, "conv2d_backprop_filter", {input({1, 4, 4, 4}), dy});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("filter_shape"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Pooling gradients.

// Distinct values 0.05 apart in random order, so no +-1e-3 step changes a window's maximum.
Arg DistinctArg(const Shape& shape, std::mt19937* rng) {
  Arg a = F32(shape, Floats(static_cast<size_t>(NumElements(shape))));
  std::vector<int> order(a.f.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), *rng);
  for (size_t k = 0; k < a.f.size(); ++k) a.f[k] = 0.05f * static_cast<float>(order[k]) - 5.0f;
  return a;
}

struct PoolCase {
  const char* name;
  Ints filter;
  Ints stride;
  std::string padding;
};

const PoolCase kPoolCases[] = {
    {"3x3_stride2_same", {3, 3}, {2, 2}, "same"},
    {"2x2_stride2_valid", {2, 2}, {2, 2}, "valid"},
    {"3x2_stride1_same", {3, 2}, {1, 1}, "same"},
};

TEST(TrainOpPoolTest, MaxPoolGradMatchesFiniteDifferences) {
  std::mt19937 rng(21);
  for (const PoolCase& c : kPoolCases) {
    SCOPED_TRACE(c.name);
    const Arg x = DistinctArg({2, 6, 7, 3}, &rng);
    const Attrs attrs =
        MakeAttrs({{"filter", c.filter}, {"stride", c.stride}, {"padding", c.padding}});
    const OpRun fwd("max_pool2d", {x}, attrs);
    ASSERT_TRUE(fwd.ok());
    const Weights w = LossWeights(fwd, {0}, &rng);
    const Floats dx = RunOp("max_pool2d_grad", {F32(fwd.OutputShape(0), w[0]), x}, attrs)[0];
    ExpectGradient(fwd, {x}, w, 0, dx);
  }
}

TEST(TrainOpPoolTest, MaxPoolGradRoutesTiesToTheFirstMaximum) {
  const Attrs attrs = MakeAttrs(
      {{"filter", Ints{2, 2}}, {"stride", Ints{2, 2}}, {"padding", std::string("valid")}});
  // Two windows along W: [1 1 / 1 1] (tie everywhere) and [0 5 / 5 1] (tie at 1 and 2).
  const Arg x = F32({1, 2, 4, 1}, {1, 1, 0, 5, 1, 1, 5, 1});
  const Floats dx = RunOp("max_pool2d_grad", {F32({1, 1, 2, 1}, {3, 7}), x}, attrs)[0];
  EXPECT_EQ(dx, (Floats{3, 0, 0, 7, 0, 0, 0, 0}));
}

TEST(TrainOpPoolTest, MaxPoolGradHonoursFusedActivation) {
  const Attrs attrs = MakeAttrs({{"filter", Ints{1, 2}},
                                 {"stride", Ints{1, 2}},
                                 {"padding", std::string("valid")},
                                 {"activation", std::string("relu")}});
  // Window maxima -1 (clamped to 0 by relu: no gradient) and 2 (passes).
  const Arg x = F32({1, 1, 4, 1}, {-3, -1, 2, 0.5f});
  const Floats dx = RunOp("max_pool2d_grad", {F32({1, 1, 2, 1}, {4, 5}), x}, attrs)[0];
  EXPECT_EQ(dx, (Floats{0, 0, 5, 0}));
}

TEST(TrainOpPoolTest, AvgPoolGradMatchesFiniteDifferences) {
  std::mt19937 rng(22);
  for (const PoolCase& c : kPoolCases) {
    SCOPED_TRACE(c.name);
    const Arg x = RandomArg({2, 6, 7, 3}, &rng);
    const Attrs attrs =
        MakeAttrs({{"filter", c.filter}, {"stride", c.stride}, {"padding", c.padding}});
    const OpRun fwd("avg_pool2d", {x}, attrs);
    ASSERT_TRUE(fwd.ok());
    const Weights w = LossWeights(fwd, {0}, &rng);
    const OpRun grad("avg_pool2d_grad", {F32(fwd.OutputShape(0), w[0])},
                     With(attrs, "input_shape", x.shape));
    EXPECT_EQ(grad.OutputShape(0), x.shape);
    ExpectGradient(fwd, {x}, w, 0, grad.Run({F32(fwd.OutputShape(0), w[0])})[0]);
  }
}

// ---------------------------------------------------------------------------------------------
// gather / scatter_add.

TEST(TrainOpGatherTest, GatherClampsOutOfRangeIds) {
  const Arg table = F32({3, 2}, {0, 1, 10, 11, 20, 21});
  const OpRun run("gather", {table, I32({2, 2}, {2, -5, 1, 99})});
  EXPECT_EQ(run.OutputShape(0), (Shape{2, 2, 2}));
  EXPECT_EQ(run.Run({table, I32({2, 2}, {2, -5, 1, 99})})[0],
            (Floats{20, 21, 0, 1, 10, 11, 20, 21}));
}

TEST(TrainOpGatherTest, ScatterAddIsTheGradientOfGather) {
  std::mt19937 rng(23);
  const Arg table = RandomArg({5, 3}, &rng);
  // Duplicates accumulate; 7 and -2 clamp to rows 4 and 0 like the forward gather.
  const Arg ids = I32({2, 3}, {1, 4, 1, 0, 7, -2});
  const OpRun fwd("gather", {table, ids});
  const Weights w = LossWeights(fwd, {0}, &rng);
  const OpRun grad("scatter_add", {F32({2, 3, 3}, w[0]), ids}, MakeAttrs({{"rows", int64_t{5}}}));
  EXPECT_EQ(grad.OutputShape(0), (Shape{5, 3}));
  const Floats dtable = grad.Run({F32({2, 3, 3}, w[0]), ids})[0];
  ExpectGradient(fwd, {table, ids}, w, 0, dtable);
  for (size_t d = 0; d < 3; ++d) EXPECT_EQ(dtable[2 * 3 + d], 0.0f);  // row 2 is never looked up
}

// ---------------------------------------------------------------------------------------------
// Normalisation.

std::vector<Arg> BatchNormArgs(std::mt19937* rng) {
  return {RandomArg({4, 3, 5}, rng, -2.0f, 3.0f), RandomArg({5}, rng, 0.5f, 1.5f),
          RandomArg({5}, rng), RandomArg({5}, rng), RandomArg({5}, rng, 0.5f, 2.0f)};
}

TEST(TrainOpNormTest, BatchNormGradMatchesFiniteDifferences) {
  std::mt19937 rng(24);
  const std::vector<Arg> args = BatchNormArgs(&rng);
  const OpRun fwd("batch_norm_train", args);
  ASSERT_TRUE(fwd.ok());
  EXPECT_EQ(fwd.OutputShape(1), (Shape{5}));
  const std::vector<Floats> out = fwd.Run(args);
  const Weights w = LossWeights(fwd, {0}, &rng);
  const std::vector<Floats> grads =
      RunOp("batch_norm_grad",
            {F32(args[0].shape, w[0]), args[0], args[1], F32({5}, out[1]), F32({5}, out[2])});
  ASSERT_EQ(grads.size(), 3u);
  ExpectGradient(fwd, args, w, 0, grads[0]);
  ExpectGradient(fwd, args, w, 1, grads[1]);
  ExpectGradient(fwd, args, w, 2, grads[2]);
}

// More channels than one block of the kernels' sweep (64), channels last and at axis 1 with
// pixels after them: every block's statistics, saved values and gradients are right.
TEST(TrainOpNormTest, BatchNormGradMatchesFiniteDifferencesOverChannelBlocks) {
  std::mt19937 rng(27);
  constexpr int64_t kChannels = 70;
  for (const auto& [shape, axis] : {std::pair<Shape, int64_t>{{2, 3, kChannels}, -1},
                                    std::pair<Shape, int64_t>{{3, kChannels, 2}, 1}}) {
    SCOPED_TRACE(axis);
    const std::vector<Arg> args = {RandomArg(shape, &rng, -2.0f, 3.0f),
                                   RandomArg({kChannels}, &rng, 0.5f, 1.5f),
                                   RandomArg({kChannels}, &rng), RandomArg({kChannels}, &rng),
                                   RandomArg({kChannels}, &rng, 0.5f, 2.0f)};
    const Attrs attrs = MakeAttrs({{"axis", axis}});
    const OpRun fwd("batch_norm_train", args, attrs);
    ASSERT_TRUE(fwd.ok());
    const std::vector<Floats> out = fwd.Run(args);
    const Weights w = LossWeights(fwd, {0}, &rng);
    const std::vector<Floats> grads = RunOp(
        "batch_norm_grad",
        {F32(shape, w[0]), args[0], args[1], F32({kChannels}, out[1]), F32({kChannels}, out[2])},
        attrs);
    ASSERT_EQ(grads.size(), 3u);
    for (size_t input = 0; input < 3; ++input) ExpectGradient(fwd, args, w, input, grads[input]);
  }
}

// Batch mean and unbiased variance of channel c of a channels-last tensor, in double.
std::pair<double, double> ChannelStats(const Arg& x, int64_t c) {
  const int64_t channels = x.shape.back(), rows = NumElements(x.shape) / channels;
  double mean = 0.0, squares = 0.0;
  for (int64_t m = 0; m < rows; ++m) mean += x.f[static_cast<size_t>(m * channels + c)];
  mean /= static_cast<double>(rows);
  for (int64_t m = 0; m < rows; ++m) {
    const double d = x.f[static_cast<size_t>(m * channels + c)] - mean;
    squares += d * d;
  }
  return {mean, squares / static_cast<double>(rows - 1)};
}

TEST(TrainOpNormTest, BatchNormUpdatesRunningStatisticsOncePerRun) {
  std::mt19937 rng(25);
  const std::vector<Arg> args = BatchNormArgs(&rng);
  OpRun fwd("batch_norm_train", args, MakeAttrs({{"momentum", 0.8}}));
  ASSERT_TRUE(fwd.ok());
  // Read the running statistics back after the run: make them graph outputs too.
  Graph graph = fwd.graph();
  graph.outputs.push_back(graph.inputs[3]);
  graph.outputs.push_back(graph.inputs[4]);
  std::vector<Bytes> feeds;
  for (const Arg& a : args) feeds.push_back(a.bytes());
  for (int run = 0; run < 2; ++run) {  // every run starts from the fed values again
    Result<RunOutputs> result = RunUnplanned(graph, feeds);
    ASSERT_TRUE(result.ok()) << result.status().message();
    const Floats saved_mean = FloatsOf(result->outputs[1]);
    const Floats running_mean = FloatsOf(result->outputs[3]);
    const Floats running_var = FloatsOf(result->outputs[4]);
    for (int64_t c = 0; c < 5; ++c) {
      const auto [mean, unbiased] = ChannelStats(args[0], c);
      const auto k = static_cast<size_t>(c);
      EXPECT_NEAR(saved_mean[k], mean, 1e-6);
      EXPECT_NEAR(running_mean[k], 0.8 * args[3].f[k] + 0.2 * mean, 1e-5) << c;
      EXPECT_NEAR(running_var[k], 0.8 * args[4].f[k] + 0.2 * unbiased, 1e-5) << c;
    }
  }
}

// Running statistics as training graphs hold them: constants of role kState, which a Session
// copies and keeps across runs. Each run (training step) updates them exactly once.
TEST(TrainOpNormTest, BatchNormUpdatesStateOncePerSessionRun) {
  std::mt19937 rng(26);
  const Arg x = RandomArg({6, 3}, &rng, 0.0f, 4.0f);
  Graph graph;
  const ValueId xv = graph.AddValue(Value{.name = "x", .shape = {6, 3}, .role = Role::kInput});
  graph.inputs.push_back(xv);
  auto constant = [&](std::string name, Floats data, Role role) {
    return graph.AddValue(
        Value{.name = std::move(name),
              .shape = {3},
              .role = role,
              .data = std::make_shared<Bytes>(F32({3}, std::move(data)).bytes())});
  };
  const Floats initial_mean = {0.5f, -1.0f, 2.0f};
  const ValueId gamma = constant("gamma", {1, 1, 1}, Role::kWeight);
  const ValueId beta = constant("beta", {0, 0, 0}, Role::kWeight);
  const ValueId running_mean = constant("running_mean", initial_mean, Role::kState);
  const ValueId running_var =
      constant("running_var", {1, 1, 1}, Role::kWeight);  // not state: read-only
  auto out = AddOp(&graph, "batch_norm_train", {xv, gamma, beta, running_mean, running_var},
                   MakeAttrs({{"momentum", 0.5}}));
  ASSERT_TRUE(out.ok()) << out.status().message();
  graph.outputs = {(*out)[0], running_mean, running_var};

  // A fresh session per run: one update from the initial values.
  Result<RunOutputs> single = RunUnplanned(graph, {x.bytes()});
  ASSERT_TRUE(single.ok()) << single.status().message();
  const Floats once = FloatsOf(single->outputs[1]);
  // One session, two runs: two updates, each exactly once.
  Session session(graph);
  for (int run = 0; run < 2; ++run) ASSERT_TRUE(session.Run({x.bytes()}).ok());
  ASSERT_NE(session.Persistent(running_mean), nullptr);
  const Floats twice = FloatsOf(*session.Persistent(running_mean));
  ASSERT_EQ(once.size(), 3u);
  ASSERT_EQ(twice.size(), 3u);
  for (size_t c = 0; c < 3; ++c) {
    const double mean = ChannelStats(x, static_cast<int64_t>(c)).first;
    EXPECT_NEAR(once[c], 0.5 * initial_mean[c] + 0.5 * mean, 1e-6) << c;
    EXPECT_NEAR(twice[c], 0.25 * initial_mean[c] + 0.75 * mean, 1e-6) << c;
  }
  EXPECT_EQ(FloatsOf(single->outputs[2]), (Floats{1, 1, 1}));
  EXPECT_EQ(FloatsOf(*graph.value(running_var).data), (Floats{1, 1, 1}));
  EXPECT_EQ(FloatsOf(*graph.value(running_mean).data), initial_mean);  // the graph is unchanged
}

TEST(TrainOpNormTest, LayerNormGradMatchesFiniteDifferences) {
  std::mt19937 rng(27);
  const std::vector<Arg> args = {RandomArg({3, 2, 6}, &rng, -2.0f, 2.0f),
                                 RandomArg({6}, &rng, 0.5f, 1.5f), RandomArg({6}, &rng)};
  const OpRun fwd("layer_norm", args);
  ASSERT_TRUE(fwd.ok());
  EXPECT_EQ(fwd.OutputShape(1), (Shape{6}));
  const std::vector<Floats> out = fwd.Run(args);
  // Row statistics are the row's mean and 1 / sqrt(biased variance + epsilon).
  for (size_t r = 0; r < 6; ++r) {
    double mean = 0.0, squares = 0.0;
    for (size_t d = 0; d < 6; ++d) mean += args[0].f[r * 6 + d] / 6.0;
    for (size_t d = 0; d < 6; ++d) squares += std::pow(args[0].f[r * 6 + d] - mean, 2) / 6.0;
    EXPECT_NEAR(out[1][r], mean, 1e-6);
    EXPECT_NEAR(out[2][r], 1.0 / std::sqrt(squares + 1e-5), 1e-4);
  }
  const Weights w = LossWeights(fwd, {0}, &rng);
  const std::vector<Floats> grads =
      RunOp("layer_norm_grad",
            {F32(args[0].shape, w[0]), args[0], args[1], F32({6}, out[1]), F32({6}, out[2])});
  ASSERT_EQ(grads.size(), 3u);
  ExpectGradient(fwd, args, w, 0, grads[0]);
  ExpectGradient(fwd, args, w, 1, grads[1]);
  ExpectGradient(fwd, args, w, 2, grads[2]);
}

// ---------------------------------------------------------------------------------------------
// Dropout.

TEST(TrainOpDropoutTest, MaskIsReproducibleAndCounterBased) {
  std::mt19937 rng(28);
  const Arg x = RandomArg({50, 40}, &rng);
  const Attrs attrs = MakeAttrs({{"rate", 0.25}, {"seed", int64_t{1234}}});
  const std::vector<Floats> first = RunOp("dropout", {x}, attrs);
  const std::vector<Floats> again = RunOp("dropout", {x}, attrs);
  EXPECT_EQ(first[1], again[1]);
  EXPECT_EQ(first[0], again[0]);
  // Element k's decision depends on (seed, k) only: a smaller tensor gets the prefix.
  const Arg small = F32({7}, Floats(x.f.begin(), x.f.begin() + 7));
  const Floats small_mask = RunOp("dropout", {small}, attrs)[1];
  ASSERT_EQ(small_mask.size(), 7u);
  EXPECT_TRUE(std::equal(small_mask.begin(), small_mask.end(), first[1].begin()));
  // ... and matches the exported generator.
  for (size_t k = 0; k < first[1].size(); ++k) {
    EXPECT_EQ(first[1][k] != 0.0f, DropoutKeeps(1234, static_cast<int64_t>(k), 0.25)) << k;
  }
  const Floats other = RunOp("dropout", {x}, With(attrs, "seed", int64_t{1235}))[1];
  EXPECT_NE(other, first[1]);
}

TEST(TrainOpDropoutTest, RateIsHonouredAndOutputIsInputTimesMask) {
  std::mt19937 rng(29);
  for (double rate : {0.0, 0.1, 0.5, 0.9}) {
    SCOPED_TRACE(rate);
    const Arg x = RandomArg({200000}, &rng);
    const std::vector<Floats> out =
        RunOp("dropout", {x}, MakeAttrs({{"rate", rate}, {"seed", int64_t{7}}}));
    ASSERT_EQ(out[1].size(), x.f.size());
    const auto scale = static_cast<float>(1.0 / (1.0 - rate));
    int64_t dropped = 0;
    for (size_t k = 0; k < x.f.size(); ++k) {
      ASSERT_TRUE(out[1][k] == 0.0f || out[1][k] == scale) << out[1][k];
      ASSERT_EQ(out[0][k], x.f[k] * out[1][k]);
      dropped += out[1][k] == 0.0f ? 1 : 0;
    }
    const double fraction = static_cast<double>(dropped) / static_cast<double>(x.f.size());
    const double sigma = std::sqrt(rate * (1.0 - rate) / static_cast<double>(x.f.size()));
    EXPECT_NEAR(fraction, rate, 5.0 * sigma + 1e-12);
  }
}

TEST(TrainOpDropoutTest, DropoutGradUsesTheMask) {
  std::mt19937 rng(30);
  const Arg x = RandomArg({4, 9}, &rng);
  const Attrs attrs = MakeAttrs({{"rate", 0.4}, {"seed", int64_t{3}}});
  const OpRun fwd("dropout", {x}, attrs);
  const Floats mask = fwd.Run({x})[1];
  const Weights w = LossWeights(fwd, {0}, &rng);
  const Floats dx = RunOp("dropout_grad", {F32(x.shape, w[0]), F32(x.shape, mask)})[0];
  for (size_t k = 0; k < dx.size(); ++k) EXPECT_EQ(dx[k], w[0][k] * mask[k]);
  ExpectGradient(fwd, {x}, w, 0, dx);
}

TEST(TrainOpDropoutTest, RejectsRateOne) {
  Graph graph;
  const ValueId x = graph.AddValue(Value{.name = "x", .shape = {4}});
  auto result = AddOp(&graph, "dropout", {x}, MakeAttrs({{"rate", 1.0}}));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("[0, 1)"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Optimizers.

// Runs the op's kernel directly with each updated input's storage bound as its output, as the
// executor does for OpDef::updates_input.
void RunInPlace(const OpRun& run, std::vector<Floats>* storage) {
  const Graph& graph = run.graph();
  const Node& node = graph.node(0);
  const OpDef* def = OpOf(node);
  std::vector<TensorArg> inputs, outputs;
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    inputs.push_back(TensorArgOf(graph.value(node.inputs[k]),
                                 reinterpret_cast<std::byte*>((*storage)[k].data())));
  }
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    const auto source = static_cast<size_t>(def->updates_input[k]);
    outputs.push_back(TensorArgOf(graph.value(node.outputs[k]),
                                  reinterpret_cast<std::byte*>((*storage)[source].data())));
  }
  def->FindKernel(DType::kF32)(
      KernelArgsFor(node, std::move(inputs), std::move(outputs)).Context());
}

TEST(TrainOpOptimizerTest, SgdMomentumHandComputed) {
  EXPECT_EQ(FindOp("sgd_momentum")->updates_input, (std::vector<int>{0, 2}));
  const std::vector<Arg> args = {F32({2}, {1.0f, 2.0f}), F32({2}, {0.5f, -1.0f}),
                                 F32({2}, {0.1f, 0.2f})};
  const Attrs attrs = MakeAttrs({{"lr", 0.1}, {"momentum", 0.9}});
  const OpRun run("sgd_momentum", args, attrs);
  const std::vector<Floats> out = run.Run(args);
  // velocity = 0.9 * [0.1, 0.2] + [0.5, -1] = [0.59, -0.82]; param = [1, 2] - 0.1 * velocity.
  ASSERT_EQ(out[0].size(), 2u);
  EXPECT_NEAR(out[1][0], 0.59, 1e-6);
  EXPECT_NEAR(out[1][1], -0.82, 1e-6);
  EXPECT_NEAR(out[0][0], 0.941, 1e-6);
  EXPECT_NEAR(out[0][1], 2.082, 1e-6);
  std::vector<Floats> storage = {args[0].f, args[1].f, args[2].f};
  RunInPlace(run, &storage);
  EXPECT_EQ(storage[0], out[0]);
  EXPECT_EQ(storage[2], out[1]);
  EXPECT_EQ(storage[1], args[1].f);  // the gradient is not touched
}

TEST(TrainOpOptimizerTest, AdamHandComputed) {
  EXPECT_EQ(FindOp("adam")->updates_input, (std::vector<int>{0, 2, 3}));
  // Step 1 from zero moments: m = 0.1 g, v = 0.001 g^2, m_hat = g, v_hat = g^2, so the step is
  // lr * g / (|g| + eps) = lr * sign(g).
  {
    const std::vector<Arg> args = {F32({2}, {1.0f, -2.0f}), F32({2}, {0.5f, -4.0f}),
                                   F32({2}, {0, 0}), F32({2}, {0, 0})};
    const std::vector<Floats> out = RunOp("adam", args);
    ASSERT_EQ(out[0].size(), 2u);
    EXPECT_NEAR(out[0][0], 0.999, 1e-6);
    EXPECT_NEAR(out[0][1], -1.999, 1e-6);
    EXPECT_NEAR(out[1][0], 0.05, 1e-7);
    EXPECT_NEAR(out[1][1], -0.4, 1e-7);
    EXPECT_NEAR(out[2][0], 0.00025, 1e-9);
    EXPECT_NEAR(out[2][1], 0.016, 1e-8);
  }
  // Step 3 with existing moments, lr 0.01, beta1 0.8, beta2 0.9, epsilon 0.1:
  // m = 0.8 * 0.2 + 0.2 * 1 = 0.36; v = 0.9 * 0.5 + 0.1 * 1 = 0.55;
  // m_hat = 0.36 / (1 - 0.512) = 0.737705; v_hat = 0.55 / (1 - 0.729) = 2.029520;
  // param = 3 - 0.01 * 0.737705 / (1.424612 + 0.1) = 2.99516138.
  {
    const std::vector<Arg> args = {F32({1}, {3.0f}), F32({1}, {1.0f}), F32({1}, {0.2f}),
                                   F32({1}, {0.5f})};
    const Attrs attrs = MakeAttrs(
        {{"lr", 0.01}, {"beta1", 0.8}, {"beta2", 0.9}, {"epsilon", 0.1}, {"step", int64_t{3}}});
    const OpRun run("adam", args, attrs);
    const std::vector<Floats> out = run.Run(args);
    ASSERT_EQ(out[0].size(), 1u);
    EXPECT_NEAR(out[1][0], 0.36, 1e-6);
    EXPECT_NEAR(out[2][0], 0.55, 1e-6);
    EXPECT_NEAR(out[0][0], 2.99516138, 1e-6);
    std::vector<Floats> storage = {args[0].f, args[1].f, args[2].f, args[3].f};
    RunInPlace(run, &storage);
    EXPECT_EQ(storage[0], out[0]);
    EXPECT_EQ(storage[2], out[1]);
    EXPECT_EQ(storage[3], out[2]);
  }
}

TEST(TrainOpOptimizerTest, InPlaceMatchesSeparateBuffersOnRandomData) {
  std::mt19937 rng(31);
  for (const char* op : {"sgd_momentum", "adam"}) {
    SCOPED_TRACE(op);
    const int inputs = std::string_view(op) == "adam" ? 4 : 3;
    std::vector<Arg> args;
    for (int k = 0; k < inputs; ++k)
      args.push_back(RandomArg({3, 17}, &rng, k == 3 ? 0.0f : -1.0f, 1.0f));
    const OpRun run(op, args, MakeAttrs({{"lr", 0.05}}));
    const std::vector<Floats> separate = run.Run(args);
    std::vector<Floats> storage;
    for (const Arg& a : args) storage.push_back(a.f);
    RunInPlace(run, &storage);
    const OpDef* def = FindOp(op);
    for (size_t k = 0; k < separate.size(); ++k) {
      EXPECT_EQ(storage[static_cast<size_t>(def->updates_input[k])], separate[k]) << "output " << k;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Traced kernels run on arbitrary bytes (the trace method fills buffers with a pattern): index
// inputs then hold arbitrary integers, which must not send any kernel out of bounds.

TEST(TrainOpTraceTest, IndexKernelsStayInBoundsOnArbitraryIndices) {
  std::mt19937 rng(32);
  const std::vector<std::pair<std::string, std::vector<Arg>>> cases = {
      {"gather", {RandomArg({4, 3}, &rng), I32({5}, {0, 0, 0, 0, 0})}},
      {"softmax_cross_entropy", {RandomArg({5, 4}, &rng), I32({5}, {0, 0, 0, 0, 0})}},
  };
  for (const auto& [op, args] : cases) {
    SCOPED_TRACE(op);
    const OpRun run(op, args);
    ASSERT_TRUE(run.ok());
    EXPECT_TRUE(SafeOverlapByTrace(run.graph(), run.graph().node(0), 0).has_value());
  }
  const OpRun scatter("scatter_add", {RandomArg({5, 3}, &rng), I32({5}, {0, 0, 0, 0, 0})},
                      MakeAttrs({{"rows", int64_t{2}}}));
  ASSERT_TRUE(scatter.ok());
  EXPECT_TRUE(SafeOverlapByTrace(scatter.graph(), scatter.graph().node(0), 0).has_value());
  const OpRun ce_grad("softmax_cross_entropy_grad",
                      {F32({}, {1}), RandomArg({5, 4}, &rng), I32({5}, {0, 0, 0, 0, 0})});
  ASSERT_TRUE(ce_grad.ok());
  EXPECT_TRUE(SafeOverlapByTrace(ce_grad.graph(), ce_grad.graph().node(0), 1).has_value());
}

TEST(TrainOpInferTest, LossAndIndexOpsNameTheirProblems) {
  Graph graph;
  auto value = [&](Shape shape, DType dtype) {
    return graph.AddValue(Value{.name = "v" + std::to_string(graph.num_values()),
                                .dtype = dtype,
                                .shape = std::move(shape)});
  };
  auto error = [&](std::string_view op, std::vector<ValueId> inputs, Attrs attrs = {}) {
    auto result = AddOp(&graph, op, std::move(inputs), std::move(attrs));
    return result.ok() ? std::string() : result.status().message();
  };
  const ValueId logits = value({4, 3}, DType::kF32);
  EXPECT_NE(error("softmax_cross_entropy", {logits, value({4}, DType::kF32)}).find("must be i32"),
            std::string::npos);
  EXPECT_NE(
      error("softmax_cross_entropy", {logits, value({3}, DType::kI32)}).find("must have shape [4]"),
      std::string::npos);
  EXPECT_NE(error("softmax_cross_entropy_grad",
                  {value({2}, DType::kF32), logits, value({4}, DType::kI32)})
                .find("scalar"),
            std::string::npos);
  EXPECT_NE(error("mse_loss", {logits, value({3, 4}, DType::kF32)}).find("must have shape [4x3]"),
            std::string::npos);
  EXPECT_NE(error("scatter_add", {value({2, 5}, DType::kF32), value({3}, DType::kI32)},
                  MakeAttrs({{"rows", int64_t{4}}}))
                .find("ids' shape"),
            std::string::npos);
  EXPECT_NE(error("gather", {value({0, 3}, DType::kF32), value({3}, DType::kI32)})
                .find("at least one row"),
            std::string::npos);
  EXPECT_NE(error("batch_norm_train", {logits, value({3}, DType::kF32), value({3}, DType::kF32),
                                       value({4}, DType::kF32), value({3}, DType::kF32)})
                .find("must have shape [3]"),
            std::string::npos);
  EXPECT_NE(error("adam", {logits, logits, logits, logits}, MakeAttrs({{"step", int64_t{0}}}))
                .find("step"),
            std::string::npos);
  EXPECT_NE(error("avg_pool2d_grad", {value({1, 2, 2, 1}, DType::kF32)},
                  MakeAttrs({{"filter", Ints{2, 2}},
                             {"input_shape", Ints{1, 4, 4, 1}},
                             {"activation", std::string("relu")}}))
                .find("activation 'none'"),
            std::string::npos);
}

}  // namespace
}  // namespace memfold
