// The branched zoo models (SqueezeNet 1.1, DenseNet-121, Inception v3) have the published
// parameter counts and layer shapes; every inference zoo model, float and int8 (dtype=i8, the
// post-training quantisation pass), runs inside its greedy and its diagonal plan bit for bit
// like an unplanned run at a small resolution; the int8 model agrees with the float one and
// needs about a quarter of its arena; the full-size models plan and verify.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "memfold/exec/checked_run_test_util.h"
#include "memfold/exec/executor.h"
#include "memfold/ops/kernel_args.h"
#include "memfold/passes/quantize.h"
#include "memfold/placement/verify_plan.h"
#include "memfold/plan/plan_graph.h"
#include "memfold/zoo/zoo.h"

namespace memfold {
namespace {

int64_t Parameters(const Graph& g) {
  int64_t total = 0;
  for (const Value& v : g.values()) total += v.is_constant() ? v.elements() : 0;
  return total;
}

const Value* NodeOutput(const Graph& g, const std::string& node_name) {
  for (const Node& n : g.nodes()) {
    if (n.name == node_name) return &g.value(n.outputs[0]);
  }
  return nullptr;
}

Shape OutputShape(const Graph& g, const std::string& node_name) {
  const Value* v = NodeOutput(g, node_name);
  EXPECT_NE(v, nullptr) << "no node " << node_name;
  return v == nullptr ? Shape{} : v->shape;
}

int CountOps(const Graph& g, const std::string& op) {
  return static_cast<int>(
      std::count_if(g.nodes().begin(), g.nodes().end(), [&](const Node& n) { return n.op == op; }));
}

// torchvision squeezenet1_1 has 1,235,496 parameters: conv1 1,792; fire2-9 (squeeze, expand
// 1x1, expand 3x3, each with bias) 11,408 + 12,432 + 45,344 + 49,440 + 104,880 + 111,024 +
// 188,992 + 197,184; conv10 513,000. SqueezeNet has no batch norm, so nothing folds.
TEST(BranchedZoo, SqueezeNetHasTorchvisionsParametersAndShapes) {
  Result<Graph> g = BuildZooModel("squeezenet");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Parameters(*g), 1235496);
  EXPECT_EQ(OutputShape(*g, "conv1"), (Shape{1, 111, 111, 64}));
  EXPECT_EQ(OutputShape(*g, "pool1"), (Shape{1, 55, 55, 64}));
  EXPECT_EQ(OutputShape(*g, "fire3/concat"), (Shape{1, 55, 55, 128}));
  EXPECT_EQ(OutputShape(*g, "pool5"), (Shape{1, 13, 13, 256}));
  EXPECT_EQ(OutputShape(*g, "fire9/concat"), (Shape{1, 13, 13, 512}));
  EXPECT_EQ(OutputShape(*g, "conv10"), (Shape{1, 13, 13, 1000}));
  EXPECT_EQ(OutputShape(*g, "predictions"), (Shape{1, 1000}));
  EXPECT_EQ(CountOps(*g, "concat"), 8);
  EXPECT_EQ(CountOps(*g, "conv2d"), 26);  // conv1, 8 fire modules x 3, conv10
}

// torchvision densenet121 has 7,978,856 parameters: convolutions 6,870,208, batch norms
// 2 x 41,824 (gamma and beta), classifier 1,024 x 1,000 + 1,000. Folding a norm into the
// convolution before it leaves one bias per channel instead of two: norm0 (64 channels) and
// each of the 58 layers' norm2 (128) fold, 7,488 channels, so the graph holds
// 7,978,856 - 7,488 = 7,971,368. The other norms stay as a MUL scale and an ADD shift.
TEST(BranchedZoo, DenseNet121HasTorchvisionsParametersWithFoldedNorms) {
  Result<Graph> g = BuildZooModel("densenet121");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Parameters(*g), 7978856 - 7488);
  EXPECT_EQ(OutputShape(*g, "pool0"), (Shape{1, 56, 56, 64}));
  EXPECT_EQ(OutputShape(*g, "block1/layer6/concat"), (Shape{1, 56, 56, 256}));
  EXPECT_EQ(OutputShape(*g, "transition1/pool"), (Shape{1, 28, 28, 128}));
  EXPECT_EQ(OutputShape(*g, "block2/layer12/concat"), (Shape{1, 28, 28, 512}));
  EXPECT_EQ(OutputShape(*g, "block3/layer24/concat"), (Shape{1, 14, 14, 1024}));
  EXPECT_EQ(OutputShape(*g, "block4/layer1/conv1"), (Shape{1, 7, 7, 128}));
  EXPECT_EQ(OutputShape(*g, "block4/layer16/concat"), (Shape{1, 7, 7, 1024}));
  EXPECT_EQ(OutputShape(*g, "predictions"), (Shape{1, 1000}));
  EXPECT_EQ(CountOps(*g, "conv2d"), 1 + 2 * 58 + 3);
  EXPECT_EQ(CountOps(*g, "concat"), 58);
  EXPECT_EQ(CountOps(*g, "mul"), 58 + 3 + 1);  // unfolded norms: layers, transitions, norm5
  EXPECT_EQ(CountOps(*g, "add"), 58 + 3 + 1);
}

