// Shape and type inference through the registry (AddOp), the way importers build graphs: output
// shapes for each op, and for each kind of bad input a non-ok Status whose message names the
// problem, since that message is all a user sees when a model is rejected.

#include "memfold/ops/infer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memfold/ir/graph.h"
#include "memfold/ops/registry.h"

namespace memfold {
namespace {

using Ints = std::vector<int64_t>;

::testing::AssertionResult Mentions(const std::string& message, std::string_view part) {
  if (message.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "message \"" << message << "\" lacks \"" << part << "\"";
}

class InferTest : public ::testing::Test {
 protected:
  // A graph input of the given shape; inference only looks at its type.
  ValueId Tensor(Shape dims, DType dtype = DType::kF32) {
    Value v;
    v.name = "t" + std::to_string(graph_.num_values());
    v.dtype = dtype;
    v.shape = std::move(dims);
    v.role = Role::kInput;
    return graph_.AddValue(std::move(v));
  }

  // The inferred type of the op's first output; a test failure and {-1} if it was rejected.
  TensorType TypeOf(std::string_view op, std::vector<ValueId> inputs, Attrs attrs = {}) {
    Result<std::vector<ValueId>> out = AddOp(&graph_, op, std::move(inputs), std::move(attrs));
    if (!out.ok()) {
      ADD_FAILURE() << out.status().message();
      return {DType::kF32, {-1}};
    }
    const Value& v = graph_.value(out->front());
    return {v.dtype, v.shape};
  }
  Shape ShapeOf(std::string_view op, std::vector<ValueId> inputs, Attrs attrs = {}) {
    return TypeOf(op, std::move(inputs), std::move(attrs)).shape;
  }

  // The rejection message; a test failure if the op was accepted. A rejected node must leave
  // the graph unchanged.
  std::string ErrorOf(std::string_view op, std::vector<ValueId> inputs, Attrs attrs = {},
                      std::string name = "") {
    const int32_t values = graph_.num_values(), nodes = graph_.num_nodes();
    Result<std::vector<ValueId>> out =
        AddOp(&graph_, op, std::move(inputs), std::move(attrs), std::move(name));
    if (out.ok()) {
      ADD_FAILURE() << op << " was accepted with output "
                    << ShapeString(graph_.value(out->front()).shape);
      return "";
    }
    EXPECT_EQ(graph_.num_values(), values);
    EXPECT_EQ(graph_.num_nodes(), nodes);
    EXPECT_FALSE(out.status().message().empty());
    return out.status().message();
  }

  Graph graph_;
};

// ---------------------------------------------------------------------------------------------
// Output shapes.

TEST_F(InferTest, UnaryKeepsTypeAndShape) {
  const TensorType t = TypeOf("tanh", {Tensor({2, 3, 5})});
  EXPECT_EQ(t.shape, (Shape{2, 3, 5}));
  EXPECT_EQ(t.dtype, DType::kF32);
  EXPECT_EQ(ShapeOf("relu", {Tensor({})}), Shape{});
}

TEST_F(InferTest, BinaryBroadcasts) {
  EXPECT_EQ(ShapeOf("add", {Tensor({2, 3, 4}), Tensor({4})}), (Shape{2, 3, 4}));
  EXPECT_EQ(ShapeOf("sub", {Tensor({3, 1}), Tensor({1, 4})}), (Shape{3, 4}));
  EXPECT_EQ(ShapeOf("mul", {Tensor({1}), Tensor({2, 3})}), (Shape{2, 3}));
  EXPECT_EQ(ShapeOf("div", {Tensor({2, 1, 3}), Tensor({4, 1})}), (Shape{2, 4, 3}));
  EXPECT_EQ(ShapeOf("max", {Tensor({}), Tensor({5})}), (Shape{5}));
  EXPECT_EQ(ShapeOf("min", {Tensor({0, 3}), Tensor({1, 3})}), (Shape{0, 3}));
}

TEST_F(InferTest, ConvSameStride2Halves224) {
  const ValueId x = Tensor({1, 224, 224, 3});
  const ValueId w = Tensor({32, 3, 3, 3});
  const ValueId b = Tensor({32});
  EXPECT_EQ(ShapeOf("conv2d", {x, w, b}, Attrs({{"stride", Ints{2, 2}}})),
            (Shape{1, 112, 112, 32}));
  // Odd sizes round up under SAME.
  EXPECT_EQ(ShapeOf("conv2d", {Tensor({1, 7, 9, 3}), w}, Attrs({{"stride", Ints{2, 2}}})),
            (Shape{1, 4, 5, 32}));
}

TEST_F(InferTest, ConvValidDilationAndExplicitPads) {
  const ValueId x = Tensor({2, 224, 224, 3});
  const ValueId w = Tensor({16, 3, 3, 3});
  EXPECT_EQ(
      ShapeOf("conv2d", {x, w}, Attrs({{"stride", Ints{2, 2}}, {"padding", std::string("valid")}})),
      (Shape{2, 111, 111, 16}));  // (224 - 3) / 2 + 1
  const ValueId small = Tensor({1, 10, 10, 3});
  // Dilation 2 makes the 3x3 window span 5: VALID leaves 6, SAME keeps 10.
  EXPECT_EQ(ShapeOf("conv2d", {small, w},
                    Attrs({{"dilation", Ints{2, 2}}, {"padding", std::string("valid")}})),
            (Shape{1, 6, 6, 16}));
  EXPECT_EQ(ShapeOf("conv2d", {small, w}, Attrs({{"dilation", Ints{2, 2}}})),
            (Shape{1, 10, 10, 16}));
  EXPECT_EQ(ShapeOf("conv2d", {small, w},
                    Attrs({{"padding", std::string("explicit")}, {"pads", Ints{1, 1, 2, 2}}})),
            (Shape{1, 10, 12, 16}));
  // Grouped: 3 groups of one channel each, 6 outputs.
  EXPECT_EQ(ShapeOf("conv2d", {small, Tensor({6, 1, 1, 1})}), (Shape{1, 10, 10, 6}));
}

TEST_F(InferTest, DepthwiseMultiplier) {
  const ValueId x = Tensor({1, 8, 8, 3});
  const ValueId w = Tensor({1, 3, 3, 6});
  EXPECT_EQ(ShapeOf("depthwise_conv2d", {x, w}, Attrs({{"multiplier", int64_t{2}}})),
            (Shape{1, 8, 8, 6}));
  // multiplier 0 (the default) takes it from the filter.
  EXPECT_EQ(ShapeOf("depthwise_conv2d", {x, w, Tensor({6})}, Attrs({{"stride", Ints{2, 2}}})),
            (Shape{1, 4, 4, 6}));
}

TEST_F(InferTest, Pooling) {
  const ValueId x = Tensor({1, 7, 7, 5});
  const Attrs same = Attrs({{"filter", Ints{2, 2}}, {"stride", Ints{2, 2}}});
  const Attrs valid =
      Attrs({{"filter", Ints{2, 2}}, {"stride", Ints{2, 2}}, {"padding", std::string("valid")}});
  EXPECT_EQ(ShapeOf("max_pool2d", {x}, same), (Shape{1, 4, 4, 5}));
  EXPECT_EQ(ShapeOf("avg_pool2d", {x}, valid), (Shape{1, 3, 3, 5}));
  EXPECT_EQ(ShapeOf("avg_pool2d", {x},
                    Attrs({{"filter", Ints{7, 7}}, {"padding", std::string("valid")}})),
            (Shape{1, 1, 1, 5}));
}

TEST_F(InferTest, FullyConnectedFlattensOrKeepsDims) {
  const ValueId x = Tensor({2, 3, 4});
  EXPECT_EQ(ShapeOf("fully_connected", {x, Tensor({5, 12})}), (Shape{2, 5}));
  EXPECT_EQ(ShapeOf("fully_connected", {x, Tensor({5, 4}), Tensor({5})}), (Shape{6, 5}));
  EXPECT_EQ(ShapeOf("fully_connected", {x, Tensor({5, 4})}, Attrs({{"keep_num_dims", int64_t{1}}})),
            (Shape{2, 3, 5}));
  EXPECT_EQ(ShapeOf("fully_connected", {x, Tensor({5, 4}), kNoValue}), (Shape{6, 5}));
}

TEST_F(InferTest, MatMulTransposes) {
  EXPECT_EQ(ShapeOf("matmul", {Tensor({3, 4}), Tensor({4, 5})}), (Shape{3, 5}));
  EXPECT_EQ(
      ShapeOf("matmul", {Tensor({4, 3}), Tensor({4, 5})}, Attrs({{"transpose_a", int64_t{1}}})),
      (Shape{3, 5}));
  EXPECT_EQ(
      ShapeOf("matmul", {Tensor({3, 4}), Tensor({5, 4})}, Attrs({{"transpose_b", int64_t{1}}})),
      (Shape{3, 5}));
}

TEST_F(InferTest, BatchMatMulBroadcastsBatchDims) {
  EXPECT_EQ(ShapeOf("batch_matmul", {Tensor({2, 1, 3, 4}), Tensor({5, 4, 6})}),
            (Shape{2, 5, 3, 6}));
  EXPECT_EQ(ShapeOf("batch_matmul", {Tensor({3, 4}), Tensor({2, 4, 5})}), (Shape{2, 3, 5}));
  EXPECT_EQ(ShapeOf("batch_matmul", {Tensor({7, 4, 3}), Tensor({1, 6, 4})},
                    Attrs({{"transpose_a", int64_t{1}}, {"transpose_b", int64_t{1}}})),
            (Shape{7, 3, 6}));
}

TEST_F(InferTest, MeanKeepDimsAndNegativeAxes) {
  const ValueId x = Tensor({2, 8, 8, 16});
  EXPECT_EQ(ShapeOf("mean", {x}, Attrs({{"axes", Ints{1, 2}}, {"keepdims", int64_t{1}}})),
            (Shape{2, 1, 1, 16}));
  EXPECT_EQ(ShapeOf("mean", {x}, Attrs({{"axes", Ints{1, 2}}})), (Shape{2, 16}));
  EXPECT_EQ(ShapeOf("mean", {x}, Attrs({{"axes", Ints{-1, 0}}})), (Shape{8, 8}));
  EXPECT_EQ(ShapeOf("mean", {x}, Attrs({{"axes", Ints{0, 1, 2, 3}}})), Shape{});
}

TEST_F(InferTest, SoftmaxLastAxis) {
  EXPECT_EQ(ShapeOf("softmax", {Tensor({4, 10})}), (Shape{4, 10}));
  EXPECT_EQ(ShapeOf("softmax", {Tensor({4, 10})}, Attrs({{"axis", int64_t{1}}})), (Shape{4, 10}));
}

TEST_F(InferTest, ConcatSumsAlongAxis) {
  const ValueId a = Tensor({2, 3}), b = Tensor({2, 5}), c = Tensor({2, 1});
  EXPECT_EQ(ShapeOf("concat", {a, b, c}, Attrs({{"axis", int64_t{-1}}})), (Shape{2, 9}));
  EXPECT_EQ(ShapeOf("concat", {a, Tensor({4, 3})}, Attrs({{"axis", int64_t{0}}})), (Shape{6, 3}));
  EXPECT_EQ(ShapeOf("concat", {a}, Attrs({{"axis", int64_t{1}}})), (Shape{2, 3}));
  const TensorType i8 = TypeOf("concat", {Tensor({2}, DType::kI8), Tensor({3}, DType::kI8)},
                               Attrs({{"axis", int64_t{0}}}));
  EXPECT_EQ(i8.dtype, DType::kI8);
  EXPECT_EQ(i8.shape, (Shape{5}));
}

TEST_F(InferTest, ReshapeFillsMinusOne) {
  const ValueId x = Tensor({2, 3, 4});
  EXPECT_EQ(ShapeOf("reshape", {x}, Attrs({{"shape", Ints{-1, 4}}})), (Shape{6, 4}));
  EXPECT_EQ(ShapeOf("reshape", {x}, Attrs({{"shape", Ints{2, -1, 3}}})), (Shape{2, 4, 3}));
  EXPECT_EQ(ShapeOf("reshape", {x}, Attrs({{"shape", Ints{24}}})), (Shape{24}));
  EXPECT_EQ(ShapeOf("reshape", {Tensor({1})}, Attrs({{"shape", Ints{}}})), Shape{});
}

TEST_F(InferTest, TransposePadSlice) {
  const ValueId x = Tensor({2, 3, 4});
  EXPECT_EQ(ShapeOf("transpose", {x}, Attrs({{"perm", Ints{1, 2, 0}}})), (Shape{3, 4, 2}));
  EXPECT_EQ(ShapeOf("pad", {Tensor({2, 3})}, Attrs({{"paddings", Ints{1, 2, 0, 3}}})),
            (Shape{5, 6}));
  EXPECT_EQ(ShapeOf("slice", {Tensor({4, 5, 6})},
                    Attrs({{"begin", Ints{1, 0, 2}}, {"size", Ints{2, -1, -1}}})),
            (Shape{2, 5, 4}));
  EXPECT_EQ(ShapeOf("slice", {Tensor({4})}, Attrs({{"begin", Ints{4}}, {"size", Ints{0}}})),
            (Shape{0}));
}

TEST_F(InferTest, HelpersBroadcastAndNormalise) {
  EXPECT_EQ(BroadcastShapes({5, 1, 3}, {4, 1}).value(), (Shape{5, 4, 3}));
  EXPECT_EQ(BroadcastShapes({}, {}).value(), Shape{});
  EXPECT_FALSE(BroadcastShapes({2}, {3}).ok());
  EXPECT_EQ(NormaliseAxis(-1, 3).value(), 2);
  EXPECT_EQ(NormaliseAxis(-3, 3).value(), 0);
  EXPECT_EQ(NormaliseAxis(2, 3).value(), 2);
  EXPECT_FALSE(NormaliseAxis(3, 3).ok());
  EXPECT_FALSE(NormaliseAxis(-4, 3).ok());
  EXPECT_FALSE(NormaliseAxis(0, 0).ok());
}

TEST_F(InferTest, CheckShapesCatchesStaleOutput) {
  const ValueId x = Tensor({2, 3});
  ASSERT_TRUE(AddOp(&graph_, "relu", {x}, {}, "r").ok());
  EXPECT_TRUE(CheckShapes(graph_).ok());
  graph_.value(x).shape = {3, 3};  // the input changed after the node was built
  const Status s = CheckShapes(graph_);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Mentions(s.message(), "output 'r' is f32 2x3 but the op produces f32 3x3"));
}

// ---------------------------------------------------------------------------------------------
// Errors. Each message must name the problem; node names are given where the prefix is checked.

TEST_F(InferTest, ErrorNamesTheNode) {
  const std::string m = ErrorOf("relu", {Tensor({2}), Tensor({2})}, {}, "first_relu");
  EXPECT_TRUE(Mentions(m, "node 'first_relu' (relu)"));
  EXPECT_TRUE(Mentions(ErrorOf("mish", {Tensor({2})}), "unknown op 'mish'"));
}

TEST_F(InferTest, ErrorWrongInputCount) {
  EXPECT_TRUE(
      Mentions(ErrorOf("relu", {Tensor({2}), Tensor({2})}), "has 2 inputs; the op takes 1 to 1"));
  EXPECT_TRUE(Mentions(ErrorOf("add", {Tensor({2})}), "has 1 inputs; the op takes 2 to 2"));
  EXPECT_TRUE(Mentions(ErrorOf("conv2d", {Tensor({1, 4, 4, 1})}), "the op takes 2 to 3"));
  EXPECT_TRUE(Mentions(ErrorOf("concat", {}, Attrs({{"axis", int64_t{0}}})),
                       "has 0 inputs; the op takes 1 or more"));
}

TEST_F(InferTest, ErrorMissingRequiredInput) {
  EXPECT_TRUE(Mentions(ErrorOf("add", {Tensor({2}), kNoValue}), "missing required input 1"));
}

TEST_F(InferTest, ErrorUnknownAttribute) {
  EXPECT_TRUE(Mentions(ErrorOf("relu", {Tensor({2})}, Attrs({{"alpha", 0.1}})),
                       "unknown attribute 'alpha'"));
  // max has no fused activation, unlike add.
  EXPECT_TRUE(Mentions(
      ErrorOf("max", {Tensor({2}), Tensor({2})}, Attrs({{"activation", std::string("relu")}})),
      "unknown attribute 'activation'"));
}

TEST_F(InferTest, ErrorWrongAttributeType) {
  const ValueId x = Tensor({1, 8, 8, 3}), w = Tensor({4, 3, 3, 3});
  EXPECT_TRUE(Mentions(ErrorOf("conv2d", {x, w}, Attrs({{"stride", int64_t{2}}})),
                       "attribute 'stride' has the wrong type"));
  EXPECT_TRUE(Mentions(ErrorOf("softmax", {Tensor({2, 3})}, Attrs({{"beta", int64_t{1}}})),
                       "attribute 'beta' has the wrong type"));
  EXPECT_TRUE(Mentions(ErrorOf("conv2d", {x, w}, Attrs({{"padding", Ints{1}}})),
                       "attribute 'padding' has the wrong type"));
}

TEST_F(InferTest, ErrorMissingRequiredAttribute) {
  EXPECT_TRUE(Mentions(ErrorOf("max_pool2d", {Tensor({1, 4, 4, 1})}), "needs attribute 'filter'"));
  EXPECT_TRUE(Mentions(ErrorOf("reshape", {Tensor({4})}), "needs attribute 'shape'"));
  EXPECT_TRUE(Mentions(ErrorOf("concat", {Tensor({4})}), "needs attribute 'axis'"));
  EXPECT_TRUE(Mentions(ErrorOf("slice", {Tensor({4})}, Attrs({{"begin", Ints{0}}})),
                       "needs attribute 'size'"));
}

TEST_F(InferTest, ErrorNonBroadcastableShapes) {
  EXPECT_TRUE(Mentions(ErrorOf("add", {Tensor({2, 3}), Tensor({4})}),
                       "shapes [2x3] and [4] do not broadcast"));
  EXPECT_TRUE(Mentions(ErrorOf("batch_matmul", {Tensor({2, 3, 4}), Tensor({3, 4, 5})}),
                       "do not broadcast"));
}

TEST_F(InferTest, ErrorMixedElementTypes) {
  EXPECT_TRUE(Mentions(ErrorOf("add", {Tensor({2}), Tensor({2}, DType::kI8)}), "differ in type"));
  EXPECT_TRUE(Mentions(
      ErrorOf("concat", {Tensor({2}), Tensor({2}, DType::kI32)}, Attrs({{"axis", int64_t{0}}})),
      "differ in type"));
}

TEST_F(InferTest, ErrorConvFilterChannelMismatch) {
  const ValueId x = Tensor({1, 8, 8, 3});
  EXPECT_TRUE(Mentions(ErrorOf("conv2d", {x, Tensor({4, 3, 3, 2})}), "does not fit input"));
  // 4 filters cannot be split over 3 groups of one channel.
  EXPECT_TRUE(Mentions(ErrorOf("conv2d", {x, Tensor({4, 3, 3, 1})}), "does not fit input"));
  EXPECT_TRUE(Mentions(ErrorOf("conv2d", {x, Tensor({4, 3, 3, 0})}), "does not fit input"));
  EXPECT_TRUE(Mentions(ErrorOf("conv2d", {x, Tensor({4, 3, 3})}), "must have rank 4"));
  EXPECT_TRUE(
      Mentions(ErrorOf("conv2d", {Tensor({8, 8, 3}), Tensor({4, 3, 3, 3})}), "must have rank 4"));
}

TEST_F(InferTest, ErrorConvInputWithoutChannels) {
  // Zero input channels would make the group count zero; it must be an error, not a crash.
  EXPECT_TRUE(Mentions(ErrorOf("conv2d", {Tensor({1, 8, 8, 0}), Tensor({4, 3, 3, 1})}),
                       "does not fit input"));
}

TEST_F(InferTest, ErrorDepthwiseFilterMismatch) {
  const ValueId x = Tensor({1, 8, 8, 3});
  EXPECT_TRUE(Mentions(
      ErrorOf("depthwise_conv2d", {x, Tensor({1, 3, 3, 6})}, Attrs({{"multiplier", int64_t{3}}})),
      "must be [1, kh, kw, 3 x multiplier]"));
  EXPECT_TRUE(Mentions(ErrorOf("depthwise_conv2d", {x, Tensor({1, 3, 3, 4})}),
                       "must be [1, kh, kw, 3 x multiplier]"));
  EXPECT_TRUE(Mentions(ErrorOf("depthwise_conv2d", {x, Tensor({2, 3, 3, 6})}),
                       "must be [1, kh, kw, 3 x multiplier]"));
}

TEST_F(InferTest, ErrorBiasOfWrongSize) {
  const ValueId x = Tensor({1, 8, 8, 3}), w = Tensor({4, 3, 3, 3});
  EXPECT_TRUE(Mentions(ErrorOf("conv2d", {x, w, Tensor({5})}), "must have shape [4], has [5]"));
  EXPECT_TRUE(Mentions(ErrorOf("conv2d", {x, w, Tensor({1, 4})}), "must have shape [4]"));
  EXPECT_TRUE(Mentions(ErrorOf("depthwise_conv2d", {x, Tensor({1, 3, 3, 3}), Tensor({6})}),
                       "must have shape [3]"));
  EXPECT_TRUE(Mentions(ErrorOf("fully_connected", {Tensor({2, 4}), Tensor({5, 4}), Tensor({4})}),
                       "must have shape [5]"));
}

TEST_F(InferTest, ErrorWindowLargerThanInput) {
  const ValueId x = Tensor({1, 2, 5, 1});
  EXPECT_TRUE(Mentions(
      ErrorOf("conv2d", {x, Tensor({1, 3, 3, 1})}, Attrs({{"padding", std::string("valid")}})),
      "the window (3x3) is larger than the padded input (2x5)"));
  // Dilation counts: a 2x2 window dilated by 5 spans 6 columns.
  EXPECT_TRUE(
      Mentions(ErrorOf("conv2d", {x, Tensor({1, 1, 2, 1})},
                       Attrs({{"padding", std::string("valid")}, {"dilation", Ints{1, 5}}})),
               "is larger than the padded input"));
  EXPECT_TRUE(Mentions(ErrorOf("max_pool2d", {x},
                               Attrs({{"filter", Ints{3, 1}}, {"padding", std::string("valid")}})),
                       "is larger than the padded input"));
  // Explicit pads make room: the same window fits once padded.
  EXPECT_EQ(ShapeOf("conv2d", {x, Tensor({1, 3, 3, 1})},
                    Attrs({{"padding", std::string("explicit")}, {"pads", Ints{1, 0, 0, 0}}})),
            (Shape{1, 1, 3, 1}));
}

TEST_F(InferTest, ErrorBadWindowAttributes) {
  const ValueId x = Tensor({1, 8, 8, 3}), w = Tensor({4, 3, 3, 3});
  EXPECT_TRUE(Mentions(ErrorOf("conv2d", {x, w}, Attrs({{"padding", std::string("full")}})),
                       "padding must be 'same', 'valid' or 'explicit', not 'full'"));
  EXPECT_TRUE(
      Mentions(ErrorOf("conv2d", {x, w}, Attrs({{"padding", std::string("SAME")}})), "not 'SAME'"));
  EXPECT_TRUE(Mentions(ErrorOf("conv2d", {x, w}, Attrs({{"stride", Ints{0, 1}}})),
                       "attribute 'stride' must be positive"));
  EXPECT_TRUE(Mentions(ErrorOf("conv2d", {x, w}, Attrs({{"dilation", Ints{2}}})),
                       "attribute 'dilation' needs 2 values"));
  EXPECT_TRUE(
      Mentions(ErrorOf("conv2d", {x, w},
                       Attrs({{"padding", std::string("explicit")}, {"pads", Ints{1, 1, -1, 1}}})),
               "explicit padding needs 'pads'"));
  EXPECT_TRUE(Mentions(ErrorOf("conv2d", {x, w},
                               Attrs({{"padding", std::string("explicit")}, {"pads", Ints{1, 1}}})),
                       "explicit padding needs 'pads'"));
  EXPECT_TRUE(Mentions(ErrorOf("avg_pool2d", {x}, Attrs({{"filter", Ints{2, 2, 2}}})),
                       "attribute 'filter' needs 2 values"));
  EXPECT_TRUE(
      Mentions(ErrorOf("avg_pool2d", {x}, Attrs({{"filter", Ints{0, 2}}})), "at least 1x1"));
}

TEST_F(InferTest, ErrorBadActivationName) {
  const std::string expected = "activation must be none, relu, relu6 or relu_n1_to_1, not 'gelu'";
  const Attrs gelu = Attrs({{"activation", std::string("gelu")}});
  EXPECT_TRUE(Mentions(ErrorOf("add", {Tensor({2}), Tensor({2})}, gelu), expected));
  EXPECT_TRUE(
      Mentions(ErrorOf("conv2d", {Tensor({1, 4, 4, 1}), Tensor({1, 1, 1, 1})}, gelu), expected));
  EXPECT_TRUE(Mentions(
      ErrorOf("depthwise_conv2d", {Tensor({1, 4, 4, 1}), Tensor({1, 1, 1, 1})}, gelu), expected));
  EXPECT_TRUE(
      Mentions(ErrorOf("fully_connected", {Tensor({1, 4}), Tensor({2, 4})}, gelu), expected));
  Attrs pool = gelu;
  pool.Set("filter", Ints{1, 1});
  EXPECT_TRUE(Mentions(ErrorOf("max_pool2d", {Tensor({1, 4, 4, 1})}, pool), expected));
}

TEST_F(InferTest, ErrorReshapeWrongElementCount) {
  const ValueId x = Tensor({2, 3, 4});
  EXPECT_TRUE(Mentions(ErrorOf("reshape", {x}, Attrs({{"shape", Ints{5, 5}}})),
                       "cannot reshape [2x3x4] (24 elements) to [5x5]"));
  EXPECT_TRUE(Mentions(ErrorOf("reshape", {x}, Attrs({{"shape", Ints{5, -1}}})), "cannot reshape"));
  EXPECT_TRUE(Mentions(ErrorOf("reshape", {x}, Attrs({{"shape", Ints{0, -1}}})), "cannot reshape"));
}

TEST_F(InferTest, ErrorReshapeTwoUnknowns) {
  const ValueId x = Tensor({2, 3, 4});
  EXPECT_TRUE(
      Mentions(ErrorOf("reshape", {x}, Attrs({{"shape", Ints{-1, -1}}})), "may hold one -1"));
  EXPECT_TRUE(Mentions(ErrorOf("reshape", {x}, Attrs({{"shape", Ints{-2, 12}}})),
                       "may hold one -1 and no other negative"));
}

TEST_F(InferTest, ErrorTransposeNotAPermutation) {
  const ValueId x = Tensor({2, 3, 4});
  for (const Ints& perm : {Ints{0, 0, 1}, Ints{0, 1}, Ints{0, 1, 3}, Ints{0, 1, 2, 3}}) {
    SCOPED_TRACE(AttrValueString(perm));
    EXPECT_TRUE(Mentions(ErrorOf("transpose", {x}, Attrs({{"perm", perm}})),
                         "is not a permutation of the 3 dimensions"));
  }
}

TEST_F(InferTest, ErrorSliceOutOfRange) {
  const ValueId x = Tensor({4, 5});
  EXPECT_TRUE(Mentions(ErrorOf("slice", {x}, Attrs({{"begin", Ints{3, 0}}, {"size", Ints{2, 5}}})),
                       "reaches outside [4x5]"));
  EXPECT_TRUE(Mentions(ErrorOf("slice", {x}, Attrs({{"begin", Ints{-1, 0}}, {"size", Ints{1, 1}}})),
                       "reaches outside"));
  EXPECT_TRUE(Mentions(ErrorOf("slice", {x}, Attrs({{"begin", Ints{5, 0}}, {"size", Ints{-1, 1}}})),
                       "reaches outside"));
  EXPECT_TRUE(Mentions(ErrorOf("slice", {x}, Attrs({{"begin", Ints{0, 0}}, {"size", Ints{-2, 1}}})),
                       "reaches outside"));
  EXPECT_TRUE(Mentions(ErrorOf("slice", {x}, Attrs({{"begin", Ints{0}}, {"size", Ints{1}}})),
                       "one entry per dimension"));
}

TEST_F(InferTest, ErrorSoftmaxNotOnLastAxis) {
  EXPECT_TRUE(Mentions(ErrorOf("softmax", {Tensor({4, 10})}, Attrs({{"axis", int64_t{0}}})),
                       "last axis only"));
  EXPECT_TRUE(Mentions(ErrorOf("softmax", {Tensor({})}), "rank >= 1"));
}

TEST_F(InferTest, ErrorConcatMismatchOutsideAxis) {
  const ValueId a = Tensor({2, 3});
  EXPECT_TRUE(Mentions(ErrorOf("concat", {a, Tensor({3, 3})}, Attrs({{"axis", int64_t{1}}})),
                       "[3x3] does not match [2x3] outside axis 1"));
  EXPECT_TRUE(Mentions(ErrorOf("concat", {a, Tensor({2, 3, 1})}, Attrs({{"axis", int64_t{0}}})),
                       "does not match"));
  EXPECT_TRUE(Mentions(ErrorOf("concat", {a, kNoValue}, Attrs({{"axis", int64_t{0}}})),
                       "concat input 1 is missing"));
}

TEST_F(InferTest, ErrorMatMulInnerDimensions) {
  EXPECT_TRUE(Mentions(ErrorOf("matmul", {Tensor({3, 4}), Tensor({5, 6})}),
                       "inner dimensions differ: [3x4] x [5x6]"));
  EXPECT_TRUE(Mentions(
      ErrorOf("matmul", {Tensor({3, 4}), Tensor({4, 6})}, Attrs({{"transpose_b", int64_t{1}}})),
      "(after transposes)"));
  EXPECT_TRUE(Mentions(ErrorOf("batch_matmul", {Tensor({2, 3, 4}), Tensor({2, 5, 6})}),
                       "inner dimensions differ"));
  EXPECT_TRUE(Mentions(ErrorOf("matmul", {Tensor({2, 3, 4}), Tensor({4, 6})}), "must have rank 2"));
  EXPECT_TRUE(Mentions(ErrorOf("batch_matmul", {Tensor({4}), Tensor({4, 6})}), "rank >= 2"));
}

TEST_F(InferTest, ErrorFullyConnectedDepth) {
  EXPECT_TRUE(Mentions(ErrorOf("fully_connected", {Tensor({2, 5}), Tensor({3, 4})}),
                       "cannot be split into rows of 4"));
  EXPECT_TRUE(Mentions(ErrorOf("fully_connected", {Tensor({2, 3, 4}), Tensor({3, 6})},
                               Attrs({{"keep_num_dims", int64_t{1}}})),
                       "keep_num_dims needs the last input dimension to be 6"));
  EXPECT_TRUE(Mentions(ErrorOf("fully_connected", {Tensor({2, 4}), Tensor({3, 4, 1})}),
                       "must have rank 2"));
}

TEST_F(InferTest, ErrorAxisOutOfRange) {
  EXPECT_TRUE(Mentions(ErrorOf("mean", {Tensor({2, 3})}, Attrs({{"axes", Ints{2}}})),
                       "axis 2 is out of range for rank 2"));
  EXPECT_TRUE(Mentions(ErrorOf("mean", {Tensor({2, 3})}, Attrs({{"axes", Ints{0, -3}}})),
                       "axis -3 is out of range for rank 2"));
  EXPECT_TRUE(
      Mentions(ErrorOf("concat", {Tensor({2, 3}), Tensor({2, 3})}, Attrs({{"axis", int64_t{2}}})),
               "axis 2 is out of range for rank 2"));
  EXPECT_TRUE(Mentions(ErrorOf("softmax", {Tensor({2, 3})}, Attrs({{"axis", int64_t{-3}}})),
                       "axis -3 is out of range for rank 2"));
}

TEST_F(InferTest, ErrorBadPaddings) {
  EXPECT_TRUE(Mentions(ErrorOf("pad", {Tensor({2, 3})}, Attrs({{"paddings", Ints{1, 1}}})),
                       "pad needs 'paddings' = [before, after] >= 0 per dimension"));
  EXPECT_TRUE(Mentions(ErrorOf("pad", {Tensor({2, 3})}, Attrs({{"paddings", Ints{1, 1, 0, -1}}})),
                       "pad needs 'paddings'"));
}

}  // namespace
}  // namespace memfold
