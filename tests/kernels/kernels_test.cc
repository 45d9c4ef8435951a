// Float32 and data-movement kernels against naive loop references written here.
//
// Most tests build a small graph and run it through the unplanned executor, so registry
// validation, shape inference and the kernel are exercised together as a model would use them.
// Where a reference sums in the same order as the TFLite reference kernel the float results must
// be bit-exact (compared with ==); transcendental results are also checked loosely against
// double precision so that a reference sharing a bug with the kernel would still be caught.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memfold/exec/executor.h"
#include "memfold/ir/graph.h"
#include "memfold/ops/kernel_args.h"
#include "memfold/ops/kernels/float_kernels.h"
#include "memfold/ops/registry.h"
#include "tests/kernels/kernel_test_util.h"

namespace memfold {
namespace {

using Ints = std::vector<int64_t>;
constexpr float kInf = std::numeric_limits<float>::infinity();

// ---------------------------------------------------------------------------------------------
// Tensors, bytes and comparisons.

struct Tensor {
  Shape shape;
  std::vector<float> data;
};

Tensor RandomTensor(Shape shape, std::mt19937* rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t{std::move(shape), {}};
  t.data.resize(static_cast<size_t>(NumElements(t.shape)));
  for (float& v : t.data) v = dist(*rng);
  return t;
}

Tensor Zeros(Shape shape) {
  Tensor t{std::move(shape), {}};
  t.data.assign(static_cast<size_t>(NumElements(t.shape)), 0.0f);
  return t;
}

// Row-major offset of a coordinate: the definition every reference below indexes with.
int64_t Ravel(const Shape& shape, const std::vector<int64_t>& coord) {
  int64_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d) offset = offset * shape[d] + coord[d];
  return offset;
}

std::vector<int64_t> Unravel(const Shape& shape, int64_t index) {
  std::vector<int64_t> coord(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    coord[d] = index % shape[d];
    index /= shape[d];
  }
  return coord;
}

float Get(const Tensor& t, std::initializer_list<int64_t> coord) {
  return t.data[static_cast<size_t>(Ravel(t.shape, coord))];
}

void Put(Tensor* t, std::initializer_list<int64_t> coord, float value) {
  t->data[static_cast<size_t>(Ravel(t->shape, coord))] = value;
}

// Exact comparison; reports the first differing element rather than the whole vector.
::testing::AssertionResult SameFloats(const std::vector<float>& actual,
                                      const std::vector<float>& expected) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure()
           << "size " << actual.size() << ", expected " << expected.size();
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    if (!(actual[i] == expected[i])) {
      return ::testing::AssertionFailure()
             << "element " << i << " is " << actual[i] << ", expected " << expected[i];
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult NearFloats(const std::vector<float>& actual,
                                      const std::vector<double>& expected, double tolerance) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure()
           << "size " << actual.size() << ", expected " << expected.size();
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    if (!(std::abs(static_cast<double>(actual[i]) - expected[i]) <= tolerance)) {
      return ::testing::AssertionFailure() << "element " << i << " is " << actual[i]
                                           << ", expected " << expected[i] << " +- " << tolerance;
    }
  }
  return ::testing::AssertionSuccess();
}

// Fused activation as the kernels apply it: clamp after the bias.
struct Range {
  float lo = -kInf;
  float hi = kInf;
};
float Clamp(float v, Range range) { return std::min(std::max(v, range.lo), range.hi); }

// ---------------------------------------------------------------------------------------------
// A graph under construction plus the bytes to feed its inputs.

class Net : public TestNet {
 public:
  ValueId Input(const Shape& dims, DType dtype, Bytes bytes) {
    return AddInput(dims, dtype, std::move(bytes));
  }
  ValueId Input(const Tensor& t) { return AddInput(t.shape, DType::kF32, ToBytes(t.data)); }
  ValueId Weight(const Tensor& t) { return AddConstant(t.shape, DType::kF32, ToBytes(t.data)); }
  ValueId Op(std::string_view op, std::vector<ValueId> inputs, Attrs attrs = {}) {
    return AddNode(op, std::move(inputs), std::move(attrs));
  }
  std::vector<float> Run(ValueId output) { return FromBytes<float>(RunBytes(output)); }
};

// ---------------------------------------------------------------------------------------------
// Unary ops.

// Hides a constant from the optimiser so that std::exp runs the same libm code as the kernel
// instead of being folded at compile time to a possibly differently rounded result.
float Runtime(float v) {
  volatile float copy = v;
  return copy;
}

float SigmoidRef(float v) {
  // TFLite's float Logistic saturates where float precision runs out (see float_elementwise.cc).
  if (v > 16.619047164916992188f) return 1.0f;
  if (v < -9.0f) return std::exp(v);
  return 1.0f / (1.0f + std::exp(-v));
}

struct UnaryCase {
  const char* op;
  float (*ref)(float);
  double (*exact)(double);  // independent double-precision definition
};

const UnaryCase kUnaryCases[] = {
    {"relu", [](float v) { return v < 0.0f ? 0.0f : v; },
     [](double v) { return std::max(v, 0.0); }},
    {"relu6", [](float v) { return v > 6.0f ? 6.0f : (v < 0.0f ? 0.0f : v); },
     [](double v) { return std::clamp(v, 0.0, 6.0); }},
    {"tanh", [](float v) { return std::tanh(v); }, [](double v) { return std::tanh(v); }},
    {"sigmoid", SigmoidRef, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
    {"exp", [](float v) { return std::exp(v); }, [](double v) { return std::exp(v); }},
    {"neg", [](float v) { return -v; }, [](double v) { return -v; }},
    {"hard_swish", [](float v) { return v * std::min(6.0f, std::max(0.0f, v + 3.0f)) / 6.0f; },
     [](double v) { return v * std::clamp(v + 3.0, 0.0, 6.0) / 6.0; }},
    {"silu", [](float v) { return v / (1.0f + std::exp(-v)); },
     [](double v) { return v / (1.0 + std::exp(-v)); }},
    {"gelu", [](float v) { return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f)); },
     [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }},
};

TEST(KernelUnaryTest, MatchesReferenceOnRandomAndSpecialValues) {
  std::mt19937 rng(1);
  Tensor x = RandomTensor({4, 25}, &rng, -10.0f, 10.0f);
  // Hit the branch points of every op exactly.
  const std::vector<float> special = {
      0.0f, -0.0f, 6.0f, -3.0f, 3.0f, -9.0f, 16.619047164916992188f, -20.0f, 20.0f, 1e-7f};
  std::copy(special.begin(), special.end(), x.data.begin());
  for (const UnaryCase& c : kUnaryCases) {
    SCOPED_TRACE(c.op);
    Net net;
    const ValueId y = net.Op(c.op, {net.Input(x)});
    EXPECT_EQ(net.ShapeOf(y), x.shape);
    const std::vector<float> got = net.Run(y);
    std::vector<float> want;
    std::vector<double> exact;
    for (float v : x.data) {
      want.push_back(c.ref(v));
      exact.push_back(c.exact(v));
    }
    EXPECT_TRUE(SameFloats(got, want));
    // Relative tolerance for exp, whose values reach e^20; absolute for the bounded ops.
    for (size_t i = 0; i < got.size() && i < exact.size(); ++i) {
      EXPECT_NEAR(got[i], exact[i], 2e-6 * std::max(1.0, std::abs(exact[i]))) << "x=" << x.data[i];
    }
  }
}