// Keras InceptionV3 has 23,851,784 parameters: 94 convolutions without bias, 21,751,136
// weights; 94 batch norms with scale=False, 17,216 channels x 3 (beta, moving mean, moving
// variance); the classifier 2,048 x 1,000 + 1,000. Folded, each norm leaves one bias per
// channel: 23,851,784 - 2 x 17,216 = 23,817,352.
TEST(BranchedZoo, InceptionV3HasKerasParametersAndShapes) {
  Result<Graph> g = BuildZooModel("inception_v3");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Parameters(*g), 23851784 - 2 * 17216);
  EXPECT_EQ(CountOps(*g, "conv2d"), 94);
  EXPECT_EQ(OutputShape(*g, "conv2d_1a_3x3"), (Shape{1, 149, 149, 32}));
  EXPECT_EQ(OutputShape(*g, "maxpool_5a_3x3"), (Shape{1, 35, 35, 192}));
  EXPECT_EQ(OutputShape(*g, "mixed_5b"), (Shape{1, 35, 35, 256}));
  EXPECT_EQ(OutputShape(*g, "mixed_5d"), (Shape{1, 35, 35, 288}));
  EXPECT_EQ(OutputShape(*g, "mixed_6a"), (Shape{1, 17, 17, 768}));
  EXPECT_EQ(OutputShape(*g, "mixed_6b/branch7x7_2"), (Shape{1, 17, 17, 128}));  // 1x7 kernel
  EXPECT_EQ(OutputShape(*g, "mixed_6e"), (Shape{1, 17, 17, 768}));
  EXPECT_EQ(OutputShape(*g, "mixed_7a"), (Shape{1, 8, 8, 1280}));
  EXPECT_EQ(OutputShape(*g, "mixed_7c"), (Shape{1, 8, 8, 2048}));
  EXPECT_EQ(OutputShape(*g, "predictions"), (Shape{1, 1000}));
  const Value* filter = nullptr;
  for (const Node& n : g->nodes()) {
    if (n.name == "mixed_6b/branch7x7_3") filter = &g->value(n.inputs[1]);
  }
  ASSERT_NE(filter, nullptr);
  EXPECT_EQ(filter->shape, (Shape{192, 7, 1, 128}));  // 7x1: [out, kh, kw, in]
}

// --- every inference model, float and int8, at a resolution that executes quickly ----------

struct ModelPair {
  Graph f32, i8;
};

// Builds each spec once per test binary run (the int8 build calibrates on three float runs).
const ModelPair& Models(const std::string& spec) {
  static std::map<std::string, ModelPair> cache;
  auto it = cache.find(spec);
  if (it != cache.end()) return it->second;
  Result<Graph> f = BuildZooModel(spec);
  Result<Graph> q = BuildZooModel(spec + ",dtype=i8");
  EXPECT_TRUE(f.ok()) << f.status().message();
  EXPECT_TRUE(q.ok()) << q.status().message();
  if (!f.ok() || !q.ok()) return cache[""];
  return cache.emplace(spec, ModelPair{std::move(f).value(), std::move(q).value()}).first->second;
}

struct SmallModel {
  const char* spec;
  // Largest mean |float - int8| of the logits, in quantisation steps of the int8 logits.
  double max_mean_logit_steps;
};

class InferenceModel : public ::testing::TestWithParam<SmallModel> {};

void ExpectPlansRunBitIdentically(const Graph& g, const std::string& label) {
  const std::vector<Bytes> inputs = DefaultInputs(g);
  for (const char* planner : {"greedy", "diagonal"}) {
    Result<GraphPlan> plan = PlanGraph(g, planner);
    ASSERT_TRUE(plan.ok()) << label << " " << planner << ": " << plan.status().message();
    EXPECT_TRUE(VerifyPlan(plan->liveness.requests, plan->plan).ok()) << label << " " << planner;
    EXPECT_GE(plan->plan.arena_bytes, plan->lower_bound) << label << " " << planner;
    EXPECT_TRUE(RunsIdentically(g, g, plan->liveness, plan->plan, inputs))
        << label << " " << planner;
  }
}

TEST_P(InferenceModel, FloatAndInt8RunInGreedyAndDiagonalPlansBitIdentically) {
  const ModelPair& m = Models(GetParam().spec);
  ExpectPlansRunBitIdentically(m.f32, std::string(GetParam().spec) + " f32");
  ExpectPlansRunBitIdentically(m.i8, std::string(GetParam().spec) + " i8");
}

