// Tests of passes/input_layout.h (--input-layout nhwc): an NCHW graph input read through its
// NCHW-to-NHWC transpose, maybe after unary ops, becomes NHWC; the rewritten graph computes on
// the HWC image what the model computes on the CHW one, byte for byte; inputs read any other way
// are named in a clear error.
#include "memfold/passes/input_layout.h"

#include <gtest/gtest.h>

#include <string>

#include "memfold/exec/executor.h"
#include "memfold/ir/verify.h"
#include "memfold/ops/registry.h"

namespace memfold {
namespace {

constexpr int64_t kC = 3, kH = 4, kW = 5;

ValueId AddImage(Graph* graph, const std::string& name, Shape shape = {1, kC, kH, kW}) {
  Value input;
  input.name = name;
  input.shape = std::move(shape);
  input.role = Role::kInput;
  const ValueId x = graph->AddValue(std::move(input));
  graph->inputs.push_back(x);
  return x;
}

// input [1, C, H, W] -> (relu ->) transpose `perm` -> tanh -> output.
Graph NchwModel(bool relu_first, std::vector<int64_t> perm = {0, 2, 3, 1}) {
  Graph graph;
  ValueId x = AddImage(&graph, "image");
  if (relu_first) x = AddOp(&graph, "relu", {x}, {}, "relu").value()[0];
  x = AddOp(&graph, "transpose", {x}, {{"perm", std::move(perm)}}, "to_nhwc").value()[0];
  x = AddOp(&graph, "tanh", {x}, {}, "tanh").value()[0];
  graph.value(x).role = Role::kOutput;
  graph.outputs.push_back(x);
  return graph;
}

// The image as CHW floats and as the same pixels in HWC order.
std::pair<Bytes, Bytes> Image() {
  std::vector<float> chw(kC * kH * kW), hwc(chw.size());
  for (int64_t c = 0; c < kC; ++c)
    for (int64_t h = 0; h < kH; ++h)
      for (int64_t w = 0; w < kW; ++w) {
        const float v = static_cast<float>((c * 7 + h * 3 + w) % 11) - 5.0f;
        chw[static_cast<size_t>((c * kH + h) * kW + w)] = v;
        hwc[static_cast<size_t>((h * kW + w) * kC + c)] = v;
      }
  const auto bytes = [](const std::vector<float>& f) {
    const auto* p = reinterpret_cast<const std::byte*>(f.data());
    return Bytes(p, p + f.size() * sizeof(float));
  };
  return {bytes(chw), bytes(hwc)};
}

// Rewrites `graph`: one input changed, the first, now [1, H, W, C]; the graph verifies.
void ExpectOneImageMadeNhwc(Graph* graph) {
  Result<int> changed = MakeInputsChannelsLast(graph);
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  EXPECT_EQ(*changed, 1);
  EXPECT_TRUE(VerifyGraph(*graph).ok());
  EXPECT_TRUE(CheckShapes(*graph).ok());
  EXPECT_EQ(graph->value(graph->inputs[0]).shape, (Shape{1, kH, kW, kC}));
}

TEST(InputLayout, TransposedInputBecomesNhwcAndComputesTheSame) {
  for (const bool relu_first : {false, true}) {
    const Graph model = NchwModel(relu_first);
    Graph nhwc = model;
    ExpectOneImageMadeNhwc(&nhwc);
    for (NodeId id : nhwc.schedule) EXPECT_NE(nhwc.node(id).op, "transpose");
    EXPECT_EQ(nhwc.schedule.size(), model.schedule.size() - 1);
    const auto [chw, hwc] = Image();
    Result<RunOutputs> want = RunUnplanned(model, {chw});
    Result<RunOutputs> got = RunUnplanned(nhwc, {hwc});
    ASSERT_TRUE(want.ok() && got.ok());
    EXPECT_EQ(got->outputs, want->outputs);
  }
}

TEST(InputLayout, NamesTheInputItCannotChange) {
  const auto message = [](Graph graph) {
    Result<int> changed = MakeInputsChannelsLast(&graph);
    return changed.ok() ? std::string("changed") : changed.status().message();
  };
  // Transposed another way: not NCHW to NHWC.
  EXPECT_NE(message(NchwModel(false, {0, 3, 1, 2})).find("'to_nhwc' (transpose), not transposed"),
            std::string::npos);
  // Read twice before the transpose.
  Graph twice = NchwModel(false);
  ASSERT_TRUE(AddOp(&twice, "relu", {twice.inputs[0]}, {}, "other").ok());
  EXPECT_NE(message(twice).find("has 2 readers"), std::string::npos);
  // Quantised per channel: the axis would move.
  Graph per_channel = NchwModel(false);
  per_channel.value(per_channel.inputs[0]).quant = Quantization{{0.5f, 0.25f, 1.0f}, {0, 0, 0}, 1};
  EXPECT_NE(message(per_channel).find("per channel"), std::string::npos);
  // Every message says why the option does nothing here.
  EXPECT_NE(message(twice).find("--input-layout nhwc: every image input"), std::string::npos);
  // Transposed straight to a graph output.
  Graph to_output;
  const ValueId image = AddImage(&to_output, "image");
  const ValueId moved =
      AddOp(&to_output, "transpose", {image}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}})
          .value()[0];
  to_output.outputs.push_back(moved);
  EXPECT_NE(message(to_output).find("straight to a graph output"), std::string::npos);
  // Two images, one read otherwise: an error naming it, not a model of mixed layouts.
  Graph two = NchwModel(false);
  const ValueId second = AddImage(&two, "depth");
  two.outputs.push_back(AddOp(&two, "add", {second, second}, {}, "depth_twice").value()[0]);
  EXPECT_NE(message(two).find("input 'depth' has 2 readers"), std::string::npos);
  EXPECT_NE(message(Graph()).find("no image (rank-4) input"), std::string::npos);
}

// A vector input beside the image is left as it is; the image's chain may run through a
// quantize (a QDQ export's), whose int8 values become NHWC with it.
TEST(InputLayout, OtherInputsStayAndQuantizedChainsMove) {
  Graph graph;
  const ValueId image = AddImage(&graph, "image");
  const ValueId scale = AddImage(&graph, "scale", {1, kC});
  ValueId q = AddOp(&graph, "quantize", {image}, {{"dtype", std::string("i8")}}, "q").value()[0];
  graph.value(q).quant = Quantization{{0.05f}, {3}, 0};
  ValueId t =
      AddOp(&graph, "transpose", {q}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}}, "t").value()[0];
  graph.value(t).quant = graph.value(q).quant;
  const ValueId y = AddOp(&graph, "dequantize", {t}, {}, "dq").value()[0];
  graph.outputs = {y, AddOp(&graph, "relu", {scale}, {}, "scale_relu").value()[0]};
  const Graph model = graph;
  ExpectOneImageMadeNhwc(&graph);
  EXPECT_EQ(graph.value(graph.inputs[1]).shape, (Shape{1, kC}));
  const auto [chw, hwc] = Image();
  const Bytes vector(kC * sizeof(float), std::byte{0});
  Result<RunOutputs> want = RunUnplanned(model, {chw, vector});
  Result<RunOutputs> got = RunUnplanned(graph, {hwc, vector});
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_EQ(got->outputs, want->outputs);
  // A transpose that requantizes is not a pure change of layout.
  graph = model;
  graph.value(t).quant = Quantization{{0.1f}, {3}, 0};
  Result<int> refused = MakeInputsChannelsLast(&graph);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("changes its type or quantisation"), std::string::npos);
}

}  // namespace
}  // namespace memfold
