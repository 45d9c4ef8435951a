// GraphToTflite: graphs written as .tflite read back as the same graph (ops, attributes,
// shapes, quantisation) and compute bit-identical outputs; what TFLite cannot express is an
// error naming the node.
#include "memfold/io/tflite_graph_writer.h"

#include <gtest/gtest.h>

#include "fuzz/seed_graphs.h"
#include "memfold/exec/checked_run_test_util.h"
#include "memfold/exec/executor.h"
#include "memfold/io/tflite_reader.h"
#include "memfold/ops/builder.h"
#include "memfold/ops/registry.h"
#include "memfold/ops/runnable.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {
namespace {

Graph Loaded(const std::string& model) {
  Result<Graph> g = LoadModel(model);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return std::move(g).value();
}

Graph ReadBack(const Graph& g) {
  Result<Bytes> bytes = GraphToTflite(g);
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  Result<Graph> back = LoadTflite(std::move(bytes).value(), "written.tflite");
  EXPECT_TRUE(back.ok()) << back.status().message();
  return std::move(back).value();
}

// Attributes the reader derives from the file rather than reading them (softmax's output type
// comes from its output tensor) may be filled where the original left a default.
void ExpectSameAttrs(const Node& a, const Node& b) {
  for (const auto& [name, value] : a.attrs.items()) {
    if (name == "output_dtype" && std::get<std::string>(value).empty()) continue;
    const AttrValue* other = b.attrs.Find(name);
    ASSERT_NE(other, nullptr) << a.name << " lost " << name;
    EXPECT_EQ(*other, value) << a.name << " " << name;
  }
}

// The written graph's first values and every node match; extra values are parameter tensors.
void ExpectSameGraph(const Graph& a, const Graph& b) {
  ASSERT_GE(b.num_values(), a.num_values());
  for (ValueId v = 0; v < a.num_values(); ++v) {
    const Value& x = a.value(v);
    const Value& y = b.value(v);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.dtype, y.dtype) << x.name;
    EXPECT_EQ(x.shape, y.shape) << x.name;
    EXPECT_EQ(x.is_constant(), y.is_constant()) << x.name;
    if (x.is_constant() && y.is_constant()) {
      EXPECT_EQ(*x.data, *y.data) << x.name;
    }
    ASSERT_EQ(x.quant.has_value(), y.quant.has_value()) << x.name;
    if (x.quant) {
      EXPECT_EQ(x.quant->scale, y.quant->scale) << x.name;
      EXPECT_EQ(x.quant->zero_point, y.quant->zero_point) << x.name;
      if (x.quant->per_channel()) {
        EXPECT_EQ(x.quant->axis, y.quant->axis) << x.name;
      }
    }
  }
  ASSERT_EQ(a.num_nodes(), b.num_nodes());
  for (size_t k = 0; k < a.schedule.size(); ++k) {
    const Node& x = a.node(a.schedule[k]);
    const Node& y = b.node(b.schedule[k]);
    EXPECT_EQ(x.op, y.op);
    EXPECT_EQ(x.inputs, y.inputs) << x.name;
    EXPECT_EQ(x.outputs, y.outputs) << x.name;
    ExpectSameAttrs(x, y);
  }
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.outputs, b.outputs);
}

void ExpectSameOutputs(const Graph& a, const Graph& b) {
  Result<GraphPlan> gp = PlanGraph(b, "diagonal");
  ASSERT_TRUE(gp.ok()) << gp.status().message();
  EXPECT_TRUE(RunsIdentically(a, b, gp->liveness, gp->plan, DefaultInputs(a)));
}

TEST(TfliteGraphWriter, ZooModelsRoundTrip) {
  for (const char* spec : {"zoo:mlp,in=4,hidden=4,layers=1", "zoo:cnn,res=8,channels=2"}) {
    SCOPED_TRACE(spec);
    const Graph original = Loaded(spec);
    const Graph back = ReadBack(original);
    ExpectSameGraph(original, back);
    ExpectSameOutputs(original, back);
  }
}

TEST(TfliteGraphWriter, MixedFloatOpsRoundTrip) {
  Result<Graph> mixed = fuzz::MixedFloatGraph();
  ASSERT_TRUE(mixed.ok()) << mixed.status().message();
  const Graph back = ReadBack(*mixed);
  ExpectSameGraph(*mixed, back);
  ExpectSameOutputs(*mixed, back);
}