TEST_P(InferenceModel, Int8GraphHasTfliteQuantisation) {
  const Graph& q = Models(GetParam().spec).i8;
  for (ValueId v : q.inputs) EXPECT_EQ(q.value(v).dtype, DType::kI8);
  for (const Node& n : q.nodes()) {
    const Value& out = q.value(n.outputs[0]);
    ASSERT_EQ(out.dtype, DType::kI8) << n.name;
    ASSERT_TRUE(out.quant.has_value()) << n.name;
    if (n.op == "softmax") {
      EXPECT_EQ(Scale(out), 1.0f / 256.0f);
      EXPECT_EQ(ZeroPoint(out), -128);
    }
    if (n.op == "concat" || n.op == "max_pool2d" || n.op == "avg_pool2d" || n.op == "reshape") {
      for (ValueId in : n.inputs) {
        EXPECT_EQ(Scale(q.value(in)), Scale(out)) << n.name;
        EXPECT_EQ(ZeroPoint(q.value(in)), ZeroPoint(out)) << n.name;
      }
    }
    if (n.op == "conv2d" || n.op == "depthwise_conv2d" || n.op == "fully_connected") {
      const Value& w = q.value(n.inputs[1]);
      EXPECT_EQ(w.dtype, DType::kI8) << n.name;
      EXPECT_EQ(w.quant->per_channel(),
                n.op != "fully_connected" && w.shape[n.op == "conv2d" ? 0 : 3] > 1)
          << n.name;
      for (int64_t zp : w.quant->zero_point) EXPECT_EQ(zp, 0) << n.name;
      if (n.inputs.size() > 2) {
        const Value& bias = q.value(n.inputs[2]);
        EXPECT_EQ(bias.dtype, DType::kI32) << n.name;
        EXPECT_FLOAT_EQ(bias.quant->scale[0], Scale(q.value(n.inputs[0])) * w.quant->scale[0])
            << n.name;
      }
    }
  }
}

// The real values of an int8 tensor.
std::vector<double> Dequantized(const Value& v, const Bytes& bytes) {
  std::vector<double> out(bytes.size());
  for (size_t k = 0; k < out.size(); ++k) {
    out[k] = Scale(v) * (static_cast<int8_t>(bytes[k]) - ZeroPoint(v));
  }
  return out;
}

Bytes FloatBytes(const std::vector<double>& reals) {
  Bytes bytes(reals.size() * 4);
  for (size_t k = 0; k < reals.size(); ++k) {
    const auto f = static_cast<float>(reals[k]);
    std::memcpy(bytes.data() + 4 * k, &f, 4);
  }
  return bytes;
}

// The logits: the input of the (single) softmax, or the output of a model that ends at them
// (the int8 zoo models, head=auto).
ValueId Logits(const Graph& g) {
  for (const Node& n : g.nodes()) {
    if (n.op == "softmax") return n.inputs[0];
  }
  return g.outputs.at(0);
}

// Both models see the same real input: the int8 model's default input, and the float model
// its dequantised values. The int8 logits, dequantised, match the float logits' top class and
// stay within a few quantisation steps on average.
TEST_P(InferenceModel, Int8LogitsAgreeWithFloat) {
  const ModelPair& m = Models(GetParam().spec);
  const Bytes q_input = DefaultInputs(m.i8)[0];
  const std::vector<double> reals = Dequantized(m.i8.value(m.i8.inputs[0]), q_input);
  const ValueId f_logits = Logits(m.f32), q_logits = Logits(m.i8);
  ASSERT_NE(f_logits, kNoValue);
  Result<RunOutputs> f =
      Session(m.f32).Run({FloatBytes(reals)}, nullptr, nullptr, {.capture = {f_logits}});
  Result<RunOutputs> q = Session(m.i8).Run({q_input}, nullptr, nullptr, {.capture = {q_logits}});
  ASSERT_TRUE(f.ok() && q.ok());
  const Value& q_value = m.i8.value(q_logits);
  const std::vector<double> q_reals = Dequantized(q_value, q->captured[0]);
  const int64_t batch = q_value.shape[0], classes = q_value.shape[1];
  double total_steps = 0;
  for (int64_t b = 0; b < batch; ++b) {
    size_t f_best = 0, q_best = 0;
    for (int64_t c = 0; c < classes; ++c) {
      const auto k = static_cast<size_t>(b * classes + c);
      float x;
      std::memcpy(&x, f->captured[0].data() + 4 * k, 4);
      total_steps += std::abs(x - q_reals[k]) / Scale(q_value);
      float best;
      std::memcpy(&best, f->captured[0].data() + 4 * (static_cast<size_t>(b * classes) + f_best),
                  4);
      if (x > best) f_best = static_cast<size_t>(c);
      if (q_reals[k] > q_reals[static_cast<size_t>(b * classes) + q_best])
        q_best = static_cast<size_t>(c);
    }
    EXPECT_EQ(q_best, f_best) << GetParam().spec << " batch " << b;
  }
  const double mean_steps = total_steps / static_cast<double>(batch * classes);
  RecordProperty("mean_logit_steps", std::to_string(mean_steps));
  EXPECT_LE(mean_steps, GetParam().max_mean_logit_steps) << GetParam().spec;
}