TEST(KernelUnaryTest, SigmoidSaturatesAtTfliteCutoffs) {
  const float upper = 16.619047164916992188f;
  const std::vector<float> x = {upper,  std::nextafter(upper, kInf),  30.0f,
                                -9.0f,  std::nextafter(-9.0f, -kInf), -12.5f,
                                -100.0f};
  Net net;
  const std::vector<float> y =
      net.Run(net.Op("sigmoid", {net.Input({7}, DType::kF32, ToBytes(x))}));
  ASSERT_EQ(y.size(), x.size());
  EXPECT_EQ(y[0], 1.0f / (1.0f + std::exp(Runtime(-upper))));  // the cut-off uses the formula
  EXPECT_LT(y[0], 1.0f);
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_EQ(y[2], 1.0f);
  EXPECT_EQ(y[3], 1.0f / (1.0f + std::exp(Runtime(9.0f))));
  EXPECT_EQ(y[4], std::exp(Runtime(x[4])));  // just below -9: exp(x) instead of the formula
  EXPECT_EQ(y[5], std::exp(Runtime(-12.5f)));
  EXPECT_EQ(y[6], std::exp(Runtime(-100.0f)));
  for (size_t i = 0; i < y.size(); ++i) {
    EXPECT_NEAR(y[i], 1.0 / (1.0 + std::exp(-static_cast<double>(x[i]))), 1e-7) << x[i];
  }
}

TEST(KernelUnaryTest, HardSwishKnownValues) {
  const std::vector<float> x = {-4.0f, -3.0f, -1.0f, 0.0f, 1.0f, 3.0f, 4.0f};
  Net net;
  const std::vector<float> y =
      net.Run(net.Op("hard_swish", {net.Input({7}, DType::kF32, ToBytes(x))}));
  ASSERT_EQ(y.size(), 7u);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_FLOAT_EQ(y[2], -1.0f / 3.0f);
  EXPECT_EQ(y[3], 0.0f);
  EXPECT_FLOAT_EQ(y[4], 4.0f / 6.0f);
  EXPECT_EQ(y[5], 3.0f);
  EXPECT_EQ(y[6], 4.0f);
}

// ---------------------------------------------------------------------------------------------
// Broadcasting binary ops.

int64_t DimFromRight(const Shape& shape, size_t rank, size_t d) {
  const size_t missing = rank - shape.size();
  return d < missing ? 1 : shape[d - missing];
}

// Numpy broadcasting spelt out: align shapes on the right, a dimension of 1 repeats.
Tensor BroadcastRef(const Tensor& a, const Tensor& b, float (*f)(float, float), Range range) {
  const size_t rank = std::max(a.shape.size(), b.shape.size());
  Tensor y;
  for (size_t d = 0; d < rank; ++d) {
    y.shape.push_back(std::max(DimFromRight(a.shape, rank, d), DimFromRight(b.shape, rank, d)));
  }
  const int64_t n = NumElements(y.shape);
  for (int64_t i = 0; i < n; ++i) {
    const std::vector<int64_t> coord = Unravel(y.shape, i);
    auto source = [&](const Tensor& t) {
      std::vector<int64_t> c;
      const size_t missing = rank - t.shape.size();
      for (size_t d = missing; d < rank; ++d) c.push_back(t.shape[d - missing] == 1 ? 0 : coord[d]);
      return t.data[static_cast<size_t>(Ravel(t.shape, c))];
    };
    y.data.push_back(Clamp(f(source(a), source(b)), range));
  }
  return y;
}

struct BinaryOp {
  const char* name;
  float (*f)(float, float);
};
const BinaryOp kBinaryOps[] = {
    {"add", [](float a, float b) { return a + b; }},
    {"sub", [](float a, float b) { return a - b; }},
    {"mul", [](float a, float b) { return a * b; }},
    {"div", [](float a, float b) { return a / b; }},
    {"max", [](float a, float b) { return std::max(a, b); }},
    {"min", [](float a, float b) { return std::min(a, b); }},
};

TEST(KernelBinaryTest, BroadcastsLikeNumpy) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}}, {{4}, {2, 3, 4}},    {{3, 1}, {1, 4}},
      {{2, 3}, {1}},          {{1}, {2, 3}},    {{2, 1, 4}, {3, 1}}, {{}, {2, 2}},
  };
  uint32_t seed = 10;
  for (const BinaryOp& op : kBinaryOps) {
    for (const auto& [a_shape, b_shape] : shapes) {
      SCOPED_TRACE(std::string(op.name) + " " + ShapeString(a_shape) + " with " +
                   ShapeString(b_shape));
      std::mt19937 rng(seed++);
      // Keep the divisor away from zero so div results stay finite and comparable.
      const Tensor a = RandomTensor(a_shape, &rng, -4.0f, 4.0f);
      const Tensor b = RandomTensor(b_shape, &rng, 0.5f, 3.0f);
      Net net;
      const ValueId y = net.Op(op.name, {net.Input(a), net.Input(b)});
      const Tensor want = BroadcastRef(a, b, op.f, {});
      EXPECT_EQ(net.ShapeOf(y), want.shape);
      EXPECT_TRUE(SameFloats(net.Run(y), want.data));
    }
  }
}

TEST(KernelBinaryTest, FusedActivationClampsAfterTheOp) {
  const std::vector<std::pair<std::string, Range>> activations = {
      {"relu6", {0.0f, 6.0f}}, {"relu", {0.0f, kInf}}, {"relu_n1_to_1", {-1.0f, 1.0f}}};
  for (const auto& [activation, range] : activations) {
    for (const BinaryOp& op : kBinaryOps) {
      if (std::string(op.name) == "max" || std::string(op.name) == "min") continue;  // no attr
      SCOPED_TRACE(std::string(op.name) + " " + activation);
      std::mt19937 rng(7);
      const Tensor a = RandomTensor({3, 1, 5}, &rng, -8.0f, 8.0f);
      const Tensor b = RandomTensor({4, 1}, &rng, 0.25f, 4.0f);
      Net net;
      const ValueId y =
          net.Op(op.name, {net.Input(a), net.Input(b)}, MakeAttrs({{"activation", activation}}));
      const Tensor want = BroadcastRef(a, b, op.f, range);
      const std::vector<float> got = net.Run(y);
      EXPECT_TRUE(SameFloats(got, want.data));
      for (float v : got) {
        EXPECT_GE(v, range.lo);
        EXPECT_LE(v, range.hi);
      }
    }
  }
  // The inputs are wide enough that relu6 really clamps at both ends.
  std::mt19937 rng(7);
  const Tensor a = RandomTensor({3, 1, 5}, &rng, -8.0f, 8.0f);
  const Tensor b = RandomTensor({4, 1}, &rng, 0.25f, 4.0f);
  Net net;
  const std::vector<float> got = net.Run(net.Op("add", {net.Input(a), net.Input(b)},
                                                MakeAttrs({{"activation", std::string("relu6")}})));
  EXPECT_NE(std::count(got.begin(), got.end(), 0.0f), 0);
  EXPECT_NE(std::count(got.begin(), got.end(), 6.0f), 0);
}

TEST(KernelBinaryTest, ConstantOperandBroadcasts) {
  const Tensor x{{2, 3}, {1, 2, 3, 4, 5, 6}};
  const Tensor w{{3}, {10, 20, 30}};
  Net net;
  const std::vector<float> y = net.Run(net.Op("mul", {net.Input(x), net.Weight(w)}));
  EXPECT_TRUE(SameFloats(y, {10, 40, 90, 40, 100, 180}));
}

