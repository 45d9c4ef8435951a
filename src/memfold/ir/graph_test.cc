#include "memfold/ir/graph.h"

#include <gtest/gtest.h>

#include "memfold/ir/verify.h"

namespace memfold {
namespace {

ValueId AddActivation(Graph* g, const std::string& name, Shape shape) {
  Value v;
  v.name = name;
  v.shape = std::move(shape);
  return g->AddValue(std::move(v));
}

// x -> a(relu) -> y(relu): the smallest well-formed graph.
Graph Chain() {
  Graph g;
  const ValueId x = AddActivation(&g, "x", {2, 3});
  const ValueId a = AddActivation(&g, "a", {2, 3});
  const ValueId y = AddActivation(&g, "y", {2, 3});
  g.value(x).role = Role::kInput;
  g.inputs = {x};
  g.AddNode({.op = "relu", .name = "r0", .inputs = {x}, .outputs = {a}});
  g.AddNode({.op = "relu", .name = "r1", .inputs = {a}, .outputs = {y}});
  g.outputs = {y};
  return g;
}

TEST(DType, StorageBytesPacksBits) {
  EXPECT_EQ(StorageBytes(DType::kF32, 10), 40);
  EXPECT_EQ(StorageBytes(DType::kI8, 10), 10);
  EXPECT_EQ(StorageBytes(DType::kBit, 17), 3);  // ceil(17 / 8)
  EXPECT_EQ(ParseDType("i16"), DType::kI16);
  EXPECT_FALSE(ParseDType("f16").has_value());
}

TEST(Graph, ShapeHelpers) {
  EXPECT_EQ(NumElements({}), 1);
  EXPECT_EQ(NumElements({2, 0, 3}), 0);
  EXPECT_EQ(ShapeString({1, 224, 224, 3}), "1x224x224x3");
  EXPECT_EQ(ShapeString({}), "scalar");
}

TEST(Graph, AttrsStaySortedAndTyped) {
  Attrs attrs;
  attrs.Set("zeta", int64_t{3});
  attrs.Set("alpha", std::vector<int64_t>{1, 2});
  attrs.Set("zeta", int64_t{4});
  ASSERT_EQ(attrs.items().size(), 2u);
  EXPECT_EQ(attrs.items()[0].first, "alpha");
  EXPECT_EQ(attrs.Int("zeta"), 4);
  EXPECT_EQ(AttrValueString(*attrs.Find("alpha")), "[1,2]");
  EXPECT_EQ(attrs.Find("missing"), nullptr);
}

TEST(Graph, ConsumersFollowSchedule) {
  Graph g = Chain();
  auto consumers = g.Consumers();
  ASSERT_EQ(consumers[0].size(), 1u);
  EXPECT_EQ(consumers[0][0], 0);
  EXPECT_TRUE(consumers[2].empty());
}

TEST(VerifyGraph, AcceptsChain) { EXPECT_TRUE(VerifyGraph(Chain()).ok()); }

TEST(VerifyGraph, RejectsScheduleThatReadsBeforeProduce) {
  Graph g = Chain();
  g.schedule = {1, 0};
  Status s = VerifyGraph(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("before it is produced"), std::string::npos) << s.message();
}

TEST(VerifyGraph, RejectsCycle) {
  Graph g = Chain();
  g.node(0).inputs = {2};  // r0 reads y, which r1 produces from r0's output
  EXPECT_FALSE(VerifyGraph(g).ok());
}

TEST(VerifyGraph, RejectsScheduleThatIsNotAPermutation) {
  Graph g = Chain();
  g.schedule = {0, 0};
  EXPECT_FALSE(VerifyGraph(g).ok());
}

TEST(VerifyGraph, RejectsConstantOfWrongSize) {
  Graph g = Chain();
  Value w;
  w.name = "w";
  w.shape = {4};
  w.role = Role::kWeight;
  w.data = std::make_shared<Bytes>(12);  // 4 floats need 16 bytes
  g.AddValue(std::move(w));
  EXPECT_FALSE(VerifyGraph(g).ok());
}

TEST(VerifyGraph, RejectsUnfedValue) {
  Graph g = Chain();
  g.inputs.clear();
  g.value(0).role = Role::kActivation;
  EXPECT_FALSE(VerifyGraph(g).ok());
}

TEST(VerifyGraph, RejectsValueProducedTwice) {
  Graph g = Chain();
  g.node(1).outputs = {1};
  EXPECT_FALSE(VerifyGraph(g).ok());
}

}  // namespace
}  // namespace memfold
