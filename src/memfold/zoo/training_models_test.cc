// Training reference models: published shapes and parameter counts at full scale (graph
// building only, never executed), layer tags, verification, and tiny configurations that run.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <set>
#include <string>

#include "memfold/exec/executor.h"
#include "memfold/exec/training.h"
#include "memfold/ir/verify.h"
#include "memfold/ops/registry.h"
#include "memfold/passes/gradient.h"
#include "memfold/plan/plan_graph.h"
#include "memfold/zoo/zoo.h"

namespace memfold {
namespace {

const char* const kTrainingModels[] = {"nmt", "transformer", "resnet", "deepspeech2"};

// Trainable parameters: the elements of every role-kWeight value (batch-norm running
// statistics, positional encodings and masks are kState and do not count).
int64_t Parameters(const Graph& g) {
  int64_t total = 0;
  for (const Value& v : g.values()) {
    if (v.role == Role::kWeight) total += v.elements();
  }
  return total;
}

const Value* Output(const Graph& g, const std::string& node_name) {
  for (const Node& n : g.nodes()) {
    if (n.name == node_name) return &g.value(n.outputs[0]);
  }
  return nullptr;
}

Shape ShapeOf(const Graph& g, const std::string& node_name) {
  const Value* v = Output(g, node_name);
  EXPECT_NE(v, nullptr) << "no node " << node_name;
  return v == nullptr ? Shape{-1} : v->shape;
}

Graph Build(const std::string& spec) {
  Result<Graph> g = BuildZooModel(spec);
  EXPECT_TRUE(g.ok()) << spec << ": " << g.status().message();
  return g.ok() ? std::move(g).value() : Graph();
}

// The structural checks every training model passes, full or tiny.
void ExpectWellFormed(const Graph& g, const std::string& spec) {
  EXPECT_TRUE(VerifyGraph(g).ok()) << spec << ": " << VerifyGraph(g).message();
  const Status shapes = CheckShapes(g);
  EXPECT_TRUE(shapes.ok()) << spec << ": " << shapes.message();
  ASSERT_FALSE(g.outputs.empty()) << spec;
  const Value& loss = g.value(g.outputs[0]);
  EXPECT_EQ(loss.dtype, DType::kF32) << spec;
  EXPECT_TRUE(loss.shape.empty()) << spec << " loss is " << ShapeString(loss.shape);
  const std::set<std::string> allowed = {"embedding", "rnn",  "attention", "output",
                                         "conv",      "norm", "ffn",       "loss"};
  for (const Node& n : g.nodes()) {
    EXPECT_TRUE(allowed.contains(n.layer))
        << spec << ": node " << n.name << " (" << n.op << ") has layer tag '" << n.layer << "'";
    if (n.op == "fully_connected" || n.op == "conv2d") {
      EXPECT_EQ(n.attrs.Str("activation"), "none")
          << spec << ": " << n.name << " fuses an activation";
    }
  }
  int64_t labels = 0;
  for (ValueId v : g.inputs)
    labels += g.value(v).name == "labels" && g.value(v).dtype == DType::kI32;
  EXPECT_EQ(labels, 1) << spec << " needs one i32 input named labels";
}

float Loss(const RunOutputs& out) {
  float loss = 0;
  std::memcpy(&loss, out.outputs.at(0).data(), 4);
  return loss;
}

double MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// Parameters of Sockeye's IWSLT15 En-Vi model at hidden 512, layers 2:2:
//   embeddings 17191 x 512 + 7709 x 512                          = 12,748,800
//   encoder layer 0, two directions of 256 units on 512 inputs:
//     2 x (1024 x 512 + 1024 + 1024 x 256)                       =  1,574,912
//   encoder layer 1: 2048 x 512 + 2048 + 2048 x 512              =  2,099,200
//   decoder layer 0 (input feeding, 1024 inputs): 2048 x 1024 + 2048 + 2048 x 512 = 3,147,776
//   decoder layer 1                                              =  2,099,200
//   decoder state init, h and c of 2 layers: 4 x (512 x 512 + 512) = 1,050,624
//   MLP attention: U_k, W_q 512 x 512 each, v 512, hidden 512 x 1024 + 512 = 1,049,600
//   output layer 7709 x 512 + 7709                               =  3,954,717
//   total                                                        = 27,724,829
TEST(TrainingModelNmt, FullScaleIsUnrolledOverHundredTokenSentences) {
  const Graph g = Build("nmt");
  ExpectWellFormed(g, "nmt");
  // The paper's "more than 10K operators": the forward graph alone, unrolled over 100 steps.
  EXPECT_GT(g.num_nodes(), 10000);
  EXPECT_EQ(Parameters(g), 27724829);
  EXPECT_EQ(ShapeOf(g, "source_embed"), (Shape{128, 100, 512}));
  EXPECT_EQ(ShapeOf(g, "encoder/l0/t99"), (Shape{128, 512}));  // both directions concatenated
  EXPECT_EQ(ShapeOf(g, "encoder/l0_fwd/t0/i2h"), (Shape{128, 1024}));
  EXPECT_EQ(ShapeOf(g, "encoder/states"), (Shape{128, 100, 512}));
  EXPECT_EQ(ShapeOf(g, "attention/source_hidden"), (Shape{128, 100, 512}));
  // Figure 8: every decoder step broadcast-adds its [batch, 1, 512] query to the one shared
  // [batch, 100, 512] source projection.
  const Value* shared = Output(g, "attention/source_hidden");
  ASSERT_NE(shared, nullptr);
  int readers = 0;
  for (const Node& n : g.nodes()) {
    if (n.op != "add") continue;
    for (ValueId in : n.inputs) readers += &g.value(in) == shared;
  }
  EXPECT_EQ(readers, 100);
  EXPECT_EQ(ShapeOf(g, "decoder/t0/att_add"), (Shape{128, 100, 512}));
  EXPECT_EQ(ShapeOf(g, "decoder/t0/att_probs"), (Shape{128, 100}));
  EXPECT_EQ(ShapeOf(g, "decoder/t42/input"), (Shape{128, 1024}));
  EXPECT_EQ(ShapeOf(g, "decoder/t99/logits"), (Shape{128, 7709}));
  EXPECT_EQ(ShapeOf(g, "logits"), (Shape{128 * 100, 7709}));
  int dropouts = 0, seeds_distinct = 0;
  std::set<int64_t> seeds;
  for (const Node& n : g.nodes()) {
    if (n.op != "dropout") continue;
    ++dropouts;
    EXPECT_DOUBLE_EQ(n.attrs.Float("rate"), 0.2);
    seeds_distinct += seeds.insert(n.attrs.Int("seed")).second;
  }
  EXPECT_GT(dropouts, 0);
  EXPECT_EQ(seeds_distinct, dropouts);
}

TEST(TrainingModelNmt, KeysReshapeTheGraph) {
  const Graph g = Build("nmt,seq=50,layers=3,batch=64");
  ExpectWellFormed(g, "nmt,seq=50,layers=3,batch=64");
  EXPECT_EQ(ShapeOf(g, "encoder/states"), (Shape{64, 50, 512}));
  EXPECT_NE(Output(g, "encoder/l2/t49/h"), nullptr);
  EXPECT_NE(Output(g, "decoder/l2/t49/h"), nullptr);
  Result<Graph> odd = BuildZooModel("nmt,hidden=511");
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("hidden=511 must be even"), std::string::npos)
      << odd.status().message();
}

// Transformer base with a shared 32,000-token vocabulary and tied embeddings:
//   embedding table 32000 x 512                          = 16,384,000
//   encoder layer: attention 4 x (512 x 512 + 512)       =  1,050,624
//                  FFN 512 x 2048 + 2048 + 2048 x 512 + 512 = 2,099,712
//                  two layer norms 2 x 1024               =      2,048  -> 3,152,384 x 6
//   decoder layer: two attentions, FFN, three norms       =  4,204,032 x 6
//   output bias                                          =     32,000
//   total                                                = 60,554,496
TEST(TrainingModelTransformer, BaseConfiguration) {
  const Graph g = Build("transformer");
  ExpectWellFormed(g, "transformer");
  EXPECT_EQ(Parameters(g), 60554496);
  EXPECT_EQ(ShapeOf(g, "encoder/embed"), (Shape{64, 50, 512}));
  EXPECT_EQ(ShapeOf(g, "encoder/l0/self_attention/scores"), (Shape{64, 8, 50, 50}));
  EXPECT_EQ(ShapeOf(g, "decoder/l5/cross_attention/probs"), (Shape{64, 8, 50, 50}));
  EXPECT_EQ(ShapeOf(g, "encoder/l5/ffn1"), (Shape{64, 50, 2048}));
  EXPECT_EQ(ShapeOf(g, "decoder/l5/ffn/norm"), (Shape{64, 50, 512}));
  EXPECT_EQ(ShapeOf(g, "logits"), (Shape{64 * 50, 32000}));
  int norms = 0, softmaxes = 0;
  for (const Node& n : g.nodes()) {
    norms += n.op == "layer_norm";
    softmaxes += n.op == "softmax";
  }
  EXPECT_EQ(norms, 6 * 2 + 6 * 3);
  EXPECT_EQ(softmaxes, 6 + 6 * 2);
  // `layers` sets both stacks.
  const Graph deep = Build("transformer,layers=11,seq=20,batch=4");
  ExpectWellFormed(deep, "transformer,layers=11");
  EXPECT_EQ(Parameters(deep), 16384000 + 11 * (3152384 + 4204032) + 32000);
  Result<Graph> bad = BuildZooModel("transformer,hidden=510");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("hidden=510 is not divisible by heads=8"),
            std::string::npos)
      << bad.status().message();
}