// ---------------------------------------------------------------------------------------------
// fully_connected, matmul, batch_matmul.

// out[b][o] = sum_d x[b][d] * w[o][d] (+ bias[o]), summed over d in increasing order.
std::vector<float> FullyConnectedRef(const Tensor& x, const Tensor& w,
                                     const std::vector<float>& bias, Range range) {
  const int64_t out_depth = w.shape[0], depth = w.shape[1];
  const int64_t batches = NumElements(x.shape) / depth;
  std::vector<float> y;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t o = 0; o < out_depth; ++o) {
      float total = 0.0f;
      for (int64_t d = 0; d < depth; ++d) {
        total += x.data[static_cast<size_t>(b * depth + d)] * Get(w, {o, d});
      }
      y.push_back(Clamp(total + (bias.empty() ? 0.0f : bias[static_cast<size_t>(o)]), range));
    }
  }
  return y;
}

TEST(KernelFullyConnectedTest, FlattensInputWithoutBias) {
  std::mt19937 rng(20);
  const Tensor x = RandomTensor({3, 2, 5}, &rng);
  const Tensor w = RandomTensor({4, 10}, &rng);
  Net net;
  const ValueId y = net.Op("fully_connected", {net.Input(x), net.Weight(w)});
  EXPECT_EQ(net.ShapeOf(y), (Shape{3, 4}));
  EXPECT_TRUE(SameFloats(net.Run(y), FullyConnectedRef(x, w, {}, {})));
}

TEST(KernelFullyConnectedTest, AbsentOptionalBiasIsZero) {
  std::mt19937 rng(21);
  const Tensor x = RandomTensor({2, 6}, &rng);
  const Tensor w = RandomTensor({3, 6}, &rng);
  Net net;
  const ValueId y = net.Op("fully_connected", {net.Input(x), net.Weight(w), kNoValue});
  EXPECT_TRUE(SameFloats(net.Run(y), FullyConnectedRef(x, w, {}, {})));
}

TEST(KernelFullyConnectedTest, KeepNumDimsWithBiasAndRelu) {
  std::mt19937 rng(22);
  const Tensor x = RandomTensor({2, 3, 5}, &rng);
  const Tensor w = RandomTensor({4, 5}, &rng);
  const Tensor bias = RandomTensor({4}, &rng);
  Net net;
  const ValueId y =
      net.Op("fully_connected", {net.Input(x), net.Weight(w), net.Weight(bias)},
             MakeAttrs({{"keep_num_dims", int64_t{1}}, {"activation", std::string("relu")}}));
  EXPECT_EQ(net.ShapeOf(y), (Shape{2, 3, 4}));
  EXPECT_TRUE(SameFloats(net.Run(y), FullyConnectedRef(x, w, bias.data, {0.0f, kInf})));
}

// Row-major [rows, cols] matrix stored transposed, i.e. as [cols, rows].
std::vector<float> Transposed(const std::vector<float>& m, int64_t rows, int64_t cols) {
  std::vector<float> t(m.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      t[static_cast<size_t>(c * rows + r)] = m[static_cast<size_t>(r * cols + c)];
    }
  }
  return t;
}

// Plain [m, k] x [k, n] product, inner sum in increasing order.
// Matrix products run on the system BLAS, which sums in its own order (and with fused
// multiply-adds): compared within rounding, not bit for bit.
std::vector<float> MatMulRef(const float* a, const float* b, int64_t m, int64_t k, int64_t n) {
  std::vector<float> y;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float total = 0.0f;
      for (int64_t p = 0; p < k; ++p) total += a[i * k + p] * b[p * n + j];
      y.push_back(total);
    }
  }
  return y;
}

TEST(KernelMatMulTest, AllTransposeCombinations) {
  const int64_t m = 3, k = 5, n = 4;
  std::mt19937 rng(30);
  const Tensor a = RandomTensor({m, k}, &rng);
  const Tensor b = RandomTensor({k, n}, &rng);
  const std::vector<float> want = MatMulRef(a.data.data(), b.data.data(), m, k, n);
  for (int64_t ta = 0; ta < 2; ++ta) {
    for (int64_t tb = 0; tb < 2; ++tb) {
      SCOPED_TRACE("transpose_a=" + std::to_string(ta) + " transpose_b=" + std::to_string(tb));
      // Store the operands transposed so that the op's transpose restores the same product.
      const Tensor a_in = ta ? Tensor{{k, m}, Transposed(a.data, m, k)} : a;
      const Tensor b_in = tb ? Tensor{{n, k}, Transposed(b.data, k, n)} : b;
      Net net;
      const ValueId y = net.Op("matmul", {net.Input(a_in), net.Input(b_in)},
                               MakeAttrs({{"transpose_a", ta}, {"transpose_b", tb}}));
      EXPECT_EQ(net.ShapeOf(y), (Shape{m, n}));
      EXPECT_TRUE(NearFloats(net.Run(y), std::vector<double>(want.begin(), want.end()), 1e-5));
    }
  }
}

TEST(KernelBatchMatMulTest, BroadcastsBatchDimensions) {
  std::mt19937 rng(31);
  const Tensor a = RandomTensor({2, 1, 3, 4}, &rng);
  const Tensor b = RandomTensor({5, 4, 6}, &rng);
  Net net;
  const ValueId y = net.Op("batch_matmul", {net.Input(a), net.Input(b)});
  ASSERT_EQ(net.ShapeOf(y), (Shape{2, 5, 3, 6}));
  std::vector<float> want;
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 5; ++j) {
      // a repeats along the size-1 dim, b along the missing leading dim.
      const std::vector<float> block =
          MatMulRef(a.data.data() + i * 12, b.data.data() + j * 24, 3, 4, 6);
      want.insert(want.end(), block.begin(), block.end());
    }
  }
  EXPECT_TRUE(NearFloats(net.Run(y), std::vector<double>(want.begin(), want.end()), 1e-5));
}

TEST(KernelBatchMatMulTest, TransposesWithBroadcastOfSizeOneBatch) {
  std::mt19937 rng(32);
  const Tensor a = RandomTensor({3, 4, 2}, &rng);  // 3 batches of [k=4, m=2], transpose_a
  const Tensor b = RandomTensor({1, 5, 4}, &rng);  // one [n=5, k=4], transpose_b
  Net net;
  const ValueId y = net.Op("batch_matmul", {net.Input(a), net.Input(b)},
                           MakeAttrs({{"transpose_a", int64_t{1}}, {"transpose_b", int64_t{1}}}));
  ASSERT_EQ(net.ShapeOf(y), (Shape{3, 2, 5}));
  const std::vector<float> b_plain = Transposed(b.data, 5, 4);
  std::vector<float> want;
  for (int64_t i = 0; i < 3; ++i) {
    const std::vector<float> a_block(a.data.begin() + i * 8, a.data.begin() + (i + 1) * 8);
    const std::vector<float> a_plain = Transposed(a_block, 4, 2);
    const std::vector<float> block = MatMulRef(a_plain.data(), b_plain.data(), 2, 4, 5);
    want.insert(want.end(), block.begin(), block.end());
  }
  EXPECT_TRUE(NearFloats(net.Run(y), std::vector<double>(want.begin(), want.end()), 1e-5));
}

