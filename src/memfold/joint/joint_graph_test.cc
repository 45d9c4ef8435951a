#include "memfold/joint/joint_graph.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "memfold/ops/registry.h"
#include "memfold/passes/echo.h"
#include "memfold/passes/recompute.h"

namespace memfold {
namespace {

using Json = nlohmann::json;

Json Val(const std::string& name, Shape shape, const std::string& role,
         const std::string& dtype = "float32") {
  return {{"name", name}, {"dtype", dtype}, {"shape", shape}, {"role", role}};
}

// An operator node: `flops` of arithmetic, recomputable unless `recompute` is false.
Json Op(const std::string& target, std::vector<int> inputs, std::vector<int> outputs, bool forward,
        double flops, bool recompute = true) {
  return {{"name", target},     {"target", target}, {"inputs", inputs},      {"outputs", outputs},
          {"forward", forward}, {"flops", flops},   {"recompute", recompute}};
}

Json View(const std::string& target, int input, int output, bool forward) {
  return {{"name", target},      {"target", target},   {"inputs", {input}},
          {"outputs", {output}}, {"forward", forward}, {"view", true}};
}

// x [4, 8] -> mm(x, t(W)) -> relu -> detach (read only by the backward pass, as PyTorch traces a
// non-inplace ReLU): a forward pass and a backward pass that reads the relu output through
// its detach and the product (as batch norm's backward reads its input), and W's gradient from
// mm's input.
Json SmallJoint() {
  Json j = {{"format", "memfold-joint-graph"}, {"version", 2}, {"name", "small"}};
  j["values"] = {Val("W", {16, 8}, "weight"),          Val("x", {4, 8}, "input"),
                 Val("t", {8, 16}, "activation"),      Val("mm", {4, 16}, "activation"),
                 Val("relu", {4, 16}, "activation"),   Val("tangent", {4, 16}, "input"),
                 Val("dmm", {4, 16}, "gradient"),      Val("dW", {16, 8}, "gradient"),
                 Val("detach", {4, 16}, "activation"), Val("sum", {}, "activation")};
  j["nodes"] = {View("aten.t.default", 0, 2, true),
                Op("aten.mm.default", {1, 2}, {3}, true, 2.0 * 4 * 8 * 16),
                Op("aten.relu.default", {3}, {4}, true, 64),
                View("aten.detach.default", 4, 8, true),
                Op("aten.sum.default", {4}, {9}, true, 64),
                Op("aten.threshold_backward.default", {5, 8, 3}, {6}, false, 64),
                Op("aten.mm.default", {6, 1}, {7}, false, 2.0 * 4 * 8 * 16)};
  j["forward_outputs"] = {9};
  j["params"] = {0};
  j["grads"] = {7};
  return j;
}

TEST(JointGraph, ModelsEveryNodeAsMemory) {
  Result<JointGraph> joint = ReadJointGraph(SmallJoint().dump());
  ASSERT_TRUE(joint.ok()) << joint.status().message();
  const Graph& g = joint->graph;
  EXPECT_EQ(joint->training.forward_nodes, 5u);
  EXPECT_EQ(g.node(0).op, "traced_view");
  EXPECT_EQ(g.node(1).op, "traced_op");
  EXPECT_EQ(g.node(1).attrs.Str("target"), "aten.mm.default");
  EXPECT_DOUBLE_EQ(NodeCost(g, g.node(1)).flops, 2.0 * 4 * 8 * 16);
  EXPECT_EQ(g.node(5).op, "traced_op");  // backward operators are modelled the same way
  // The view of a parameter is resolved to the parameter: mm reads W itself.
  EXPECT_EQ(g.node(1).inputs[1], 0);
  EXPECT_EQ(g.value(2).role, Role::kWeight);
  EXPECT_TRUE(joint->kept_forward.empty());
  // Traced types stand: shape checks accept them, whatever the operator.
  EXPECT_TRUE(CheckShapes(g).ok());
}

TEST(JointGraph, EchoRecomputesTheCheapReluThroughItsDetachAndIsNeverWorse) {
  Result<JointGraph> joint = ReadJointGraph(SmallJoint().dump());
  ASSERT_TRUE(joint.ok());
  // The detach is read by the backward pass only (no forward output depends on it), and the
  // relu under it is cheap: Echo recomputes both, and the product stays.
  const std::vector<char> choice = EchoChoice(joint->graph, joint->training);
  EXPECT_TRUE(choice[2] && choice[3]);
  EXPECT_FALSE(choice[1]);
  Result<PlannedTraining> none = PlanJointGraph(*joint, "none");
  Result<PlannedTraining> echo = PlanJointGraph(*joint, "echo");
  ASSERT_TRUE(none.ok() && echo.ok()) << echo.status().message();
  EXPECT_LE(echo->profile.breakdown.total(), none->profile.breakdown.total());
}

TEST(JointGraph, OperatorsThatMustNotRunTwiceAreKept) {
  Json j = SmallJoint();
  j["nodes"][2]["recompute"] = false;  // as a random draw would be
  Result<JointGraph> joint = ReadJointGraph(j.dump());
  ASSERT_TRUE(joint.ok()) << joint.status().message();
  EXPECT_EQ(joint->graph.node(2).op, "aten.relu.default");
  EXPECT_EQ(joint->kept_forward.at("aten.relu.default"), 1);
  EXPECT_FALSE(EchoChoice(joint->graph, joint->training)[2]);
  // A compute-heavy product is never recomputed, whatever else is.
  EXPECT_FALSE(MirrorChoice(joint->graph, joint->training)[1]);
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
  j["version"] = 1;
  EXPECT_NE(message(j).find("version must be 2"), std::string::npos);
  j = SmallJoint();
  j["nodes"][1]["inputs"][0] = 99;
  EXPECT_NE(message(j).find("outside"), std::string::npos);
  j = SmallJoint();
  j["nodes"][4]["forward"] = false;
  j["nodes"][5]["forward"] = true;
  EXPECT_NE(message(j).find("forward node after a backward one"), std::string::npos);
  j = SmallJoint();
  j["values"][3]["dtype"] = "complex64";
  EXPECT_NE(message(j).find("complex64"), std::string::npos);
  j = SmallJoint();
  j["nodes"][2]["inputs"] = {6};  // reads a gradient nothing wrote yet
  EXPECT_NE(message(j).find("before any node writes it"), std::string::npos);
  j = SmallJoint();
  j["values"][1]["shape"] = {-1, 8};
  EXPECT_NE(message(j).find("dimension"), std::string::npos);
  j = SmallJoint();
  j["nodes"][3]["outputs"] = {8, 9};
  EXPECT_NE(message(j).find("exactly one output"), std::string::npos);
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