// Every int8 activation takes a quarter of the bytes of its float twin, and at these sizes
// every buffer stays a multiple of the 16-byte alignment, so the greedy arena is exactly a
// quarter of the float one. The diagonal arena is a quarter to within a few alignment units:
// an output that overlaps its input sits at an offset rounded to 16 bytes, which is a four
// times coarser step for int8 (measured: 0.25 for five models, 0.250016 SqueezeNet, 0.250121
// cnn).
TEST_P(InferenceModel, Int8ArenaIsAQuarterOfFloat) {
  const ModelPair& m = Models(GetParam().spec);
  Result<GraphPlan> f = PlanGraph(m.f32, "greedy");
  Result<GraphPlan> q = PlanGraph(m.i8, "greedy");
  ASSERT_TRUE(f.ok() && q.ok());
  EXPECT_EQ(4 * q->plan.arena_bytes, f->plan.arena_bytes) << GetParam().spec;
  f = PlanGraph(m.f32, "diagonal");
  q = PlanGraph(m.i8, "diagonal");
  ASSERT_TRUE(f.ok() && q.ok());
  const double ratio =
      static_cast<double>(q->plan.arena_bytes) / static_cast<double>(f->plan.arena_bytes);
  RecordProperty("diagonal_arena_ratio", std::to_string(ratio));
  EXPECT_GE(ratio, 0.25) << GetParam().spec;
  EXPECT_LE(ratio, 0.2502) << GetParam().spec;
}

// The int8 models end at their logits (head=auto), so what they output depends on the input:
// the default input and its mirror image give different outputs, neither of them constant.
TEST_P(InferenceModel, Int8OutputsDependOnTheInput) {
  const Graph& q = Models(GetParam().spec).i8;
  EXPECT_NE(q.node(q.value(q.outputs[0]).producer).op, "softmax");
  Bytes input = DefaultInputs(q)[0];
  Result<RunOutputs> a = RunUnplanned(q, {input});
  std::reverse(input.begin(), input.end());
  Result<RunOutputs> b = RunUnplanned(q, {input});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->outputs, b->outputs) << GetParam().spec;
  for (const Bytes& out : {a->outputs[0], b->outputs[0]}) {
    EXPECT_GT(std::set<std::byte>(out.begin(), out.end()).size(), 1u) << GetParam().spec;
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, InferenceModel,
                         ::testing::Values(SmallModel{"mobilenet_v1,res=32", 1.0},
                                           SmallModel{"mobilenet_v2,res=32", 1.0},
                                           SmallModel{"mlp", 5.0}, SmallModel{"cnn", 3.0},
                                           SmallModel{"squeezenet,res=64", 1.0},
                                           SmallModel{"densenet121,res=32", 1.5},
                                           SmallModel{"inception_v3,res=75", 1.5}),
                         [](const ::testing::TestParamInfo<SmallModel>& param) {
                           const std::string spec = param.param.spec;
                           return spec.substr(0, spec.find(','));
                         });

// At full size, planning only: the float models, and their int8 graphs quantised from a
// uniform calibration (planning depends on types and shapes, not on the scales).
TEST(BranchedZoo, FullSizeModelsPlanAndVerifyInFloatAndInt8) {
  for (const char* spec : {"squeezenet", "densenet121", "inception_v3"}) {
    Result<Graph> f = BuildZooModel(spec);
    ASSERT_TRUE(f.ok()) << f.status().message();
    Result<Graph> q = QuantizeInt8(
        *f, Calibration(static_cast<size_t>(f->num_values()), ValueRange{-1.0f, 1.0f}));
    ASSERT_TRUE(q.ok()) << q.status().message();
    for (const Graph* g : {&*f, &*q}) {
      for (const char* planner : {"greedy", "diagonal"}) {
        Result<GraphPlan> plan = PlanGraph(*g, planner);
        ASSERT_TRUE(plan.ok()) << spec << " " << planner << ": " << plan.status().message();
        EXPECT_TRUE(VerifyPlan(plan->liveness.requests, plan->plan).ok());
        EXPECT_LE(plan->lower_bound, plan->plan.arena_bytes);
      }
    }
  }
}

}  // namespace
}  // namespace memfold