// UINT32 tensors (TFLM's signal-processing front end) are read and planned like any other: a
// reshape moves no data and runs; an operator without a uint32 kernel plans and refuses to run,
// naming itself.
TEST(TfliteGraphWriter, Uint32TensorsReadPlanAndRunWhereAKernelExists) {
  Graph g;
  Value x;
  x.name = "frames";
  x.dtype = DType::kU32;
  x.shape = {1, 8};
  x.role = Role::kInput;
  const ValueId in = g.AddValue(std::move(x));
  g.inputs.push_back(in);
  Result<std::vector<ValueId>> reshaped =
      AddOp(&g, "reshape", {in}, Attrs({{"shape", std::vector<int64_t>{2, 4}}}));
  ASSERT_TRUE(reshaped.ok()) << reshaped.status().message();
  g.outputs = {reshaped->front()};
  const Graph back = ReadBack(g);
  ASSERT_EQ(back.value(back.inputs[0]).dtype, DType::kU32);
  ExpectSameGraph(g, back);
  ExpectSameOutputs(g, back);

  Result<std::vector<ValueId>> doubled =
      AddOp(&g, "add", {reshaped->front(), reshaped->front()}, Attrs());
  ASSERT_TRUE(doubled.ok()) << doubled.status().message();
  g.outputs = {doubled->front()};
  const Graph added = ReadBack(g);
  EXPECT_TRUE(PlanGraph(added, "diagonal").ok());
  const Status runnable = CheckRunnable(added, DefaultInputs(added));
  EXPECT_FALSE(runnable.ok());
  EXPECT_NE(runnable.message().find("add"), std::string::npos) << runnable.message();
}

TEST(TfliteGraphWriter, QuantizedOpsRoundTrip) {
  Result<Graph> quantized = fuzz::QuantizedGraph();
  ASSERT_TRUE(quantized.ok()) << quantized.status().message();
  const Graph back = ReadBack(*quantized);
  ExpectSameGraph(*quantized, back);
  ExpectSameOutputs(*quantized, back);
}

// Planned without running: the MobileNet's every padding, stride and multiplier survives, so
// the written model plans to the same arenas.
TEST(TfliteGraphWriter, MobileNetPlansTheSameAfterWriting) {
  const Graph original = Loaded("zoo:mobilenet_v2,alpha=0.35,res=32");
  const Graph back = ReadBack(original);
  ExpectSameGraph(original, back);
  for (const char* planner : {"greedy", "diagonal"}) {
    EXPECT_EQ(PlanGraph(original, planner)->plan.arena_bytes,
              PlanGraph(back, planner)->plan.arena_bytes)
        << planner;
  }
}

TEST(TfliteGraphWriter, WhatTfliteCannotExpressIsAnErrorNamingTheNode) {
  Graph g;
  g.name = "model";
  Value x{.name = "x", .shape = {1, 4, 4, 1}, .role = Role::kInput};
  g.inputs = {g.AddValue(std::move(x))};
  Result<std::vector<ValueId>> e = AddOp(&g, "silu", {0}, {}, "swish");
  ASSERT_TRUE(e.ok());
  g.outputs = *e;
  Result<Bytes> bytes = GraphToTflite(g);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().message(),
            "model: node 'swish' op 'silu' has no TFLite operator memfold can write");

  Graph padded = g;
  Attrs attrs;
  attrs.Set("filter", std::vector<int64_t>{2, 2});
  attrs.Set("padding", std::string("explicit"));
  attrs.Set("pads", std::vector<int64_t>{1, 0, 1, 0});
  // An average pool divides by the taps it reads: a PAD before it would count the zeros.
  Result<std::vector<ValueId>> pool = AddOp(&padded, "avg_pool2d", {0}, attrs, "pool");
  ASSERT_TRUE(pool.ok()) << pool.status().message();
  padded.schedule = {1};
  padded.outputs = *pool;
  bytes = GraphToTflite(padded);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().message(),
            "model: node 'pool' has padding 'explicit'; TFLite has only SAME and VALID");
}

// ONNX's symmetric pads before strided windows: written as PAD (zeros, before the convolution)
// and PADV2 (the lowest float, before the max pool), as TFLite's converter writes them; the file
// reads back as that graph and computes the same output.
TEST(TfliteGraphWriter, ExplicitPadsAreWrittenAsPadOperators) {
  GraphBuilder b("pads");
  ValueId x = b.Input("x", {1, 6, 6, 2});
  x = b.Op("conv2d", {x, b.Weight("w", {3, 3, 3, 2}, 0.5f), b.Weight("b", {3}, 0.1f)},
           {{"stride", std::vector<int64_t>{2, 2}},
            {"padding", std::string("explicit")},
            {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  x = b.Op("max_pool2d", {x},
           {{"filter", std::vector<int64_t>{3, 3}},
            {"stride", std::vector<int64_t>{2, 2}},
            {"padding", std::string("explicit")},
            {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  Result<Graph> g = b.Finish({x});
  ASSERT_TRUE(g.ok()) << g.status().message();
  Result<Bytes> bytes = GraphToTflite(*g);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  Result<TfliteModel> back = ParseTflite(*bytes, "pads.tflite");
  ASSERT_TRUE(back.ok()) << back.status().message();
  std::vector<std::string> ops;
  for (NodeId n : back->graph.schedule) ops.push_back(back->graph.node(n).op);
  EXPECT_EQ(ops, (std::vector<std::string>{"pad", "conv2d", "pad", "max_pool2d"}));
  const std::vector<Bytes> inputs = DefaultInputs(*g);
  Result<RunOutputs> original = RunUnplanned(*g, inputs);
  Result<RunOutputs> written = RunUnplanned(back->graph, inputs);
  ASSERT_TRUE(original.ok() && written.ok());
  EXPECT_EQ(original->outputs, written->outputs);
}

}  // namespace
}  // namespace memfold
