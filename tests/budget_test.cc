// The memory-budget choice (passes/budget.h) on memfold's own tiny training graphs: it fits
// every budget that recomputing everything allowed fits, never recomputes what must not run
// twice, recomputes less than Echo when the budget leaves room, and the graphs it makes train
// with the same gradients as the baseline, bit for bit (checked planned steps).
#include "memfold/passes/budget.h"

#include <gtest/gtest.h>

#include "memfold/exec/training.h"
#include "memfold/io/sha256.h"
#include "memfold/ops/registry.h"
#include "memfold/passes/echo.h"
#include "memfold/passes/recompute.h"
#include "memfold/passes/stash_model.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {
namespace {

struct Step {
  Graph graph;
  TrainingGraph training;
};

Step Load(const std::string& name) {
  Step s{LoadModel(name).value(), {}};
  s.training = BuildTrainingGraph(&s.graph).value();
  return s;
}

double Flops(const Graph& g, const std::vector<char>& choice) {
  double flops = 0;
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    if (choice[static_cast<size_t>(id)]) flops += NodeCost(g, g.node(id)).flops;
  }
  return flops;
}

// Every forward node that may run twice.
std::vector<char> Everything(const Graph& g, const TrainingGraph& t) {
  std::vector<char> all(static_cast<size_t>(g.num_nodes()), 0);
  for (size_t pos = 0; pos < t.forward_nodes; ++pos) {
    const NodeId id = g.schedule[pos];
    all[static_cast<size_t>(id)] = !MustNotRecompute(g, g.node(id));
  }
  return all;
}

// The gradients of two checked planned steps of the graph with `choice` recomputed.
std::string Gradients(Step s, const std::vector<char>& choice) {
  EXPECT_TRUE(ApplyRecomputation(&s.graph, s.training, choice).ok());
  Result<GraphPlan> plan = PlanGraph(s.graph, "mxnet");
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  Trainer trainer(s.graph, s.training.grads, *plan);
  const std::vector<Bytes> inputs = TrainingInputs(s.graph);
  EXPECT_TRUE(trainer.Step(inputs).ok());
  Result<StepResult> second = trainer.Step(inputs);
  EXPECT_TRUE(second.ok()) << second.status().message();
  return second.ok() ? Sha256Hex(second->gradients) : "";
}

class Budget : public ::testing::TestWithParam<std::string> {};

TEST_P(Budget, FitsWhatRecomputingEverythingFitsWithFewerFlops) {
  const Step s = Load(GetParam());
  const StashModel stash(s.graph, s.training);
  const std::vector<char> echo = EchoChoice(s.graph, s.training);
  const std::vector<char> all = Everything(s.graph, s.training);
  const int64_t echo_bytes = stash.TotalKeptBytes(echo);
  const int64_t floor = stash.TotalKeptBytes(all);
  ASSERT_LT(floor, echo_bytes);
  for (int64_t budget : {2 * echo_bytes, echo_bytes, (echo_bytes + floor) / 2, floor}) {
    SCOPED_TRACE(budget);
    const std::vector<char> choice = BudgetChoice(s.graph, s.training, budget);
    EXPECT_LE(stash.TotalKeptBytes(choice), budget);
    for (NodeId id = 0; id < s.graph.num_nodes(); ++id) {
      if (choice[static_cast<size_t>(id)]) {
        EXPECT_FALSE(MustNotRecompute(s.graph, s.graph.node(id))) << s.graph.node(id).name;
      }
    }
    if (budget >= echo_bytes) {
      EXPECT_LE(Flops(s.graph, choice), Flops(s.graph, echo));
    }
  }
  // Far below anything recomputation reaches: the smallest set found, still no worse than
  // recomputing everything by much, and never above Echo.
  const std::vector<char> tightest = BudgetChoice(s.graph, s.training, 0);
  EXPECT_LE(stash.TotalKeptBytes(tightest), echo_bytes);
}

TEST_P(Budget, GraphsTrainWithTheBaselinesGradients) {
  const Step s = Load(GetParam());
  const StashModel stash(s.graph, s.training);
  const int64_t floor = stash.TotalKeptBytes(Everything(s.graph, s.training));
  const std::vector<char> none(static_cast<size_t>(s.graph.num_nodes()), 0);
  EXPECT_EQ(Gradients(s, BudgetChoice(s.graph, s.training, floor)), Gradients(s, none));
}

INSTANTIATE_TEST_SUITE_P(TinyModels, Budget,
                         ::testing::Values("zoo:nmt,size=tiny", "zoo:transformer,size=tiny",
                                           "zoo:resnet,size=tiny"),
                         [](const ::testing::TestParamInfo<std::string>& model) {
                           return model.param.substr(4, model.param.find(',') - 4);
                         });

}  // namespace
}  // namespace memfold
