#include "memfold/joint/joint_graph.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "memfold/joint/aten_ops.h"
#include "memfold/ops/registry.h"

namespace memfold {
namespace {

using Json = nlohmann::json;

Json Val(const std::string& name, Shape shape, const std::string& role,
         const std::string& dtype = "float32") {
  return {{"name", name}, {"dtype", dtype}, {"shape", shape}, {"role", role}};
}

Json T(int id) { return {{"value", id}}; }

Json NodeJson(const std::string& target, Json args, std::vector<int> outputs, bool forward) {
  return {{"name", target},
          {"target", target},
          {"args", std::move(args)},
          {"outputs", outputs},
          {"forward", forward}};
}

// x [4, 8] -> mm(x, t(W)) -> relu -> sum: a forward pass and a backward pass that reads the
// relu output (threshold_backward), W's gradient from mm's input.
Json SmallJoint() {
  Json j = {{"format", "memfold-joint-graph"}, {"version", 1}, {"name", "small"}};
  j["values"] = {Val("W", {16, 8}, "weight"),        Val("x", {4, 8}, "input"),
                 Val("t", {8, 16}, "activation"),    Val("mm", {4, 16}, "activation"),
                 Val("relu", {4, 16}, "activation"), Val("tangent", {4, 16}, "input"),
                 Val("dmm", {4, 16}, "gradient"),    Val("dW", {16, 8}, "gradient")};
  j["nodes"] = {NodeJson("aten.t.default", {T(0)}, {2}, true),
                NodeJson("aten.mm.default", {T(1), T(2)}, {3}, true),
                NodeJson("aten.relu.default", {T(3)}, {4}, true),
                NodeJson("aten.threshold_backward.default", {T(5), T(4), 0}, {6}, false),
                NodeJson("aten.mm.default", {T(6), T(1)}, {7}, false)};
  j["forward_outputs"] = {4};
  j["params"] = {0};
  j["grads"] = {7};
  return j;
}

TEST(JointGraph, TranslatesKnownOpsAndKeepsUnknownOnesOpaque) {
  Result<JointGraph> joint = ReadJointGraph(SmallJoint().dump());
  ASSERT_TRUE(joint.ok()) << joint.status().message();
  const Graph& g = joint->graph;
  EXPECT_EQ(joint->training.forward_nodes, 3u);
  EXPECT_EQ(g.node(0).op, "reshape");  // t: a view
  EXPECT_EQ(g.node(1).op, "matmul");
  EXPECT_EQ(g.node(2).op, "relu");
  EXPECT_EQ(g.node(3).op, "aten.threshold_backward.default");  // unknown: opaque
  EXPECT_EQ(g.node(3).attrs.Str("recompute"), "never");
  // The view of a parameter is resolved to the parameter: mm reads W itself.
  EXPECT_EQ(g.node(1).inputs[1], 0);
  EXPECT_EQ(g.value(2).role, Role::kWeight);
  EXPECT_EQ(joint->mapped_forward, 3);
  EXPECT_TRUE(joint->opaque_forward.empty());
}

TEST(JointGraph, EchoRecomputesTheCheapReluAndThePlanIsNeverWorse) {
  Result<JointGraph> joint = ReadJointGraph(SmallJoint().dump());
  ASSERT_TRUE(joint.ok());
  Result<PlannedTraining> none = PlanJointGraph(*joint, "none");
  Result<PlannedTraining> echo = PlanJointGraph(*joint, "echo");
  ASSERT_TRUE(none.ok() && echo.ok()) << echo.status().message();
  EXPECT_LE(echo->profile.breakdown.total(), none->profile.breakdown.total());
  ASSERT_EQ(echo->recomputed.size(), 5u);
  EXPECT_FALSE(echo->recomputed[1]);  // the product is compute-heavy
  if (echo->chosen_strategy == "none") {
    EXPECT_TRUE(echo->fell_back);
  } else {
    EXPECT_TRUE(echo->recomputed[2]);  // relu's output is rebuilt from mm's, which is kept
  }
}

TEST(JointGraph, RefusesMalformedFilesWithAMessage) {
  auto message = [](const Json& j) {
    Result<JointGraph> r = ReadJointGraph(j.dump());
    return r.ok() ? std::string("accepted") : r.status().message();
  };
  EXPECT_NE(ReadJointGraph("{not json").status().message().find("not valid JSON"),
            std::string::npos);
  Json j = SmallJoint();
  j["format"] = "other";
  EXPECT_NE(message(j).find("not a joint graph"), std::string::npos);
  j = SmallJoint();
  j["nodes"][1]["args"][0] = T(99);
  EXPECT_NE(message(j).find("outside"), std::string::npos);
  j = SmallJoint();
  j["nodes"][2]["forward"] = false;
  j["nodes"][3]["forward"] = true;
  EXPECT_NE(message(j).find("forward node after a backward one"), std::string::npos);
  j = SmallJoint();
  j["values"][3]["dtype"] = "complex64";
  EXPECT_NE(message(j).find("complex64"), std::string::npos);
  j = SmallJoint();
  j["nodes"][2]["args"] = {T(6)};  // reads a gradient nothing wrote yet
  EXPECT_NE(message(j).find("before any node writes it"), std::string::npos);
  j = SmallJoint();
  j["values"][1]["shape"] = {-1, 8};
  EXPECT_NE(message(j).find("dimension"), std::string::npos);
}

// Every mapped target, with arguments as AOTAutograd traces them: the translation names the
// memfold op and the registry accepts it with the traced types.
struct Case {
  std::string target;
  Json args;
  std::vector<Shape> inputs;  // values 0.. of the graph
  Shape output;
  std::string op;
};

TEST(AtenOps, EveryMappedTargetTranslatesToAnOpTheRegistryAccepts) {
  const std::vector<Case> cases = {
      {"aten.relu.default", {T(0)}, {{2, 3}}, {2, 3}, "relu"},
      {"aten.tanh.default", {T(0)}, {{2, 3}}, {2, 3}, "tanh"},
      {"aten.sigmoid.default", {T(0)}, {{2, 3}}, {2, 3}, "sigmoid"},
      {"aten.exp.default", {T(0)}, {{2, 3}}, {2, 3}, "exp"},
      {"aten.neg.default", {T(0)}, {{2, 3}}, {2, 3}, "neg"},
      {"aten.hardswish.default", {T(0)}, {{2, 3}}, {2, 3}, "hard_swish"},
      {"aten.hardtanh.default", {T(0), 0.0, 6.0}, {{2, 3}}, {2, 3}, "relu6"},
      {"aten.silu.default", {T(0)}, {{2, 3}}, {2, 3}, "silu"},
      {"aten.gelu.default", {T(0)}, {{2, 3}}, {2, 3}, "gelu"},
      {"aten.add.Tensor", {T(0), T(1)}, {{2, 3}, {3}}, {2, 3}, "add"},
      {"aten.add.Scalar", {T(0), 2.0}, {{2, 3}}, {2, 3}, "add"},
      {"aten.sub.Tensor", {T(0), T(1)}, {{2, 3}, {2, 3}}, {2, 3}, "sub"},
      {"aten.sub.Scalar", {T(0), 1}, {{2, 3}}, {2, 3}, "sub"},
      {"aten.mul.Tensor", {T(0), 0.5}, {{2, 3}}, {2, 3}, "mul"},
      {"aten.mul.Scalar", {T(0), 3}, {{2, 3}}, {2, 3}, "mul"},
      {"aten.div.Tensor", {T(0), T(1)}, {{2, 3}, {2, 1}}, {2, 3}, "div"},
      {"aten.div.Scalar", {T(0), 0.9}, {{2, 3}}, {2, 3}, "div"},
      {"aten.maximum.default", {T(0), T(1)}, {{2, 3}, {2, 3}}, {2, 3}, "max"},
      {"aten.minimum.default", {T(0), T(1)}, {{2, 3}, {2, 3}}, {2, 3}, "min"},
      {"aten.mm.default", {T(0), T(1)}, {{2, 3}, {3, 5}}, {2, 5}, "matmul"},
      {"aten.bmm.default", {T(0), T(1)}, {{4, 2, 3}, {4, 3, 5}}, {4, 2, 5}, "batch_matmul"},
      {"aten.addmm.default", {T(2), T(0), T(1)}, {{2, 3}, {3, 5}, {5}}, {2, 5}, "matmul"},
      {"aten.cat.default", {{{"values", {0, 1}}}, 1}, {{2, 3}, {2, 4}}, {2, 7}, "concat"},
      {"aten.clone.default", {T(0)}, {{2, 3}}, {2, 3}, "broadcast_to"},
      {"aten._softmax.default", {T(0), -1, false}, {{2, 3}}, {2, 3}, "softmax"},
      {"aten.mean.dim", {T(0), {1}, true}, {{2, 3}}, {2, 1}, "mean"},
      {"aten.sum.dim_IntList", {T(0), {0}, false}, {{2, 3}}, {3}, "reduce_sum"},
      {"aten.view.default", {T(0), {6}}, {{2, 3}}, {6}, "reshape"},
      {"aten._unsafe_view.default", {T(0), {3, 2}}, {{2, 3}}, {3, 2}, "reshape"},
      {"aten._reshape_alias.default", {T(0), {6}, {1}}, {{2, 3}}, {6}, "reshape"},
      {"aten.reshape.default", {T(0), {6}}, {{2, 3}}, {6}, "reshape"},
      {"aten.t.default", {T(0)}, {{2, 3}}, {3, 2}, "reshape"},
      {"aten.transpose.int", {T(0), 0, 1}, {{2, 3}}, {3, 2}, "reshape"},
      {"aten.permute.default", {T(0), {1, 0}}, {{2, 3}}, {3, 2}, "reshape"},
      {"aten.unsqueeze.default", {T(0), 0}, {{2, 3}}, {1, 2, 3}, "reshape"},
      {"aten.squeeze.dim", {T(0), 0}, {{1, 3}}, {3}, "reshape"},
      {"aten.squeeze.default", {T(0)}, {{1, 3}}, {3}, "reshape"},
      {"aten.alias.default", {T(0)}, {{2, 3}}, {2, 3}, "reshape"},
      {"aten.detach.default", {T(0)}, {{2, 3}}, {2, 3}, "reshape"},
  };
  std::vector<std::string> covered;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.target);
    Graph g;
    for (const Shape& s : c.inputs) {
      Value v;
      v.shape = s;
      v.role = c.target == "aten.addmm.default" && g.num_values() == 2 ? Role::kWeight
                                                                       : Role::kActivation;
      g.AddValue(v);
    }
    Value out;
    out.shape = c.output;
    const ValueId out_id = g.AddValue(out);
    std::optional<AtenTranslation> t = TranslateAten(&g, c.target, c.args, {out_id});
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->op, c.op);
    Node node{.op = t->op, .inputs = t->inputs, .outputs = {out_id}, .attrs = t->attrs};
    ASSERT_TRUE(CheckAndFillAttrs(*FindOp(t->op), &node).ok());
    Result<std::vector<TensorType>> types = InferNode(g, node);
    ASSERT_TRUE(types.ok()) << types.status().message();
    EXPECT_EQ(NumElements((*types)[0].shape), NumElements(c.output));
    covered.push_back(c.target);
  }
  // Batch and layer norm need several outputs and embedding integer ids: the reader tests
  // them below. Every other mapped target has a case here.
  covered.push_back("aten.embedding.default");
  covered.push_back("aten.native_batch_norm.default");
  covered.push_back("aten.native_layer_norm.default");
  std::sort(covered.begin(), covered.end());
  EXPECT_EQ(covered, MappedAtenTargets());
}