TEST(KernelBatchMatMulTest, RankTwoTimesRankThree) {
  std::mt19937 rng(33);
  const Tensor a = RandomTensor({3, 4}, &rng);
  const Tensor b = RandomTensor({2, 4, 5}, &rng);
  Net net;
  const ValueId y = net.Op("batch_matmul", {net.Input(a), net.Input(b)});
  ASSERT_EQ(net.ShapeOf(y), (Shape{2, 3, 5}));
  std::vector<float> want;
  for (int64_t j = 0; j < 2; ++j) {
    const std::vector<float> block = MatMulRef(a.data.data(), b.data.data() + j * 20, 3, 4, 5);
    want.insert(want.end(), block.begin(), block.end());
  }
  EXPECT_TRUE(NearFloats(net.Run(y), std::vector<double>(want.begin(), want.end()), 1e-5));
}

// ---------------------------------------------------------------------------------------------
// Sliding windows: geometry computed here independently of window.cc.

struct Axis {
  int64_t out = 0;
  int64_t pad_before = 0;
  int64_t stride = 1;
  int64_t dilation = 1;
};

int64_t EffectiveSize(int64_t k, int64_t dilation) { return (k - 1) * dilation + 1; }

// TFLite SAME: out = ceil(in / stride), total = max((out - 1) * stride + eff - in, 0) and the
// smaller half, total / 2, goes before.
Axis SameAxis(int64_t in, int64_t k, int64_t stride, int64_t dilation = 1) {
  const int64_t out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>((out - 1) * stride + EffectiveSize(k, dilation) - in, 0);
  return {out, total / 2, stride, dilation};
}

Axis ExplicitAxis(int64_t in, int64_t k, int64_t stride, int64_t dilation, int64_t before,
                  int64_t after) {
  return {(in + before + after - EffectiveSize(k, dilation)) / stride + 1, before, stride,
          dilation};
}

Axis ValidAxis(int64_t in, int64_t k, int64_t stride, int64_t dilation = 1) {
  return ExplicitAxis(in, k, stride, dilation, 0, 0);
}

// Naive grouped NHWC conv; filter [out_c, kh, kw, in_c / groups]. Sums over (fy, fx, ic) in
// that order as reference_ops::Conv does; padded positions contribute nothing.
Tensor ConvRef(const Tensor& x, const Tensor& w, const std::vector<float>& bias, Axis ah, Axis aw,
               Range range) {
  const int64_t batches = x.shape[0], in_h = x.shape[1], in_w = x.shape[2], in_c = x.shape[3];
  const int64_t out_c = w.shape[0], kh = w.shape[1], kw = w.shape[2], filter_c = w.shape[3];
  const int64_t groups = in_c / filter_c;
  const int64_t per_group = out_c / groups;
  Tensor y = Zeros({batches, ah.out, aw.out, out_c});
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t oy = 0; oy < ah.out; ++oy) {
      for (int64_t ox = 0; ox < aw.out; ++ox) {
        for (int64_t oc = 0; oc < out_c; ++oc) {
          const int64_t group = oc / per_group;
          float total = 0.0f;
          for (int64_t fy = 0; fy < kh; ++fy) {
            for (int64_t fx = 0; fx < kw; ++fx) {
              const int64_t iy = oy * ah.stride - ah.pad_before + fy * ah.dilation;
              const int64_t ix = ox * aw.stride - aw.pad_before + fx * aw.dilation;
              if (iy < 0 || iy >= in_h || ix < 0 || ix >= in_w) continue;
              for (int64_t ic = 0; ic < filter_c; ++ic) {
                total += Get(x, {b, iy, ix, group * filter_c + ic}) * Get(w, {oc, fy, fx, ic});
              }
            }
          }
          const float with_bias = total + (bias.empty() ? 0.0f : bias[static_cast<size_t>(oc)]);
          Put(&y, {b, oy, ox, oc}, Clamp(with_bias, range));
        }
      }
    }
  }
  return y;
}

struct ConvCase {
  Shape x_shape;
  Shape w_shape;
  bool bias = true;
  Attrs attrs;
  Axis h;
  Axis w;
  Range range;
};

void ExpectConvMatches(const ConvCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  const Tensor x = RandomTensor(c.x_shape, &rng, -3.0f, 3.0f);
  const Tensor w = RandomTensor(c.w_shape, &rng);
  const Tensor bias = RandomTensor({c.bias ? c.w_shape[0] : 0}, &rng);
  Net net;
  std::vector<ValueId> inputs = {net.Input(x), net.Weight(w)};
  if (c.bias) inputs.push_back(net.Weight(bias));
  const ValueId y = net.Op("conv2d", inputs, c.attrs);
  const Tensor want = ConvRef(x, w, bias.data, c.h, c.w, c.range);
  EXPECT_EQ(net.ShapeOf(y), want.shape);
  EXPECT_TRUE(SameFloats(net.Run(y), want.data));
}

TEST(KernelConv2DTest, Stride2SamePadsAsymmetrically) {
  // Height needs 2 rows of padding (1 above), width needs 1 column (0 left, 1 right).
  ExpectConvMatches({.x_shape = {2, 7, 8, 3},
                     .w_shape = {4, 3, 3, 3},
                     .attrs = MakeAttrs({{"stride", Ints{2, 2}}}),
                     .h = SameAxis(7, 3, 2),
                     .w = SameAxis(8, 3, 2)},
                    40);
  EXPECT_EQ(SameAxis(7, 3, 2).pad_before, 1);
  EXPECT_EQ(SameAxis(8, 3, 2).pad_before, 0);
}

TEST(KernelConv2DTest, Dilation2Same) {
  ExpectConvMatches({.x_shape = {1, 7, 6, 2},
                     .w_shape = {3, 3, 3, 2},
                     .attrs = MakeAttrs({{"dilation", Ints{2, 2}}}),
                     .h = SameAxis(7, 3, 1, 2),
                     .w = SameAxis(6, 3, 1, 2)},
                    41);
}

TEST(KernelConv2DTest, ValidWithUnequalStrides) {
  ExpectConvMatches(
      {.x_shape = {1, 6, 7, 2},
       .w_shape = {2, 3, 2, 2},
       .bias = false,
       .attrs = MakeAttrs({{"padding", std::string("valid")}, {"stride", Ints{1, 2}}}),
       .h = ValidAxis(6, 3, 1),
       .w = ValidAxis(7, 2, 2)},
      42);
}

TEST(KernelConv2DTest, ValidWithDilation) {
  ExpectConvMatches(
      {.x_shape = {1, 9, 9, 1},
       .w_shape = {2, 3, 3, 1},
       .attrs = MakeAttrs({{"padding", std::string("valid")}, {"dilation", Ints{2, 3}}}),
       .h = ValidAxis(9, 3, 1, 2),
       .w = ValidAxis(9, 3, 1, 3)},
      43);
}

TEST(KernelConv2DTest, ExplicitPads) {
  ExpectConvMatches({.x_shape = {1, 5, 5, 2},
                     .w_shape = {3, 3, 3, 2},
                     .attrs = MakeAttrs({{"padding", std::string("explicit")},
                                         {"pads", Ints{1, 2, 0, 1}},
                                         {"stride", Ints{2, 1}}}),
                     .h = ExplicitAxis(5, 3, 2, 1, 1, 2),
                     .w = ExplicitAxis(5, 3, 1, 1, 0, 1)},
                    44);
}

TEST(KernelConv2DTest, OneByOneWithRelu6) {
  ExpectConvMatches({.x_shape = {1, 4, 5, 6},
                     .w_shape = {5, 1, 1, 6},
                     .attrs = MakeAttrs({{"activation", std::string("relu6")}}),
                     .h = SameAxis(4, 1, 1),
                     .w = SameAxis(5, 1, 1),
                     .range = {0.0f, 6.0f}},
                    45);
}

