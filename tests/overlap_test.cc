// Diagonal memory optimisation end to end: the three safe-overlap methods agree (trace ==
// algorithmic, analytic <= algorithmic) on every operator of every model, the paper's
// MobileNet v2 figures are reproduced, diagonal plans run bit-identically inside one arena,
// never need more than greedy, and an over-estimated overlap is caught by execution.
#include <gtest/gtest.h>

#include <filesystem>

#include "memfold/exec/checked_run_test_util.h"
#include "memfold/exec/executor.h"
#include "memfold/exec/overlap_trace.h"
#include "memfold/ops/builder.h"
#include "memfold/ops/kernels/int8_simd.h"
#include "memfold/ops/registry.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/placement/verify_plan.h"
#include "memfold/plan/overlap_allowances.h"
#include "memfold/plan/plan_graph.h"
#include "tests/test_models.h"

namespace memfold {
namespace {

std::vector<std::string> AllModels() {
  std::vector<std::string> models = {"zoo:mobilenet_v1",
                                     "zoo:mobilenet_v2",
                                     "zoo:mobilenet_v1,alpha=0.25,res=96",
                                     "zoo:mobilenet_v2,alpha=0.35,res=96",
                                     "zoo:mlp",
                                     "zoo:cnn"};
  for (const std::string& file : testing::SharedModelFiles()) models.push_back(file);
  std::sort(models.begin(), models.end());
  return models;
}

const Node& NodeNamed(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes()) {
    if (n.name == name) return n;
  }
  ADD_FAILURE() << "no node " << name;
  return g.node(0);
}

// REFERENCE.md §1: the second depthwise convolution of MobileNet v2 1.0 224
// (112x112x96 -> 56x56x96, 3x3, stride 2, SAME: pad top/left 0) reads input row 2*oy from
// step (oy, ox, c) on, always at or after the element it writes, so the whole output
// (56*56*96*4 = 1,204,224 B) may overlap. The first (112x112x32, stride 1, pad 1) falls behind
// by one input row plus one pixel of 32 channels: 1,605,632 - (112 + 1) * 32 * 4 = 1,591,168 B.
TEST(SafeOverlap, ReproducesThePaperOnMobileNetV2) {
  Result<Graph> g = LoadModel("zoo:mobilenet_v2");
  ASSERT_TRUE(g.ok());
  const Node& second = NodeNamed(*g, "expanded_conv_1/depthwise");
  const OpDef* dw = FindOp("depthwise_conv2d");
  EXPECT_EQ(dw->overlap_algorithmic(*g, second, 0), 1204224);
  EXPECT_EQ(SafeOverlapByTrace(*g, second, 0), 1204224);
  const int64_t analytic = *dw->overlap_analytic(*g, second, 0);
  EXPECT_LE(analytic, 1204224);
  EXPECT_GE(analytic, 1204224 * 99 / 100);  // the paper's bound was 0.18 % below; ours is exact
  const Node& first = NodeNamed(*g, "expanded_conv/depthwise");
  EXPECT_EQ(dw->overlap_algorithmic(*g, first, 0), 1591168);
  EXPECT_EQ(SafeOverlapByTrace(*g, first, 0), 1591168);
}

// The paper's optimised MobileNet v2 needs about 4.6 MB; MobileNet v1 saves about a third.
TEST(DiagonalPlanner, MobileNetTargets) {
  Result<Graph> v2 = LoadModel("zoo:mobilenet_v2");
  Result<Graph> v1 = LoadModel("zoo:mobilenet_v1");
  ASSERT_TRUE(v1.ok() && v2.ok());
  Result<GraphPlan> v2_plan = PlanGraph(*v2, "diagonal");
  ASSERT_TRUE(v2_plan.ok());
  // The 112x112x96 expansion (4,816,896 B) overlaps its 112x112x16 input almost entirely.
  EXPECT_LE(v2_plan->plan.arena_bytes, 4816896 + 1024);
  Result<GraphPlan> v1_plan = PlanGraph(*v1, "diagonal");
  Result<GraphPlan> v1_greedy = PlanGraph(*v1, "greedy");
  ASSERT_TRUE(v1_plan.ok() && v1_greedy.ok());
  EXPECT_LE(v1_plan->plan.arena_bytes * 3,
            v1_greedy->plan.arena_bytes * 2 + 3 * 1024);  // >= 1/3 saved
}

// The trace of memfold's kernel against the algorithmic model of TFLM's reference order: equal,
// or for the int8 SIMD kernels, which read no later, up to Int8SimdOverlapSlack output elements
// above it (kernels/int8_simd.h).
void ExpectTraceMatchesModel(const Graph& g, const Node& node, int64_t trace, int64_t model,
                             const std::string& where) {
  const Value& in = g.value(node.inputs[0]);
  const int64_t filter_c = node.inputs.size() > 1 && g.value(node.inputs[1]).shape.size() == 4
                               ? g.value(node.inputs[1]).shape[3]
                               : 0;
  const int64_t in_c = in.shape.empty() ? 0 : in.shape.back();
  if (!RunsInt8Simd(node.op, in.dtype, in_c, filter_c)) {
    EXPECT_EQ(trace, model) << where;
    return;
  }
  const Value& out = g.value(node.outputs[0]);
  const bool gathers =
      node.op == "conv2d" && in.quant.has_value() && !in.quant->zero_point.empty() &&
      Int8ConvGathersWindow(
          g.value(node.inputs[1]).shape[1] * g.value(node.inputs[1]).shape[2] * in_c,
          in.quant->zero_point[0]);
  EXPECT_GE(trace, model) << where;
  EXPECT_LE(trace - model,
            Int8SimdOverlapSlack(gathers, out.shape.back()) * ElementBytes(out.dtype))
      << where;
}

class EveryModel : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryModel, TraceEqualsAlgorithmicAndAnalyticIsBelow) {
  Result<Graph> g = LoadModel(GetParam());
  ASSERT_TRUE(g.ok()) << g.status().message();
  const OverlapReport report = AnalyseOverlaps(*g);
  for (const NodeOverlap& n : report.nodes) {
    const std::string where =
        GetParam() + " op " + std::to_string(n.position) + " (" + g->node(n.node).op + ")";
    if (n.trace) {
      ASSERT_TRUE(n.algorithmic.has_value()) << where << ": traced but no algorithmic model";
      ExpectTraceMatchesModel(*g, g->node(n.node), *n.trace, *n.algorithmic, where);
    }
    if (n.algorithmic) {
      EXPECT_LE(*n.algorithmic, n.output_bytes) << where;
      EXPECT_LE(n.analytic.value_or(0), *n.algorithmic) << where;
    }
  }
}

