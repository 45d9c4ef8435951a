#include "memfold/zoo/zoo.h"

#include <gtest/gtest.h>

#include "memfold/ops/registry.h"

namespace memfold {
namespace {

int64_t Parameters(const Graph& g) {
  int64_t total = 0;
  for (const Value& v : g.values()) {
    if (v.is_constant()) total += v.elements();
  }
  return total;
}

const Value& Output(const Graph& g, const std::string& node_name) {
  for (const Node& n : g.nodes()) {
    if (n.name == node_name) return g.value(n.outputs[0]);
  }
  ADD_FAILURE() << "no node " << node_name;
  return g.value(0);
}

// Channels that carry a folded batch norm: every convolution's bias except the classifier's.
int64_t FoldedNormChannels(const Graph& g) {
  int64_t channels = 0;
  for (const Node& n : g.nodes()) {
    if (n.name != "Logits/Conv2d_1c_1x1" && n.inputs.size() == 3)
      channels += g.value(n.inputs[2]).elements();
  }
  return channels;
}

// Published trainable-parameter counts (Keras applications, 1,000 classes, batch norm with
// gamma and beta): MobileNet v1 1.0 224 has 4,231,976 and v2 1.0 224 has 3,504,872. TFLite's
// hosted models fold each batch norm into one bias (one parameter per channel instead of two)
// and classify 1,001 classes, adding one more row of (1024 or 1280) weights plus a bias.
TEST(Zoo, MobileNetParameterCountsMatchThePublishedNetworks) {
  Result<Graph> v1 = BuildZooModel("mobilenet_v1");
  Result<Graph> v2 = BuildZooModel("mobilenet_v2");
  ASSERT_TRUE(v1.ok() && v2.ok());
  EXPECT_EQ(Parameters(*v1) + FoldedNormChannels(*v1) - (1024 + 1), 4231976);
  EXPECT_EQ(Parameters(*v2) + FoldedNormChannels(*v2) - (1280 + 1), 3504872);
  EXPECT_EQ(Parameters(*v1), 4222057);
  EXPECT_EQ(Parameters(*v2), 3489097);
}

TEST(Zoo, MobileNetV2LayerShapes) {
  Result<Graph> g = BuildZooModel("mobilenet_v2");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(Output(*g, "Conv").shape, (Shape{1, 112, 112, 32}));
  EXPECT_EQ(Output(*g, "expanded_conv/project").shape, (Shape{1, 112, 112, 16}));
  EXPECT_EQ(Output(*g, "expanded_conv_1/expand").shape, (Shape{1, 112, 112, 96}));
  EXPECT_EQ(Output(*g, "expanded_conv_1/depthwise").shape, (Shape{1, 56, 56, 96}));
  EXPECT_EQ(Output(*g, "expanded_conv_16/project").shape, (Shape{1, 7, 7, 320}));
  EXPECT_EQ(Output(*g, "Conv_1").shape, (Shape{1, 7, 7, 1280}));
  EXPECT_EQ(Output(*g, "Predictions").shape, (Shape{1, 1001}));
  int adds = 0;
  for (const Node& n : g->nodes()) adds += n.op == "add";
  EXPECT_EQ(adds, 10);            // residual connections of the published network
  EXPECT_EQ(g->num_nodes(), 66);  // 52 conv + 10 add + pool, logits, reshape, softmax
}

// The network msf-CNN deploys as MBV2-w0.35-r144 (TinyPART/msf-CNN, msf_CNN_eval_models: its
// TVM model's weights are [11,3,3,3], [11,11,1,1], [11,1,3,3], [5,11,1,1], [30,5,1,1], ...; its
// output is 5x5x448 and it has no add): the same shapes, and the multiply-accumulates of every
// layer before the classifier equal the 18,909,490 its analysis counts for the unfused network.
TEST(Zoo, MsfMobileNetV2IsTheNetworkMsfCnnMeasures) {
  Result<Graph> g = BuildZooModel("msf_mobilenet_v2");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(Output(*g, "Conv").shape, (Shape{1, 72, 72, 11}));
  EXPECT_EQ(Output(*g, "expanded_conv/expand").shape, (Shape{1, 72, 72, 11}));
  EXPECT_EQ(Output(*g, "expanded_conv/project").shape, (Shape{1, 72, 72, 5}));
  EXPECT_EQ(Output(*g, "expanded_conv_1/expand").shape, (Shape{1, 72, 72, 30}));
  EXPECT_EQ(Output(*g, "expanded_conv_16/project").shape, (Shape{1, 5, 5, 112}));
  EXPECT_EQ(Output(*g, "Conv_1").shape, (Shape{1, 5, 5, 448}));
  int64_t macs = 0;
  for (NodeId id : g->schedule) {
    const Node& n = g->node(id);
    if (n.name == "AvgPool") break;
    const Shape& w = g->value(n.inputs[1]).shape;
    const int64_t per_output = n.op == "conv2d" ? w[1] * w[2] * w[3] : w[1] * w[2];
    macs += g->value(n.outputs[0]).elements() * per_output;
    EXPECT_NE(n.op, "add");
  }
  EXPECT_EQ(macs, 18909490);
}

// head: int8 models end at their logits unless head=softmax asks for TFLM's int8 softmax;
// float models end in the softmax unless head=logits.
TEST(Zoo, HeadKeyChoosesSoftmaxOrLogits) {
  auto last_op = [](const std::string& spec) {
    Result<Graph> g = BuildZooModel(spec);
    EXPECT_TRUE(g.ok()) << g.status().message();
    return g->node(g->value(g->outputs[0]).producer).op;
  };
  EXPECT_EQ(last_op("mobilenet_v2,alpha=0.35,res=32"), "softmax");
  EXPECT_EQ(last_op("mobilenet_v2,alpha=0.35,res=32,head=logits"), "reshape");
  EXPECT_EQ(last_op("mobilenet_v2,alpha=0.35,res=32,dtype=i8"), "reshape");
  EXPECT_EQ(last_op("mobilenet_v2,alpha=0.35,res=32,dtype=i8,head=softmax"), "softmax");
  EXPECT_EQ(last_op("cnn,dtype=i8"), "fully_connected");
  Result<Graph> g = BuildZooModel("mlp,dtype=i8");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->value(g->outputs[0]).role, Role::kOutput);
  EXPECT_FALSE(BuildZooModel("mlp,head=probabilities").ok());
}

TEST(Zoo, WidthAndResolutionKeys) {
  Result<Graph> g = BuildZooModel("mobilenet_v1,alpha=0.25,res=128");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(Output(*g, "Conv2d_0").shape, (Shape{1, 64, 64, 8}));
  EXPECT_EQ(Output(*g, "Conv2d_1_pointwise").shape, (Shape{1, 64, 64, 16}));
  EXPECT_EQ(Output(*g, "Conv2d_13_pointwise").shape, (Shape{1, 4, 4, 256}));
  Result<Graph> v2 = BuildZooModel("mobilenet_v2,alpha=1.4");
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(Output(*v2, "Conv_1").shape, (Shape{1, 7, 7, 1792}));
}

TEST(Zoo, WeightsAreDeterministic) {
  Result<Graph> a = BuildZooModel("cnn");
  Result<Graph> b = BuildZooModel("cnn");
  ASSERT_TRUE(a.ok() && b.ok());
  for (ValueId v = 0; v < a->num_values(); ++v) {
    if (a->value(v).is_constant()) {
      EXPECT_EQ(*a->value(v).data, *b->value(v).data);
    }
  }
}

TEST(Zoo, EveryModelBuildsAndChecks) {
  for (const ZooModel& m : ZooModels()) {
    Result<Graph> g = BuildZooModel(m.name);
    ASSERT_TRUE(g.ok()) << m.name << ": " << g.status().message();
    EXPECT_TRUE(CheckShapes(*g).ok()) << m.name;
  }
}

TEST(Zoo, BadSpecsGiveActionableErrors) {
  struct Case {
    const char* spec;
    const char* message;
  };
  const Case cases[] = {
      {"resnet9000", "unknown zoo model 'resnet9000'; choose one of"},
      {"mlp,depth=3", "unknown key 'depth=3'; keys are batch, in, hidden, layers, classes"},
      {"mlp,layers", "unknown key 'layers'"},
      {"mlp,layers=two", "layers=two is not an integer"},
      {"mlp,layers=2.5", "layers=2.5 is not an integer"},
      {"mobilenet_v2,alpha=0", "alpha=0 is not a number in [0.05, 4]"},
      {"mobilenet_v1,res=16", "res=16 is not an integer in [32, 1024]"},
  };
  for (const Case& c : cases) {
    Result<Graph> g = BuildZooModel(c.spec);
    ASSERT_FALSE(g.ok()) << c.spec;
    EXPECT_NE(g.status().message().find(c.message), std::string::npos) << g.status().message();
  }
}

}  // namespace
}  // namespace memfold