TEST(KernelConv2DTest, GroupedFilterSeesOnlyItsChannels) {
  // 4 input channels, filters of 2: two groups of three output channels each.
  ExpectConvMatches({.x_shape = {1, 6, 6, 4},
                     .w_shape = {6, 3, 3, 2},
                     .attrs = {},
                     .h = SameAxis(6, 3, 1),
                     .w = SameAxis(6, 3, 1)},
                    46);
  // One channel per filter: four groups of two.
  ExpectConvMatches({.x_shape = {2, 5, 4, 4},
                     .w_shape = {8, 2, 2, 1},
                     .bias = false,
                     .attrs = MakeAttrs({{"stride", Ints{2, 2}}}),
                     .h = SameAxis(5, 2, 2),
                     .w = SameAxis(4, 2, 2)},
                    47);
}

TEST(KernelConv2DTest, HandComputedSamePadding) {
  // 3x3 input 1..9, 3x3 all-ones filter, SAME: each output is the sum of its in-bounds
  // neighbourhood.
  const Tensor x{{1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};
  const Tensor w{{1, 3, 3, 1}, std::vector<float>(9, 1.0f)};
  Net net;
  const std::vector<float> y = net.Run(net.Op("conv2d", {net.Input(x), net.Weight(w)}));
  EXPECT_TRUE(SameFloats(y, {12, 21, 16, 27, 45, 33, 24, 39, 28}));
}

// Depthwise: output channel oc reads input channel oc / multiplier; filter [1, kh, kw, out_c].
Tensor DepthwiseRef(const Tensor& x, const Tensor& w, const std::vector<float>& bias, Axis ah,
                    Axis aw, Range range) {
  const int64_t batches = x.shape[0], in_h = x.shape[1], in_w = x.shape[2], in_c = x.shape[3];
  const int64_t kh = w.shape[1], kw = w.shape[2], out_c = w.shape[3];
  const int64_t multiplier = out_c / in_c;
  Tensor y = Zeros({batches, ah.out, aw.out, out_c});
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t oy = 0; oy < ah.out; ++oy) {
      for (int64_t ox = 0; ox < aw.out; ++ox) {
        for (int64_t oc = 0; oc < out_c; ++oc) {
          float total = 0.0f;
          for (int64_t fy = 0; fy < kh; ++fy) {
            for (int64_t fx = 0; fx < kw; ++fx) {
              const int64_t iy = oy * ah.stride - ah.pad_before + fy * ah.dilation;
              const int64_t ix = ox * aw.stride - aw.pad_before + fx * aw.dilation;
              if (iy < 0 || iy >= in_h || ix < 0 || ix >= in_w) continue;
              total += Get(x, {b, iy, ix, oc / multiplier}) * Get(w, {0, fy, fx, oc});
            }
          }
          const float with_bias = total + (bias.empty() ? 0.0f : bias[static_cast<size_t>(oc)]);
          Put(&y, {b, oy, ox, oc}, Clamp(with_bias, range));
        }
      }
    }
  }
  return y;
}

TEST(KernelDepthwiseConv2DTest, Multiplier2Stride2Same) {
  std::mt19937 rng(50);
  const Tensor x = RandomTensor({2, 7, 7, 3}, &rng);
  const Tensor w = RandomTensor({1, 3, 3, 6}, &rng);
  const Tensor bias = RandomTensor({6}, &rng);
  Net net;
  const ValueId y = net.Op("depthwise_conv2d", {net.Input(x), net.Weight(w), net.Weight(bias)},
                           MakeAttrs({{"stride", Ints{2, 2}}, {"multiplier", int64_t{2}}}));
  const Tensor want = DepthwiseRef(x, w, bias.data, SameAxis(7, 3, 2), SameAxis(7, 3, 2), {});
  EXPECT_EQ(net.ShapeOf(y), (Shape{2, 4, 4, 6}));
  EXPECT_TRUE(SameFloats(net.Run(y), want.data));
}

TEST(KernelDepthwiseConv2DTest, DilatedValidWithReluAndNoBias) {
  std::mt19937 rng(51);
  const Tensor x = RandomTensor({1, 8, 7, 2}, &rng);
  const Tensor w = RandomTensor({1, 2, 3, 2}, &rng);
  Net net;
  const ValueId y = net.Op("depthwise_conv2d", {net.Input(x), net.Weight(w)},
                           MakeAttrs({{"padding", std::string("valid")},
                                      {"dilation", Ints{3, 2}},
                                      {"activation", std::string("relu")}}));
  const Tensor want =
      DepthwiseRef(x, w, {}, ValidAxis(8, 2, 1, 3), ValidAxis(7, 3, 1, 2), {0.0f, kInf});
  EXPECT_EQ(net.ShapeOf(y), want.shape);
  EXPECT_TRUE(SameFloats(net.Run(y), want.data));
}

// Pooling over the in-bounds part of each window; the average divides by that count.
Tensor PoolRef(const Tensor& x, int64_t kh, int64_t kw, Axis ah, Axis aw, bool average) {
  const int64_t batches = x.shape[0], in_h = x.shape[1], in_w = x.shape[2], channels = x.shape[3];
  Tensor y = Zeros({batches, ah.out, aw.out, channels});
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t oy = 0; oy < ah.out; ++oy) {
      for (int64_t ox = 0; ox < aw.out; ++ox) {
        for (int64_t c = 0; c < channels; ++c) {
          float acc = average ? 0.0f : -kInf;
          int64_t count = 0;
          for (int64_t fy = 0; fy < kh; ++fy) {
            for (int64_t fx = 0; fx < kw; ++fx) {
              const int64_t iy = oy * ah.stride - ah.pad_before + fy;
              const int64_t ix = ox * aw.stride - aw.pad_before + fx;
              if (iy < 0 || iy >= in_h || ix < 0 || ix >= in_w) continue;
              const float v = Get(x, {b, iy, ix, c});
              acc = average ? acc + v : std::max(acc, v);
              ++count;
            }
          }
          Put(&y, {b, oy, ox, c}, average ? acc / static_cast<float>(count) : acc);
        }
      }
    }
  }
  return y;
}

TEST(KernelPool2DTest, AvgPoolSameAtEdges) {
  std::mt19937 rng(60);
  const Tensor x = RandomTensor({2, 5, 6, 3}, &rng);
  Net net;
  const ValueId y = net.Op("avg_pool2d", {net.Input(x)},
                           MakeAttrs({{"filter", Ints{3, 3}}, {"stride", Ints{2, 2}}}));
  const Tensor want = PoolRef(x, 3, 3, SameAxis(5, 3, 2), SameAxis(6, 3, 2), true);
  EXPECT_EQ(net.ShapeOf(y), (Shape{2, 3, 3, 3}));
  EXPECT_TRUE(SameFloats(net.Run(y), want.data));
}

TEST(KernelPool2DTest, AvgPoolCountsOnlyInBoundsElements) {
  // Were padding counted, edge windows of an all-ones input would average below 1.
  const Tensor x{{1, 5, 6, 2}, std::vector<float>(60, 1.0f)};
  Net net;
  const std::vector<float> y = net.Run(net.Op(
      "avg_pool2d", {net.Input(x)}, MakeAttrs({{"filter", Ints{3, 3}}, {"stride", Ints{2, 2}}})));
  EXPECT_TRUE(SameFloats(y, std::vector<float>(18, 1.0f)));
}