// Trainable parameters equal torchvision's published counts (conv weights, batch-norm gamma and
// beta, classifier weights and bias; running statistics are state, not parameters).
TEST(TrainingModelResNet, ParameterCountsMatchTorchvision) {
  struct Case {
    int depth;
    int64_t params;
  };
  for (const Case c : {Case{18, 11689512}, Case{34, 21797672}, Case{50, 25557032},
                       Case{101, 44549160}, Case{152, 60192808}}) {
    const std::string spec = "resnet,depth=" + std::to_string(c.depth) + ",batch=1";
    const Graph g = Build(spec);
    ExpectWellFormed(g, spec);
    EXPECT_EQ(Parameters(g), c.params) << spec;
  }
  // ResNet-200 (3, 24, 36, 3 bottleneck blocks): 64,673,832, as timm's resnet200.
  const Graph g200 = Build("resnet,depth=200,batch=1");
  EXPECT_EQ(Parameters(g200), 64673832);
}

TEST(TrainingModelResNet, LayerShapesAndStructure) {
  const Graph g = Build("resnet");
  ExpectWellFormed(g, "resnet");
  EXPECT_EQ(ShapeOf(g, "conv1/relu"), (Shape{32, 112, 112, 64}));
  EXPECT_EQ(ShapeOf(g, "maxpool"), (Shape{32, 56, 56, 64}));
  EXPECT_EQ(ShapeOf(g, "layer1.0/conv3"), (Shape{32, 56, 56, 256}));
  EXPECT_EQ(ShapeOf(g, "layer2.0/conv2"), (Shape{32, 28, 28, 128}));
  EXPECT_EQ(ShapeOf(g, "layer4.2/relu"), (Shape{32, 7, 7, 2048}));
  EXPECT_EQ(ShapeOf(g, "fc"), (Shape{32, 1000}));
  int convs = 0, norms = 0, bias_free = 0;
  for (const Node& n : g.nodes()) {
    convs += n.op == "conv2d";
    norms += n.op == "batch_norm_train";
    bias_free += n.op == "conv2d" && n.inputs.size() == 2;
    if (n.op == "batch_norm_train") {
      EXPECT_EQ(g.value(n.inputs[3]).role, Role::kState);
      EXPECT_EQ(g.value(n.inputs[4]).role, Role::kState);
    }
  }
  EXPECT_EQ(convs, 53);  // 1 + 16 blocks x 3 + 4 projection shortcuts
  EXPECT_EQ(norms, 53);
  EXPECT_EQ(bias_free, 53);
  Result<Graph> bad = BuildZooModel("resnet,depth=42");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("depth=42 is not one of 18, 34, 50, 101, 152, 200"),
            std::string::npos)
      << bad.status().message();
}