TEST(AtenOps, ArgumentsOutsideTheTableStayOpaque) {
  Graph g;
  Value v;
  v.shape = {2, 3};
  const ValueId a = g.AddValue(v), b = g.AddValue(v), out = g.AddValue(v);
  EXPECT_FALSE(TranslateAten(&g, "aten.erf.default", {T(a)}, {out}));
  EXPECT_FALSE(TranslateAten(&g, "aten.hardtanh.default", {T(a), 0.0, 20.0}, {out}));
  EXPECT_FALSE(TranslateAten(&g, "aten.gelu.default", {T(a), "tanh"}, {out}));
  EXPECT_FALSE(TranslateAten(&g, "aten.add.Tensor", {T(a), T(b), 2}, {out}));  // alpha 2
  EXPECT_FALSE(TranslateAten(&g, "aten.addmm.default", {T(a), T(a), T(b)}, {out}));
  EXPECT_FALSE(TranslateAten(&g, "aten.relu.default", Json::object(), {out}));
}

TEST(JointGraph, MultiOutputAndIndexOpsMapWithTracedTypes) {
  Json j = {{"format", "memfold-joint-graph"}, {"version", 1}};
  j["values"] = {Val("x", {2, 3, 4, 4}, "input"),
                 Val("w", {3}, "weight"),
                 Val("b", {3}, "weight"),
                 Val("rm", {3}, "state"),
                 Val("rv", {3}, "state"),
                 Val("y", {2, 3, 4, 4}, "activation"),
                 Val("mean", {3}, "activation"),
                 Val("invstd", {3}, "activation"),
                 Val("h", {2, 5, 6}, "input"),
                 Val("g", {6}, "weight"),
                 Val("beta", {6}, "weight"),
                 Val("ln", {2, 5, 6}, "activation"),
                 Val("lmean", {2, 5, 1}, "activation"),
                 Val("lrstd", {2, 5, 1}, "activation"),
                 Val("table", {10, 4}, "weight"),
                 Val("ids", {2, 5}, "input", "int64"),
                 Val("rows", {2, 5, 4}, "activation")};
  j["nodes"] = {NodeJson("aten.native_batch_norm.default",
                         {T(0), T(1), T(2), T(3), T(4), true, 0.1, 1e-5}, {5, 6, 7}, true),
                NodeJson("aten.native_layer_norm.default", {T(8), {6}, T(9), T(10), 1e-5},
                         {11, 12, 13}, true),
                NodeJson("aten.embedding.default", {T(14), T(15)}, {16}, true)};
  j["forward_outputs"] = {5, 11, 16};
  Result<JointGraph> joint = ReadJointGraph(j.dump());
  ASSERT_TRUE(joint.ok()) << joint.status().message();
  const Node& bn = joint->graph.node(0);
  EXPECT_EQ(bn.op, "batch_norm_train");
  EXPECT_EQ(bn.attrs.Int("axis"), 1);
  EXPECT_DOUBLE_EQ(bn.attrs.Float("momentum"), 0.9);
  EXPECT_EQ(joint->graph.node(1).op, "layer_norm");
  EXPECT_EQ(joint->graph.value(12).shape, (Shape{10}));  // same bytes, memfold's shape
  EXPECT_EQ(joint->graph.node(2).op, "gather");          // PyTorch's int64 indices
}