TEST(KernelPool2DTest, HandComputedTwoByTwoSame) {
  // SAME with a 2x2 window on 3x3 pads one row and column after the input, none before.
  const Tensor x{{1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};
  const Attrs attrs = MakeAttrs({{"filter", Ints{2, 2}}});
  Net avg;
  EXPECT_TRUE(SameFloats(avg.Run(avg.Op("avg_pool2d", {avg.Input(x)}, attrs)),
                         {3, 4, 4.5f, 6, 7, 7.5f, 7.5f, 8.5f, 9}));
  Net max;
  EXPECT_TRUE(SameFloats(max.Run(max.Op("max_pool2d", {max.Input(x)}, attrs)),
                         {5, 6, 6, 8, 9, 9, 8, 9, 9}));
}

TEST(KernelPool2DTest, MaxPoolSameIgnoresPadding) {
  // All inputs negative: a padded zero taking part in the max would show up as 0.
  std::mt19937 rng(61);
  const Tensor x = RandomTensor({1, 5, 6, 3}, &rng, -5.0f, -1.0f);
  Net net;
  const ValueId y = net.Op("max_pool2d", {net.Input(x)},
                           MakeAttrs({{"filter", Ints{3, 3}}, {"stride", Ints{2, 2}}}));
  const Tensor want = PoolRef(x, 3, 3, SameAxis(5, 3, 2), SameAxis(6, 3, 2), false);
  const std::vector<float> got = net.Run(y);
  EXPECT_TRUE(SameFloats(got, want.data));
  for (float v : got) EXPECT_LT(v, 0.0f);
}

TEST(KernelPool2DTest, FusedActivationOnPool) {
  std::mt19937 rng(62);
  const Tensor x = RandomTensor({1, 4, 4, 2}, &rng, -8.0f, 8.0f);
  Net net;
  const ValueId y = net.Op("max_pool2d", {net.Input(x)},
                           MakeAttrs({{"filter", Ints{2, 2}},
                                      {"stride", Ints{2, 2}},
                                      {"padding", std::string("valid")},
                                      {"activation", std::string("relu_n1_to_1")}}));
  Tensor want = PoolRef(x, 2, 2, ValidAxis(4, 2, 2), ValidAxis(4, 2, 2), false);
  for (float& v : want.data) v = Clamp(v, {-1.0f, 1.0f});
  EXPECT_TRUE(SameFloats(net.Run(y), want.data));
}

// ---------------------------------------------------------------------------------------------
// mean and softmax.

TEST(KernelMeanTest, FourDimKeepDimsOverHeightAndWidth) {
  std::mt19937 rng(70);
  const Tensor x = RandomTensor({2, 3, 4, 5}, &rng);
  Tensor want = Zeros({2, 1, 1, 5});
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t c = 0; c < 5; ++c) {
      float sum = 0.0f;
      for (int64_t h = 0; h < 3; ++h) {
        for (int64_t w = 0; w < 4; ++w) sum += Get(x, {b, h, w, c});
      }
      Put(&want, {b, 0, 0, c}, sum / 12.0f);
    }
  }
  for (const Ints& axes : {Ints{1, 2}, Ints{2, 1}, Ints{-3, -2}}) {
    SCOPED_TRACE(AttrValueString(axes));
    Net net;
    const ValueId y =
        net.Op("mean", {net.Input(x)}, MakeAttrs({{"axes", axes}, {"keepdims", int64_t{1}}}));
    EXPECT_EQ(net.ShapeOf(y), want.shape);
    EXPECT_TRUE(SameFloats(net.Run(y), want.data));
  }
  // Without keepdims the general path runs; it sums in the same (h, w) order.
  Net net;
  const ValueId y = net.Op("mean", {net.Input(x)}, MakeAttrs({{"axes", Ints{1, 2}}}));
  EXPECT_EQ(net.ShapeOf(y), (Shape{2, 5}));
  EXPECT_TRUE(SameFloats(net.Run(y), want.data));
}

TEST(KernelMeanTest, GeneralAxes) {
  std::mt19937 rng(71);
  const Tensor x = RandomTensor({3, 4}, &rng);
  std::vector<float> columns;
  for (int64_t j = 0; j < 4; ++j) {
    float sum = 0.0f;
    for (int64_t i = 0; i < 3; ++i) sum += Get(x, {i, j});
    columns.push_back(sum / 3.0f);
  }
  Net net;
  const ValueId y = net.Op("mean", {net.Input(x)}, MakeAttrs({{"axes", Ints{0}}}));
  EXPECT_EQ(net.ShapeOf(y), (Shape{4}));
  EXPECT_TRUE(SameFloats(net.Run(y), columns));

  // Two non-adjacent axes of a 3-D tensor: contributions arrive in input row-major order.
  const Tensor z = RandomTensor({2, 3, 4}, &rng);
  std::vector<float> middle;
  for (int64_t j = 0; j < 3; ++j) {
    float sum = 0.0f;
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t k = 0; k < 4; ++k) sum += Get(z, {i, j, k});
    }
    middle.push_back(sum / 8.0f);
  }
  Net net2;
  const ValueId y2 = net2.Op("mean", {net2.Input(z)},
                             MakeAttrs({{"axes", Ints{-1, 0}}, {"keepdims", int64_t{1}}}));
  EXPECT_EQ(net2.ShapeOf(y2), (Shape{1, 3, 1}));
  EXPECT_TRUE(SameFloats(net2.Run(y2), middle));
}

std::vector<float> SoftmaxRef(const Tensor& x, float beta) {
  const int64_t depth = x.shape.back();
  const int64_t rows = NumElements(x.shape) / depth;
  std::vector<float> y(x.data.size());
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x.data.data() + r * depth;
    float* out = y.data() + r * depth;
    const float max = *std::max_element(row, row + depth);
    float sum = 0.0f;
    for (int64_t c = 0; c < depth; ++c) {
      out[c] = std::exp((row[c] - max) * beta);
      sum += out[c];
    }
    for (int64_t c = 0; c < depth; ++c) out[c] /= sum;
  }
  return y;
}

TEST(KernelSoftmaxTest, RowsSumToOneForEachBeta) {
  std::mt19937 rng(80);
  const Tensor x = RandomTensor({2, 3, 7}, &rng, -5.0f, 5.0f);
  for (double beta : {1.0, 0.5, 2.0}) {
    SCOPED_TRACE("beta=" + std::to_string(beta));
    Net net;
    const ValueId y = net.Op("softmax", {net.Input(x)}, MakeAttrs({{"beta", beta}}));
    const std::vector<float> got = net.Run(y);
    EXPECT_TRUE(SameFloats(got, SoftmaxRef(x, static_cast<float>(beta))));
    ASSERT_EQ(got.size(), 42u);
    std::vector<double> exact;
    for (size_t r = 0; r < 6; ++r) {
      double total = 0.0, got_total = 0.0;
      for (size_t c = 0; c < 7; ++c) total += std::exp(beta * x.data[r * 7 + c]);
      for (size_t c = 0; c < 7; ++c) {
        exact.push_back(std::exp(beta * x.data[r * 7 + c]) / total);
        got_total += got[r * 7 + c];
      }
      EXPECT_NEAR(got_total, 1.0, 1e-6) << "row " << r;
    }
    EXPECT_TRUE(NearFloats(got, exact, 1e-6));
  }
}

