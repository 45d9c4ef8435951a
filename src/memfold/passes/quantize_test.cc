#include "memfold/passes/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "memfold/exec/executor.h"
#include "memfold/ops/builder.h"
#include "memfold/ops/kernel_args.h"
#include "memfold/ops/kernels/quant_math.h"

namespace memfold {
namespace {

Bytes Floats(const std::vector<float>& values) {
  Bytes bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

template <typename T>
T At(const Value& v, int64_t k) {
  T x;
  std::memcpy(&x, v.data->data() + k * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return x;
}

const Node& NodeNamed(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes()) {
    if (n.name == name) return n;
  }
  ADD_FAILURE() << "no node " << name;
  return g.nodes().front();
}

// TFLite's asymmetric int8 parameters, worked by hand: scale = (max - min) / 255 after the
// range is widened to contain 0, zero point = round(-128 - min / scale).
TEST(Quantize, ActivationQuantizationFollowsTflite) {
  // [-0.5, 2.05]: scale 2.55 / 255 = 0.01, zero point -128 + 50 = -78.
  Quantization q = ActivationQuantization({-0.5f, 2.05f});
  EXPECT_FLOAT_EQ(q.scale[0], 0.01f);
  EXPECT_EQ(q.zero_point[0], -78);
  // [2, 5] is widened to [0, 5]: 0 is the lowest level.
  q = ActivationQuantization({2.0f, 5.0f});
  EXPECT_FLOAT_EQ(q.scale[0], 5.0f / 255.0f);
  EXPECT_EQ(q.zero_point[0], -128);
  // [-3, -1] is widened to [-3, 0]: 0 is the highest level.
  q = ActivationQuantization({-3.0f, -1.0f});
  EXPECT_FLOAT_EQ(q.scale[0], 3.0f / 255.0f);
  EXPECT_EQ(q.zero_point[0], 127);
  // A value that was always 0 still gets a usable (positive) scale.
  q = ActivationQuantization({0.0f, 0.0f});
  EXPECT_GT(q.scale[0], 0.0f);
  EXPECT_GE(q.zero_point[0], -128);
  EXPECT_LE(q.zero_point[0], 127);
}

// input [1, 2, 2, 1] -> conv 1x1 to 2 channels (+bias, relu) -> max pool 2x2 -> concat with
// itself -> reshape [1, 4] -> softmax.
Graph SmallGraph() {
  GraphBuilder b("small");
  ValueId x = b.Input("x", {1, 2, 2, 1});
  const ValueId w = b.Constant("w", {2, 1, 1, 1}, {0.5f, -0.25f}, Role::kWeight);
  const ValueId bias = b.Constant("bias", {2}, {0.1f, 0.2f}, Role::kWeight);
  x = b.Op("conv2d", {x, w, bias}, ConvAttrs(1, "relu"), "conv");
  x = b.Op("max_pool2d", {x}, PoolAttrs(2, 2, 2, "valid"), "pool");
  Attrs concat;
  concat.Set("axis", int64_t{3});
  x = b.Op("concat", {x, x}, concat, "concat");
  Attrs reshape;
  reshape.Set("shape", std::vector<int64_t>{1, 4});
  x = b.Op("reshape", {x}, reshape, "flat");
  Result<Graph> g = b.Finish({b.Op("softmax", {x}, {}, "softmax")});
  EXPECT_TRUE(g.ok()) << g.status().message();
  return std::move(g).value();
}

TEST(Quantize, CalibrationRecordsEveryValuesRange) {
  const Graph g = SmallGraph();
  Result<Calibration> c =
      Calibrate(g, {{Floats({1.0f, -2.0f, 3.0f, 0.5f})}, {Floats({-4.0f, 0, 0, 0})}});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ((*c)[static_cast<size_t>(g.inputs[0])].min, -4.0f);
  EXPECT_EQ((*c)[static_cast<size_t>(g.inputs[0])].max, 3.0f);
  // conv channel 0 = relu(0.5 x + 0.1): at most 1.6; channel 1 = relu(-0.25 x + 0.2): at most
  // 1.2 (x = -4); both at least 0.
  const ValueRange conv = (*c)[static_cast<size_t>(NodeNamed(g, "conv").outputs[0])];
  EXPECT_EQ(conv.min, 0.0f);
  EXPECT_FLOAT_EQ(conv.max, 1.6f);
}

TEST(Quantize, WeightsBiasesAndSharedScalesFollowTflite) {
  const Graph g = SmallGraph();
  Result<Calibration> c = Calibrate(g, {{Floats({1.0f, -2.0f, 3.0f, 0.5f})}});
  ASSERT_TRUE(c.ok());
  Result<Graph> q = QuantizeInt8(g, *c);
  ASSERT_TRUE(q.ok()) << q.status().message();
  // Input [-2, 3]: scale 5 / 255, zero point round(-128 + 2 / (5 / 255)) = -26.
  const Value& x = q->value(q->inputs[0]);
  EXPECT_EQ(x.dtype, DType::kI8);
  EXPECT_FLOAT_EQ(Scale(x), 5.0f / 255.0f);
  EXPECT_EQ(ZeroPoint(x), -26);
  // Filter per output channel: scales 0.5 / 127 and 0.25 / 127, both values at +-127.
  const Node& conv = NodeNamed(*q, "conv");
  const Value& w = q->value(conv.inputs[1]);
  ASSERT_TRUE(w.quant.has_value());
  EXPECT_EQ(w.quant->axis, 0);
  EXPECT_FLOAT_EQ(w.quant->scale[0], 0.5f / 127.0f);
  EXPECT_FLOAT_EQ(w.quant->scale[1], 0.25f / 127.0f);
  EXPECT_EQ(At<int8_t>(w, 0), 127);
  EXPECT_EQ(At<int8_t>(w, 1), -127);
  // Bias in int32 at scale input x filter: 0.1 / (5/255 x 0.5/127) = 1295.4 -> 1295.
  const Value& bias = q->value(conv.inputs[2]);
  EXPECT_EQ(bias.dtype, DType::kI32);
  EXPECT_FLOAT_EQ(bias.quant->scale[0], Scale(x) * w.quant->scale[0]);
  EXPECT_EQ(At<int32_t>(bias, 0), 1295);
  // 0.2 / (5/255 x 0.25/127) = 5181.6 -> 5182.
  EXPECT_EQ(At<int32_t>(bias, 1), 5182);
  // Pool, concat and reshape share the conv output's quantisation; softmax is fixed.
  const Value& conv_out = q->value(conv.outputs[0]);
  for (const char* name : {"pool", "concat", "flat"}) {
    const Value& v = q->value(NodeNamed(*q, name).outputs[0]);
    EXPECT_EQ(Scale(v), Scale(conv_out)) << name;
    EXPECT_EQ(ZeroPoint(v), ZeroPoint(conv_out)) << name;
  }
  const Value& softmax = q->value(q->outputs[0]);
  EXPECT_EQ(Scale(softmax), 1.0f / 256.0f);
  EXPECT_EQ(ZeroPoint(softmax), -128);
  EXPECT_EQ(q->value(q->outputs[0]).role, Role::kOutput);
}

TEST(Quantize, SameScaleGroupsTakeTheUnionOfTheirRanges) {
  // Two convolutions with different ranges joined by a concat: both outputs and the concat get
  // the union range, so the concat copies bytes that mean the same reals.
  GraphBuilder b("join");
  const ValueId x = b.Input("x", {1, 1, 1, 1});
  const ValueId a = b.Op("conv2d", {x, b.Constant("wa", {1, 1, 1, 1}, {1.0f}, Role::kWeight)},
                         ConvAttrs(1, "none"), "a");
  const ValueId c = b.Op("conv2d", {x, b.Constant("wc", {1, 1, 1, 1}, {-3.0f}, Role::kWeight)},
                         ConvAttrs(1, "none"), "c");
  Attrs concat;
  concat.Set("axis", int64_t{3});
  Result<Graph> g = b.Finish({b.Op("concat", {a, c}, concat, "join")});
  ASSERT_TRUE(g.ok());
  Result<Calibration> cal = Calibrate(*g, {{Floats({1.0f})}, {Floats({-1.0f})}});
  ASSERT_TRUE(cal.ok());
  Result<Graph> q = QuantizeInt8(*g, *cal);
  ASSERT_TRUE(q.ok()) << q.status().message();
  // a in [-1, 1], c in [-3, 3]: the group is [-3, 3], scale 6 / 255.
  for (const char* name : {"a", "c", "join"}) {
    EXPECT_FLOAT_EQ(Scale(q->value(NodeNamed(*q, name).outputs[0])), 6.0f / 255.0f) << name;
  }
}

TEST(Quantize, ConstantOperandsOfMulAreAsymmetricInt8) {
  GraphBuilder b("scale");
  const ValueId x = b.Input("x", {1, 2});
  const ValueId c = b.Constant("c", {2}, {0.5f, 2.0f}, Role::kWeight);
  Result<Graph> g = b.Finish({b.Op("mul", {x, c}, {}, "scaled")});
  ASSERT_TRUE(g.ok());
  Result<Calibration> cal = Calibrate(*g, {{Floats({1.0f, -1.0f})}});
  ASSERT_TRUE(cal.ok());
  Result<Graph> q = QuantizeInt8(*g, *cal);
  ASSERT_TRUE(q.ok()) << q.status().message();
  // [0.5, 2] widened to [0, 2]: scale 2 / 255, zero point -128; 0.5 -> round(63.75) - 128 = -64
  // and 2 -> 255 - 128 = 127.
  const Value& constant = q->value(NodeNamed(*q, "scaled").inputs[1]);
  EXPECT_EQ(constant.dtype, DType::kI8);
  EXPECT_FLOAT_EQ(Scale(constant), 2.0f / 255.0f);
  EXPECT_EQ(ZeroPoint(constant), -128);
  EXPECT_EQ(At<int8_t>(constant, 0), -64);
  EXPECT_EQ(At<int8_t>(constant, 1), 127);
}

TEST(Quantize, QuantizedGraphRunsAndApproximatesTheFloatOne) {
  const Graph g = SmallGraph();
  const Bytes input = Floats({1.0f, -2.0f, 3.0f, 0.5f});
  Result<Calibration> c = Calibrate(g, {{input}});
  ASSERT_TRUE(c.ok());
  Result<Graph> q = QuantizeInt8(g, *c);
  ASSERT_TRUE(q.ok());
  // The float input on the int8 grid: round(x / scale) + zero point.
  const Value& qx = q->value(q->inputs[0]);
  Bytes q_input(4);
  for (int k = 0; k < 4; ++k) {
    float x;
    std::memcpy(&x, input.data() + 4 * k, 4);
    q_input[static_cast<size_t>(k)] =
        static_cast<std::byte>(static_cast<int8_t>(std::lround(x / Scale(qx)) + ZeroPoint(qx)));
  }
  Result<RunOutputs> f = RunUnplanned(g, {input});
  Result<RunOutputs> i8 = RunUnplanned(*q, {q_input});
  ASSERT_TRUE(f.ok() && i8.ok()) << i8.status().message();
  for (int k = 0; k < 4; ++k) {
    float p;
    std::memcpy(&p, f->outputs[0].data() + 4 * k, 4);
    const double p8 = (static_cast<int8_t>(i8->outputs[0][static_cast<size_t>(k)]) + 128) / 256.0;
    EXPECT_NEAR(p8, p, 2.0 / 256.0) << k;
  }
}

TEST(Quantize, ErrorsNameTheNodeAndTheFix) {
  GraphBuilder b("bad");
  ValueId x = b.Input("x", {1, 4});
  x = b.Op("tanh", {x}, {}, "squash");
  Result<Graph> g = b.Finish({x});
  ASSERT_TRUE(g.ok());
  Result<Graph> q = QuantizePostTraining(*g);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("node 'squash' (tanh) has no int8 form"), std::string::npos)
      << q.status().message();

  GraphBuilder b2("int");
  ValueId y = b2.Input("y", {1, 4}, DType::kI8);
  Result<Graph> g2 = b2.Finish({b2.Op("softmax", {y}, {}, "s")});
  ASSERT_TRUE(g2.ok());
  q = QuantizePostTraining(*g2);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("takes a float32 model"), std::string::npos)
      << q.status().message();

  // Calibration that turns a value infinite is refused.
  GraphBuilder b3("huge");
  ValueId z = b3.Input("z", {1, 1});
  Attrs none;
  z = b3.Op("fully_connected", {z, b3.Constant("w", {1, 1}, {3e38f}, Role::kWeight)}, none, "fc");
  Result<Graph> g3 = b3.Finish({z});
  ASSERT_TRUE(g3.ok());
  Result<Calibration> c = Calibrate(*g3, {{Floats({10.0f})}});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("value 'fc' became NaN or infinite"), std::string::npos)
      << c.status().message();
}

}  // namespace
}  // namespace memfold
