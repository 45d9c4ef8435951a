// The operators added for real converter output, as one model written with memfold's TFLite
// writer and read back: every operator survives the file, and the model runs planned (greedy,
// diagonal, best) bit-identically to its unplanned run with every read checked.
#include "tests/vision_ops_model.h"

#include <gtest/gtest.h>

#include <map>

#include "memfold/exec/checked_run.h"
#include "memfold/exec/executor.h"
#include "memfold/exec/overlap_trace.h"
#include "memfold/passes/best_plan.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {
namespace {

class WrittenModel : public ::testing::TestWithParam<int> {
 protected:
  Graph Built() const {
    const int k = GetParam();
    return (k == 0   ? testing::VisionOpsGraph()
            : k == 1 ? testing::MovementOpsGraph()
            : k == 2 ? testing::LogicOpsGraph()
            : k == 3 ? testing::GeometryOpsGraph()
                     : testing::GeometryOpsI8Graph())
        .value();
  }
  Graph Read() const {
    const int k = GetParam();
    return LoadTflite((k == 0   ? testing::VisionOpsFile()
                       : k == 1 ? testing::MovementOpsFile()
                       : k == 2 ? testing::LogicOpsFile()
                       : k == 3 ? testing::GeometryOpsFile()
                                : testing::GeometryOpsI8File())
                          .value(),
                      "written.tflite")
        .value();
  }
};

TEST_P(WrittenModel, EveryOperatorSurvivesTheFile) {
  const Graph built = Built();
  const Graph read = Read();
  std::map<std::string, int> built_ops, read_ops;
  for (NodeId id : built.schedule) ++built_ops[built.node(id).op];
  for (NodeId id : read.schedule) ++read_ops[read.node(id).op];
  EXPECT_EQ(read_ops, built_ops);
  EXPECT_TRUE(OperatorsThatCannotRun(read).empty());
  const std::vector<Bytes> inputs = DefaultInputs(read);
  EXPECT_EQ(RunUnplanned(read, inputs)->outputs, RunUnplanned(built, inputs)->outputs);
}

TEST_P(WrittenModel, RunsPlannedBitIdenticallyUnderEveryPlanner) {
  const Graph g = Read();
  const std::vector<Bytes> inputs = DefaultInputs(g);
  for (const char* planner : {"greedy", "diagonal"}) {
    const GraphPlan gp = PlanGraph(g, planner, {.refine = true}).value();
    const CheckedRun run = RunChecked(g, g, gp.liveness, gp.plan, inputs).value();
    EXPECT_TRUE(run.identical()) << planner;
  }
  const BestPlan best = PlanBest(g, {}).value();
  const CheckedRun run =
      RunChecked(g, best.graph, best.plan.liveness, best.plan.plan, inputs).value();
  EXPECT_TRUE(run.identical());
}

// Every safe-overlap model of these operators replays its kernel's access order exactly: the
// algorithmic O_s equals the traced one, and the analytic bound stays below it.
TEST_P(WrittenModel, OverlapModelsAgreeWithTheTrace) {
  const Graph g = Read();
  const OverlapReport report = AnalyseOverlaps(g);
  std::map<std::string, int> replayed;  // op -> nodes whose replay met the trace
  for (const NodeOverlap& n : report.nodes) {
    const std::string where = g.node(n.node).name + " (" + g.node(n.node).op + ")";
    if (n.algorithmic && n.trace) {
      EXPECT_EQ(*n.algorithmic, *n.trace) << where;
      ++replayed[g.node(n.node).op];
    }
    if (n.analytic && n.trace) {
      EXPECT_LE(*n.analytic, *n.trace) << where;
    }
  }
  if (GetParam() >= 3) {
    for (const char* op :
         {"resize_bilinear", "transpose_conv", "mirror_pad", "space_to_batch_nd",
          "batch_to_space_nd", "cumsum", "l2_normalization", "tflite_batch_matmul"})
      EXPECT_GT(replayed[op], 0) << op;
  }
}

INSTANTIATE_TEST_SUITE_P(VisionMovementLogicGeometry, WrittenModel, ::testing::Range(0, 5));

}  // namespace
}  // namespace memfold