// DeepSpeech2 at batch 32, 300 frames, 5 bidirectional layers of 800:
//   conv1 32 x 11 x 41 x 1 = 14,432 and conv2 32 x 11 x 21 x 32 = 236,544, each with batch-norm
//   gamma and beta (2 x 64)                                        =    251,104
//   layer 0 (1312 = 41 x 32 inputs): 2 x (3200 x 1312 + 3200 + 3200 x 800) = 13,523,200
//   layers 1-4: 4 x 2 x (3200 x 800 + 3200 + 3200 x 800)          = 40,985,600
//   classifier 29 x 800 + 29                                       =     23,229
//   total                                                          = 54,783,133
TEST(TrainingModelDeepSpeech2, FullScaleShapes) {
  const Graph g = Build("deepspeech2");
  ExpectWellFormed(g, "deepspeech2");
  EXPECT_EQ(Parameters(g), 54783133);
  EXPECT_EQ(ShapeOf(g, "conv1/relu"), (Shape{32, 150, 81, 32}));
  EXPECT_EQ(ShapeOf(g, "conv2/relu"), (Shape{32, 150, 41, 32}));
  EXPECT_EQ(ShapeOf(g, "features"), (Shape{32, 150, 1312}));
  EXPECT_EQ(ShapeOf(g, "rnn/l4/t149"), (Shape{32, 800}));
  EXPECT_EQ(ShapeOf(g, "classifier"), (Shape{32 * 150, 29}));
  for (ValueId v : g.inputs) {
    if (g.value(v).name == "labels") {
      EXPECT_EQ(g.value(v).shape, (Shape{32 * 150}));  // one per output frame
    }
  }
}

