// Optimizer updates run as soon as their gradient is ready, and never before a reader of the
// parameter they overwrite.
#include "memfold/passes/update_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "memfold/ops/registry.h"
#include "memfold/passes/gradient.h"
#include "memfold/pipeline/model_loader.h"

namespace memfold {
namespace {

bool IsUpdate(const Graph& g, NodeId id) { return !FindOp(g.node(id).op)->updates_input.empty(); }

Graph TrainingGraphOf(const std::string& model) {
  Graph g = std::move(LoadModel(model)).value();
  EXPECT_TRUE(BuildTrainingGraph(&g).ok());
  return g;
}

// Each update directly follows the last node it depends on (other updates aside): the producer
// of its gradient or the last reader of its parameter.
TEST(UpdateSchedule, UpdatesFollowTheirLastDependency) {
  const Graph g = TrainingGraphOf("zoo:resnet,size=tiny");
  const std::vector<std::vector<NodeId>> readers = g.Consumers();
  std::vector<size_t> position(static_cast<size_t>(g.num_nodes()));
  for (size_t pos = 0; pos < g.schedule.size(); ++pos)
    position[static_cast<size_t>(g.schedule[pos])] = pos;
  size_t updates = 0, first_update = g.schedule.size(), last_other = 0;
  for (size_t pos = 0; pos < g.schedule.size(); ++pos) {
    const NodeId u = g.schedule[pos];
    if (!IsUpdate(g, u)) {
      last_other = pos;
      continue;
    }
    ++updates;
    first_update = std::min(first_update, pos);
    size_t last = 0;
    for (ValueId in : g.node(u).inputs) {
      if (g.value(in).producer != kNoNode)
        last = std::max(last, position[static_cast<size_t>(g.value(in).producer)]);
    }
    for (NodeId r : readers[static_cast<size_t>(g.node(u).inputs[0])]) {
      if (r != u) last = std::max(last, position[static_cast<size_t>(r)]);
    }
    for (size_t between = last + 1; between < pos; ++between) {
      EXPECT_TRUE(IsUpdate(g, g.schedule[between]))
          << g.node(u).name << " waits behind " << g.node(g.schedule[between]).name;
    }
  }
  EXPECT_GT(updates, 10u);
  EXPECT_LT(first_update,
            last_other);  // the last layer's update runs before the first layer's backward
  EXPECT_EQ(FirstReadAfterUpdate(g), "");
}

// Moving an update in front of a reader of its parameter is caught.
TEST(UpdateSchedule, ReadAfterUpdateIsFound) {
  Graph g = TrainingGraphOf("zoo:resnet,size=tiny");
  const std::vector<std::vector<NodeId>> readers = g.Consumers();
  for (size_t pos = 0; pos < g.schedule.size(); ++pos) {
    const NodeId u = g.schedule[pos];
    if (!IsUpdate(g, u)) continue;
    const NodeId forward_reader = readers[static_cast<size_t>(g.node(u).inputs[0])].front();
    g.schedule.erase(g.schedule.begin() + static_cast<std::ptrdiff_t>(pos));
    const auto at = std::find(g.schedule.begin(), g.schedule.end(), forward_reader);
    g.schedule.insert(at, u);
    EXPECT_NE(FirstReadAfterUpdate(g), "");
    return;
  }
  FAIL() << "no update node";
}

}  // namespace
}  // namespace memfold