TEST(KernelSoftmaxTest, LargeInputsStayFinite) {
  // Subtracting the row max keeps exp from overflowing.
  const Tensor x{{1, 3}, {1000.0f, 1001.0f, 999.0f}};
  Net net;
  const std::vector<float> y = net.Run(net.Op("softmax", {net.Input(x)}));
  ASSERT_EQ(y.size(), 3u);
  EXPECT_TRUE(SameFloats(y, SoftmaxRef(x, 1.0f)));
  const double sum = 1.0 + std::exp(1.0) + std::exp(-1.0);
  EXPECT_NEAR(y[0], 1.0 / sum, 1e-6);
  EXPECT_NEAR(y[1], std::exp(1.0) / sum, 1e-6);
  EXPECT_NEAR(y[2], std::exp(-1.0) / sum, 1e-6);
}

// ---------------------------------------------------------------------------------------------
// Data movement.

Tensor ConcatRef(const std::vector<Tensor>& parts, size_t axis) {
  Tensor y;
  y.shape = parts[0].shape;
  y.shape[axis] = 0;
  for (const Tensor& p : parts) y.shape[axis] += p.shape[axis];
  const int64_t n = NumElements(y.shape);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int64_t> coord = Unravel(y.shape, i);
    size_t k = 0;
    while (coord[axis] >= parts[k].shape[axis]) coord[axis] -= parts[k++].shape[axis];
    y.data.push_back(parts[k].data[static_cast<size_t>(Ravel(parts[k].shape, coord))]);
  }
  return y;
}

TEST(KernelConcatTest, ThreeInputsAlongEachAxis) {
  const std::vector<std::pair<int64_t, size_t>> axes = {{0, 0}, {1, 1}, {-1, 2}};
  for (const auto& [axis, normalised] : axes) {
    SCOPED_TRACE("axis=" + std::to_string(axis));
    std::vector<Tensor> parts;
    for (int64_t k = 0; k < 3; ++k) {
      Shape shape = {2, 3, 4};
      shape[normalised] = k + 1;  // unequal extents along the axis
      Tensor t = Zeros(shape);
      // Distinct values that name their source: 100 * input + position.
      for (size_t i = 0; i < t.data.size(); ++i)
        t.data[i] = static_cast<float>(100 * k) + static_cast<float>(i);
      parts.push_back(std::move(t));
    }
    Net net;
    const ValueId y =
        net.Op("concat", {net.Input(parts[0]), net.Input(parts[1]), net.Input(parts[2])},
               MakeAttrs({{"axis", axis}}));
    const Tensor want = ConcatRef(parts, normalised);
    EXPECT_EQ(net.ShapeOf(y), want.shape);
    EXPECT_TRUE(SameFloats(net.Run(y), want.data));
  }
}

TEST(KernelSliceTest, BeginAndSizeWithMinusOne) {
  std::mt19937 rng(90);
  const Tensor x = RandomTensor({3, 4, 5}, &rng);
  Net net;
  const ValueId y = net.Op("slice", {net.Input(x)},
                           MakeAttrs({{"begin", Ints{1, 0, 2}}, {"size", Ints{2, -1, 3}}}));
  std::vector<float> want;
  for (int64_t i = 1; i < 3; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      for (int64_t k = 2; k < 5; ++k) want.push_back(Get(x, {i, j, k}));
    }
  }
  EXPECT_EQ(net.ShapeOf(y), (Shape{2, 4, 3}));
  EXPECT_TRUE(SameFloats(net.Run(y), want));
}

TEST(KernelTransposeTest, ThreeDimPermutations) {
  std::mt19937 rng(91);
  const Tensor x = RandomTensor({2, 3, 4}, &rng);
  for (const Ints& perm : {Ints{2, 0, 1}, Ints{1, 0, 2}, Ints{0, 2, 1}, Ints{0, 1, 2}}) {
    SCOPED_TRACE(AttrValueString(perm));
    Shape out_shape;
    for (int64_t p : perm) out_shape.push_back(x.shape[static_cast<size_t>(p)]);
    std::vector<float> want;
    for (int64_t i = 0; i < NumElements(out_shape); ++i) {
      // Output dim d is input dim perm[d].
      const std::vector<int64_t> out_coord = Unravel(out_shape, i);
      std::vector<int64_t> in_coord(3);
      for (size_t d = 0; d < 3; ++d) in_coord[static_cast<size_t>(perm[d])] = out_coord[d];
      want.push_back(x.data[static_cast<size_t>(Ravel(x.shape, in_coord))]);
    }
    Net net;
    const ValueId y = net.Op("transpose", {net.Input(x)}, MakeAttrs({{"perm", perm}}));
    EXPECT_EQ(net.ShapeOf(y), out_shape);
    EXPECT_TRUE(SameFloats(net.Run(y), want));
  }
}

// REVERSE_V2 along one axis, two and none, float and int16; axes repeated or out of range are
// an error at build time.
TEST(KernelReverseTest, MirrorsTheGivenAxes) {
  const Tensor x{{2, 3}, {1, 2, 3, 4, 5, 6}};
  const std::vector<std::pair<Ints, std::vector<float>>> cases = {{{1}, {3, 2, 1, 6, 5, 4}},
                                                                  {{0}, {4, 5, 6, 1, 2, 3}},
                                                                  {{0, 1}, {6, 5, 4, 3, 2, 1}},
                                                                  {{}, {1, 2, 3, 4, 5, 6}}};
  for (const auto& [axes, want] : cases) {
    SCOPED_TRACE(AttrValueString(axes));
    Net net;
    const ValueId y = net.Op("reverse", {net.Input(x)}, MakeAttrs({{"axes", axes}}));
    EXPECT_EQ(net.ShapeOf(y), x.shape);
    EXPECT_TRUE(SameFloats(net.Run(y), want));
  }
  Net net;
  const ValueId y =
      net.Op("reverse", {net.Input({3}, DType::kI16, ToBytes(std::vector<int16_t>{7, -8, 30000}))},
             MakeAttrs({{"axes", Ints{0}}}));
  EXPECT_EQ(FromBytes<int16_t>(net.RunBytes(y)), (std::vector<int16_t>{30000, -8, 7}));
  for (const Ints& bad : {Ints{2}, Ints{1, 1}, Ints{-1}}) {
    Graph g;
    Value v;
    v.shape = {2, 3};
    const ValueId in = g.AddValue(std::move(v));
    EXPECT_FALSE(AddOp(&g, "reverse", {in}, MakeAttrs({{"axes", bad}})).ok());
  }
}

TEST(KernelPadTest, FillsWithValue) {
  const Tensor x{{2, 3}, {1, 2, 3, 4, 5, 6}};
  Net net;
  const ValueId y =
      net.Op("pad", {net.Input(x)}, MakeAttrs({{"paddings", Ints{1, 0, 2, 1}}, {"value", 1.5}}));
  EXPECT_EQ(net.ShapeOf(y), (Shape{3, 6}));
  const float p = 1.5f;
  EXPECT_TRUE(SameFloats(net.Run(y), {p, p, p, p, p, p,  //
                                      p, p, 1, 2, 3, p,  //
                                      p, p, 4, 5, 6, p}));
}