TEST_P(EveryModel, DiagonalPlanRunsBitIdenticallyAndBeatsGreedy) {
  Result<Graph> g = LoadModel(GetParam());
  ASSERT_TRUE(g.ok()) << g.status().message();
  Result<GraphPlan> diagonal = PlanGraph(*g, "diagonal");
  Result<GraphPlan> greedy = PlanGraph(*g, "greedy");
  ASSERT_TRUE(diagonal.ok() && greedy.ok()) << diagonal.status().message();
  EXPECT_LE(diagonal->plan.arena_bytes, greedy->plan.arena_bytes);
  EXPECT_LE(diagonal->lower_bound, diagonal->plan.arena_bytes);
  ASSERT_TRUE(VerifyPlan(diagonal->liveness.requests, diagonal->plan).ok());
  const std::vector<Bytes> inputs = DefaultInputs(*g);
  if (!CheckRunnable(*g, inputs).ok()) GTEST_SKIP() << "no kernel for an operator: planning only";
  EXPECT_TRUE(RunsIdentically(*g, *g, diagonal->liveness, diagonal->plan, inputs));
}

std::string ParamName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = std::filesystem::path(info.param).stem().string();
  for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Models, EveryModel, ::testing::ValuesIn(AllModels()), ParamName);

// The integer mean zeroes its output before reading any input (the float 4-D H,W mean reads
// per channel before each write), so their safe overlaps differ: each model must follow its
// own kernel.
TEST(SafeOverlap, IntegerMeanIsModelledByItsOwnLoopOrder) {
  for (DType dtype : {DType::kF32, DType::kI8}) {
    GraphBuilder b("mean");
    const ValueId x = b.Input("x", {1, 4, 4, 3}, dtype);
    Attrs a;
    a.Set("axes", std::vector<int64_t>{1, 2});
    a.Set("keepdims", int64_t{1});
    const ValueId y = b.Op("mean", {x}, a, "mean");
    Result<Graph> g = b.Finish({y});
    ASSERT_TRUE(g.ok());
    for (ValueId v : {x, y}) g->value(v).quant = Quantization{{0.5f}, {1}, 0};
    const Node& node = g->node(0);
    const std::optional<int64_t> trace = SafeOverlapByTrace(*g, node, 0);
    ASSERT_TRUE(trace.has_value());
    EXPECT_EQ(FindOp("mean")->overlap_algorithmic(*g, node, 0), *trace) << DTypeName(dtype);
    EXPECT_LE(FindOp("mean")->overlap_analytic(*g, node, 0).value_or(0), *trace);
    if (dtype == DType::kI8) {
      EXPECT_EQ(*trace, 0);
    }
  }
}