TEST(TrainingModelSize, ChoiceKeyAndTinyOverrides) {
  Result<Graph> bad = BuildZooModel("nmt,size=big");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("size=big is not one of full, tiny"), std::string::npos)
      << bad.status().message();
  // Keys given explicitly apply on top of tiny.
  const Graph g = Build("nmt,size=tiny,batch=3,seq=5");
  EXPECT_EQ(ShapeOf(g, "encoder/states"), (Shape{3, 5, 8}));
  const Graph r = Build("resnet,size=tiny,depth=18");
  EXPECT_EQ(ShapeOf(r, "conv1/relu"), (Shape{2, 16, 16, 4}));
  EXPECT_EQ(ShapeOf(r, "fc"), (Shape{2, 10}));
  const Graph full = Build("resnet,size=full,depth=18,batch=1");
  EXPECT_EQ(ShapeOf(full, "fc"), (Shape{1, 1000}));
}

// Every tiny model builds quickly, verifies, and runs: the forward loss is finite and near
// ln(classes) for a freshly initialised network; with the gradient pass it trains a step.
TEST(TrainingModelTiny, BuildsAndRunsForward) {
  for (const char* name : kTrainingModels) {
    const std::string spec = std::string(name) + ",size=tiny";
    const auto start = std::chrono::steady_clock::now();
    const Graph g = Build(spec);
    const double build_ms = MillisecondsSince(start);
    ExpectWellFormed(g, spec);
    EXPECT_LT(g.num_nodes(), 5000) << spec;
    const auto run_start = std::chrono::steady_clock::now();
    Result<RunOutputs> out = RunUnplanned(g, TrainingInputs(g));
    const double run_ms = MillisecondsSince(run_start);
    ASSERT_TRUE(out.ok()) << spec << ": " << out.status().message();
    const float loss = Loss(*out);
    EXPECT_TRUE(std::isfinite(loss)) << spec;
    EXPECT_GT(loss, 0.5f) << spec;
    EXPECT_LT(loss, 20.0f) << spec;
    std::cout << spec << ": " << g.num_nodes() << " nodes, build " << build_ms << " ms, forward "
              << run_ms << " ms, loss " << loss << "\n";
  }
}

// With the gradient pass, each tiny model trains: planned steps agree with unplanned ones bit
// for bit (Trainer checks) and the loss on a fixed batch falls.
// (SGD with momentum; batch-2 ResNet-50 needs a small step, its batch norm sees two rows.)
TEST(TrainingModelTiny, TrainsAndTheLossFalls) {
  struct Case {
    const char* name;
    double learning_rate;
  };
  for (const Case c : {Case{"nmt", 0.2}, Case{"transformer", 0.05}, Case{"resnet", 0.01},
                       Case{"deepspeech2", 0.2}}) {
    const std::string spec = std::string(c.name) + ",size=tiny";
    Graph g = Build(spec);
    const auto start = std::chrono::steady_clock::now();
    TrainingConfig config;
    config.learning_rate = c.learning_rate;
    Result<TrainingGraph> training = BuildTrainingGraph(&g, config);
    ASSERT_TRUE(training.ok()) << spec << ": " << training.status().message();
    EXPECT_TRUE(CheckShapes(g).ok()) << spec;
    Result<GraphPlan> plan = PlanGraph(g, "greedy");
    ASSERT_TRUE(plan.ok()) << spec << ": " << plan.status().message();
    Trainer trainer(g, training->grads, *plan);
    const std::vector<Bytes> inputs = TrainingInputs(g);
    std::vector<float> losses;
    for (int k = 0; k < 20; ++k) {
      Result<StepResult> step = trainer.Step(inputs);
      ASSERT_TRUE(step.ok()) << spec << ": " << step.status().message();
      ASSERT_TRUE(std::isfinite(step->loss)) << spec << " step " << k;
      losses.push_back(step->loss);
    }
    EXPECT_LT(losses.back(), 0.8f * losses.front()) << spec;
    std::cout << spec << ": training graph " << g.num_nodes() << " nodes, "
              << training->params.size() << " parameters, gradient pass + 20 planned steps "
              << MillisecondsSince(start) << " ms, loss " << losses.front() << " -> "
              << losses.back() << "\n";
  }
}

}  // namespace
}  // namespace memfold