// Every leaf of a valid file replaced by each of a set of hostile values: reading (and, when
// the file is still accepted, planning under every strategy) ends in a result or a message,
// never a crash or an out-of-bounds access (the sanitizer build runs this too).
void ForEachLeaf(Json* j, const std::function<void()>& visit) {
  if (j->is_object() || j->is_array()) {
    for (auto& child : *j) ForEachLeaf(&child, visit);
    return;
  }
  const Json original = *j;
  for (const Json& hostile : {Json(-1), Json(0), Json(int64_t{1} << 40), Json(3.5), Json("x"),
                              Json(nullptr), Json::array(), Json::object(), Json(true)}) {
    *j = hostile;
    visit();
  }
  *j = original;
}

TEST(JointGraph, HostileLeavesNeverCrashTheReaderOrThePlanner) {
  Json file = SmallJoint();
  int accepted = 0, refused = 0;
  ForEachLeaf(&file, [&] {
    Result<JointGraph> joint = ReadJointGraph(file.dump());
    if (!joint.ok()) {
      EXPECT_FALSE(joint.status().message().empty());
      ++refused;
      return;
    }
    ++accepted;
    for (const char* strategy : {"none", "mirror", "echo"}) {
      Result<PlannedTraining> p = PlanJointGraph(*joint, strategy);
      if (!p.ok()) {
        EXPECT_FALSE(p.status().message().empty());
      }
    }
  });
  EXPECT_GT(refused, 50);
  EXPECT_GT(accepted, 10);  // e.g. other names and scalar arguments are still valid files
}

}  // namespace
}  // namespace memfold
