// Nodes carry their resolved registry row: made through the registry they find it in O(1);
// made without it, or renamed afterwards, they find it by name.
#include "memfold/ops/registry.h"

#include <gtest/gtest.h>

namespace memfold {
namespace {

TEST(Registry, RefusesTensorsOfMoreDimensionsThanKernelsTake) {
  Graph graph;
  const ValueId fine = graph.AddValue(Value{.name = "fine", .shape = Shape(kMaxRank, 1)});
  EXPECT_TRUE(AddOp(&graph, "relu", {fine}).ok());
  const ValueId deep = graph.AddValue(Value{.name = "deep", .shape = Shape(kMaxRank + 1, 1)});
  const auto refused = AddOp(&graph, "relu", {deep});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("rank 9"), std::string::npos)
      << refused.status().message();
}

TEST(Registry, NodesMadeByTheRegistryCarryTheirRow) {
  Graph g;
  const ValueId x = g.AddValue({.name = "x", .dtype = DType::kF32, .shape = {1, 4}});
  g.inputs.push_back(x);
  const Result<std::vector<ValueId>> y = AddOp(&g, "relu", {x}, {}, "act");
  ASSERT_TRUE(y.ok()) << y.status().message();
  const Node& node = g.node(g.value((*y)[0]).producer);
  EXPECT_GE(node.op_row, 0);
  EXPECT_EQ(OpOf(node), FindOp("relu"));

  Node renamed = node;  // a row that no longer matches the name is not trusted
  renamed.op = "tanh";
  EXPECT_EQ(OpOf(renamed), FindOp("tanh"));
  Node by_hand;  // never checked: found by name
  by_hand.op = "sigmoid";
  EXPECT_EQ(by_hand.op_row, -1);
  EXPECT_EQ(OpOf(by_hand), FindOp("sigmoid"));
  by_hand.op = "no such op";
  EXPECT_EQ(OpOf(by_hand), nullptr);
}

}  // namespace
}  // namespace memfold