TEST(KernelPadTest, ThreeDimDefaultZero) {
  std::mt19937 rng(92);
  const Tensor x = RandomTensor({2, 2, 3}, &rng, 1.0f, 2.0f);
  Net net;
  const ValueId y =
      net.Op("pad", {net.Input(x)}, MakeAttrs({{"paddings", Ints{0, 1, 2, 0, 1, 1}}}));
  Tensor want = Zeros({3, 4, 5});
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 2; ++j) {
      for (int64_t k = 0; k < 3; ++k) Put(&want, {i, j + 2, k + 1}, Get(x, {i, j, k}));
    }
  }
  EXPECT_EQ(net.ShapeOf(y), want.shape);
  EXPECT_TRUE(SameFloats(net.Run(y), want.data));
}

TEST(KernelReshapeTest, AliasKeepsBytes) {
  std::mt19937 rng(93);
  const Tensor x = RandomTensor({2, 3, 4}, &rng);
  Net net;
  const ValueId y = net.Op("reshape", {net.Input(x)}, MakeAttrs({{"shape", Ints{4, -1}}}));
  EXPECT_EQ(net.ShapeOf(y), (Shape{4, 6}));
  EXPECT_EQ(net.RunBytes(y), ToBytes(x.data));
}

TEST(KernelReshapeTest, ConsumerReadsThroughAlias) {
  std::mt19937 rng(94);
  const Tensor x = RandomTensor({2, 6}, &rng);
  Net net;
  const ValueId r = net.Op("reshape", {net.Input(x)}, MakeAttrs({{"shape", Ints{3, 4}}}));
  const std::vector<float> y = net.Run(net.Op("neg", {r}));
  std::vector<float> want;
  for (float v : x.data) want.push_back(-v);
  EXPECT_TRUE(SameFloats(y, want));
}

TEST(KernelMoveTest, NonFloatElementWidths) {
  {  // int8 pad: the float "value" attribute converts to the element type.
    Net net;
    const ValueId y =
        net.Op("pad", {net.Input({2, 2}, DType::kI8, ToBytes(std::vector<int8_t>{1, 2, 3, 4}))},
               MakeAttrs({{"paddings", Ints{1, 1, 0, 1}}, {"value", -3.0}}));
    EXPECT_EQ(FromBytes<int8_t>(net.RunBytes(y)),
              (std::vector<int8_t>{-3, -3, -3, 1, 2, -3, 3, 4, -3, -3, -3, -3}));
  }
  {  // int16 transpose
    Net net;
    const ValueId y = net.Op(
        "transpose",
        {net.Input({2, 3}, DType::kI16, ToBytes(std::vector<int16_t>{1, 2, 3, 4, 5, 30000}))},
        MakeAttrs({{"perm", Ints{1, 0}}}));
    EXPECT_EQ(FromBytes<int16_t>(net.RunBytes(y)), (std::vector<int16_t>{1, 4, 2, 5, 3, 30000}));
  }
  {  // int64 concat along the last axis
    Net net;
    const ValueId a = net.Input({2, 1}, DType::kI64, ToBytes(std::vector<int64_t>{1, 2}));
    const ValueId b =
        net.Input({2, 2}, DType::kI64, ToBytes(std::vector<int64_t>{int64_t{1} << 40, 4, 5, 6}));
    const ValueId y = net.Op("concat", {a, b}, MakeAttrs({{"axis", int64_t{-1}}}));
    EXPECT_EQ(FromBytes<int64_t>(net.RunBytes(y)),
              (std::vector<int64_t>{1, int64_t{1} << 40, 4, 2, 5, 6}));
  }
  {  // uint8 slice
    Net net;
    const ValueId y = net.Op(
        "slice", {net.Input({5}, DType::kU8, ToBytes(std::vector<uint8_t>{9, 8, 7, 250, 5}))},
        MakeAttrs({{"begin", Ints{2}}, {"size", Ints{-1}}}));
    EXPECT_EQ(FromBytes<uint8_t>(net.RunBytes(y)), (std::vector<uint8_t>{7, 250, 5}));
  }
}

// ---------------------------------------------------------------------------------------------
// Kernels called directly, without the executor.

// Runs the registered float kernel of `op` on caller-owned buffers.
void RunKernel(std::string_view op, const Attrs& attrs, std::vector<const Value*> in_values,
               std::vector<float*> in_data, const Value& out_value, float* out_data) {
  const OpDef* def = FindOp(op);
  ASSERT_NE(def, nullptr) << op;
  const KernelFn kernel = def->FindKernel(DType::kF32);
  ASSERT_NE(kernel, nullptr) << op;
  Node node;
  node.op = std::string(op);
  node.name = "direct";
  node.attrs = attrs;
  // Kernels never read input ids, but the arity check counts them.
  node.inputs.assign(in_values.size(), 0);
  const Status filled = CheckAndFillAttrs(*def, &node);
  ASSERT_TRUE(filled.ok()) << filled.message();
  std::vector<TensorArg> inputs;
  for (size_t k = 0; k < in_values.size(); ++k) {
    inputs.push_back(TensorArgOf(*in_values[k], reinterpret_cast<std::byte*>(in_data[k])));
  }
  std::vector<TensorArg> outputs = {TensorArgOf(out_value, reinterpret_cast<std::byte*>(out_data))};
  kernel(KernelArgsFor(node, std::move(inputs), std::move(outputs)).Context());
}

Value F32Value(Shape shape) {
  Value v;
  v.name = "v";
  v.shape = std::move(shape);
  return v;
}

TEST(KernelDirectTest, FloatKernelsOnlyForFloat) {
  EXPECT_NE(FindOp("relu")->FindKernel(DType::kF32), nullptr);
  EXPECT_EQ(FindOp("gelu")->FindKernel(DType::kI8), nullptr);
  EXPECT_EQ(FindOp("reshape")->FindKernel(DType::kF32), nullptr);  // alias: nothing to run
  EXPECT_NE(FindOp("concat")->FindKernel(DType::kBool), nullptr);
  EXPECT_EQ(FindOp("no_such_op"), nullptr);
}

TEST(KernelDirectTest, UnaryAndBinaryRunInPlace) {
  // The table lets output 0 reuse input 0's buffer, which is only sound if each element is read
  // before it is overwritten.
  std::mt19937 rng(100);
  const Tensor x = RandomTensor({3, 8}, &rng, -10.0f, 10.0f);
  const Value value = F32Value(x.shape);
  for (const UnaryCase& c : kUnaryCases) {
    SCOPED_TRACE(c.op);
    std::vector<float> separate(x.data.size(), std::nanf("")), shared = x.data;
    std::vector<float> source = x.data;
    RunKernel(c.op, {}, {&value}, {source.data()}, value, separate.data());
    RunKernel(c.op, {}, {&value}, {shared.data()}, value, shared.data());
    EXPECT_TRUE(SameFloats(shared, separate));
  }
  const Tensor b = RandomTensor({8}, &rng, 0.5f, 2.0f);
  const Value b_value = F32Value(b.shape);
  for (const BinaryOp& op : kBinaryOps) {
    SCOPED_TRACE(op.name);
    std::vector<float> a_copy = x.data, b_copy = b.data, shared = x.data;
    std::vector<float> separate(x.data.size(), std::nanf(""));
    RunKernel(op.name, {}, {&value, &b_value}, {a_copy.data(), b_copy.data()}, value,
              separate.data());
    RunKernel(op.name, {}, {&value, &b_value}, {shared.data(), b_copy.data()}, value,
              shared.data());
    EXPECT_TRUE(SameFloats(shared, separate));
    EXPECT_TRUE(SameFloats(separate, BroadcastRef(x, b, op.f, {}).data));
  }
}

}  // namespace
}  // namespace memfold