// x -> depthwise 3x3 stride 1 SAME -> relu. The depthwise output may overlap its input only
// up to O_s < N_out; a plan claiming one row more must corrupt the result, and the
// planned-versus-unplanned comparison must notice.
TEST(DiagonalPlanner, OverEstimatedOverlapIsCaughtByExecution) {
  GraphBuilder b("dw");
  const ValueId x = b.Input("x", {1, 8, 8, 4});
  const ValueId w = b.Weight("w", {1, 3, 3, 4}, 1.0f);
  const ValueId y = b.Op("depthwise_conv2d", {x, w}, ConvAttrs(1, "none"), "dw");
  const ValueId z = b.Op("relu", {y}, {}, "relu");
  Result<Graph> g = b.Finish({z});
  ASSERT_TRUE(g.ok());
  Liveness live = ComputeLiveness(*g);
  AddOverlapAllowances(*g, OverlapSource::kAlgorithmic, &live);
  const int32_t out = live.buffer_of[static_cast<size_t>(y)];
  const int32_t in = live.buffer_of[static_cast<size_t>(x)];
  ASSERT_EQ(live.requests[static_cast<size_t>(out)].may_overlap.size(), 1u);
  const int64_t exact = live.requests[static_cast<size_t>(out)].may_overlap[0].max_bytes;
  EXPECT_EQ(exact, 8 * 8 * 4 * 4 - (8 + 1) * 4 * 4);  // one row and one pixel behind
  // Place the input exactly O_s into the output's end: safe, and identical.
  auto run_with_overlap = [&](int64_t overlap) {
    Plan plan{.planner = "manual",
              .arena_bytes = 0,
              .offsets = std::vector<int64_t>(live.requests.size(), 0)};
    const int64_t out_bytes = live.requests[static_cast<size_t>(out)].bytes;
    plan.offsets[static_cast<size_t>(in)] = out_bytes - overlap;
    const int32_t relu = live.buffer_of[static_cast<size_t>(z)];
    plan.offsets[static_cast<size_t>(relu)] = 2 * out_bytes;
    plan.arena_bytes = 3 * out_bytes;
    return RunChecked(*g, *g, live, plan, DefaultInputs(*g)).value();
  };
  EXPECT_TRUE(run_with_overlap(exact).identical());
  // One float more than proven (the smallest overlap that keeps the input's floats aligned):
  // the kernel reads an input byte it already overwrote, caught inside the kernel whatever the
  // data.
  const CheckedRun beyond = run_with_overlap(exact + 4);
  ASSERT_FALSE(beyond.identical());
  EXPECT_EQ(beyond.first_difference->check, "in-kernel");
  EXPECT_EQ(beyond.first_difference->op_name, "dw");
  EXPECT_FALSE(run_with_overlap(exact + 8 * 4 * 4).identical());  // one row more
  // And the verifier refuses such a plan outright.
  Plan bad{.planner = "manual",
           .arena_bytes = 0,
           .offsets = std::vector<int64_t>(live.requests.size(), 0)};
  bad.offsets[static_cast<size_t>(in)] = live.requests[static_cast<size_t>(out)].bytes - exact - 16;
  bad.offsets[static_cast<size_t>(live.buffer_of[static_cast<size_t>(z)])] = 4096;
  bad.arena_bytes = 8192;
  EXPECT_FALSE(VerifyPlan(live.requests, bad).ok());
}

}  // namespace
}  // namespace memfold
