// Tests of operation splitting (passes/split) and of the copy-free views it relies on
// (plan/liveness: view concat and view slice). Every split graph is planned, verified and run
// in its arena, and its outputs compared bit for bit with the unsplit graph's.
#include <gtest/gtest.h>

#include "memfold/exec/checked_run_test_util.h"
#include "memfold/exec/executor.h"
#include "memfold/ops/builder.h"
#include "memfold/ops/registry.h"
#include "memfold/passes/quantize.h"
#include "memfold/passes/split_search.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/placement/verify_plan.h"
#include "memfold/plan/overlap_allowances.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {
namespace {

Attrs ViewConcat(int64_t axis, int64_t view) {
  Attrs attrs;
  attrs.Set("axis", axis);
  attrs.Set("view", view);
  return attrs;
}

// input 1x6x5x3 -> two convs (1x6x5x4 each) -> concat along `axis` -> 1x1 conv, stride 2.
Graph TwoConvConcat(int64_t axis, int64_t view, bool first_conv_is_output = false) {
  GraphBuilder b("two_conv_concat");
  const ValueId x = b.Input("x", {1, 6, 5, 3});
  const ValueId a =
      b.Op("conv2d", {x, b.LayerWeight("wa", {4, 3, 3, 3}, 27)}, ConvAttrs(1, "none"), "a");
  const ValueId c =
      b.Op("conv2d", {x, b.LayerWeight("wc", {4, 1, 1, 3}, 3)}, ConvAttrs(1, "relu"), "c");
  const ValueId joined = b.Op("concat", {a, c}, ViewConcat(axis, view), "join");
  const ValueId y = b.Op("conv2d", {joined, b.LayerWeight("wy", {4, 1, 1, b.shape(joined)[3]}, 4)},
                         ConvAttrs(2, "none"), "y");
  std::vector<ValueId> outputs{y};
  if (first_conv_is_output) outputs.push_back(a);
  Result<Graph> graph = b.Finish(outputs);
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  return std::move(graph).value();
}

ValueId ValueNamed(const Graph& graph, const std::string& name) {
  for (ValueId v = 0; v < graph.num_values(); ++v) {
    if (graph.value(v).name == name) return v;
  }
  ADD_FAILURE() << "no value " << name;
  return kNoValue;
}

// Plans `graph` with `planner` (PlanGraph verifies), re-verifies, and runs it in the arena,
// checked read by read against `original` run unplanned (values of the same id, band values
// against their rows of the unsplit value).
void ExpectRunsLike(const Graph& graph, const Graph& original, const std::string& planner) {
  Result<GraphPlan> plan = PlanGraph(graph, planner);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_TRUE(VerifyPlan(plan->liveness.requests, plan->plan).ok());
  EXPECT_TRUE(RunsIdentically(original, graph, plan->liveness, plan->plan, DefaultInputs(graph)))
      << planner;
}

int32_t PositionNamed(const Graph& graph, const std::string& name) {
  for (size_t pos = 0; pos < graph.schedule.size(); ++pos) {
    if (graph.node(graph.schedule[pos]).name == name) return static_cast<int32_t>(pos);
  }
  ADD_FAILURE() << "no node " << name;
  return -1;
}

// Split graphs are where the placement heuristics scatter: MobileNet v2 0.35/96 int8 with its
// second and third blocks in bands plans to 55,296 B by every placement order, while the
// overlap-aware bound is 39,168 B. The order search reaches the bound; the plan verifies and
// runs bit-identically.
TEST(RefinePlan, ReachesTheBoundTheHeuristicsMiss) {
  const Graph model = std::move(LoadModel("zoo:mobilenet_v2,alpha=0.35,res=96,dtype=i8")).value();
  auto split_block = [](const Graph& g, const std::string& block, int32_t tiles) {
    return std::move(SplitRegion(g, {PositionNamed(g, block + "/expand"),
                                     PositionNamed(g, block + "/project"), tiles, true}))
        .value();
  };
  const Graph graph = split_block(split_block(model, "expanded_conv_1", 8), "expanded_conv_2", 4);
  Result<GraphPlan> heuristic = PlanGraph(graph, "smallest");
  Result<GraphPlan> refined = PlanGraph(graph, "smallest", {.refine = true});
  ASSERT_TRUE(heuristic.ok() && refined.ok());
  EXPECT_EQ(heuristic->plan.arena_bytes, 55'296);
  EXPECT_EQ(refined->plan.arena_bytes, 39'168);
  EXPECT_EQ(refined->lower_bound, 39'168);
  EXPECT_EQ(refined->plan.planner, "diagonal_search");
  ASSERT_TRUE(VerifyPlan(refined->liveness.requests, refined->plan).ok());
  EXPECT_TRUE(
      RunsIdentically(model, graph, refined->liveness, refined->plan, DefaultInputs(model)));
  // At the bound already: nothing to search, the plan stays as it is.
  GraphPlan again = *refined;
  ASSERT_TRUE(RefinePlan(graph, &again).ok());
  EXPECT_EQ(again.plan.offsets, refined->plan.offsets);
}

TEST(CopyFreeConcat, InputsLiveInsideTheOutputAtTheirOffsets) {
  const Graph graph = TwoConvConcat(/*axis=*/1, /*view=*/1);
  const Liveness live = ComputeLiveness(graph);
  const ValueId a = ValueNamed(graph, "a"), c = ValueNamed(graph, "c"),
                join = ValueNamed(graph, "join");
  EXPECT_EQ(live.buffer_of[a], live.buffer_of[join]);
  EXPECT_EQ(live.buffer_of[c], live.buffer_of[join]);
  EXPECT_EQ(ViewOffset(live, a), 0);
  EXPECT_EQ(ViewOffset(live, c), graph.value(a).bytes());
  EXPECT_TRUE(live.copy_free[graph.value(join).producer]);
  // The output's buffer is live from the first input's production (node time 1).
  EXPECT_EQ(live.requests[live.buffer_of[join]].first, 1);
  const Graph reference = TwoConvConcat(1, 0);
  for (const char* planner : {"greedy", "diagonal", "naive", "mxnet"})
    ExpectRunsLike(graph, reference, planner);
}

TEST(CopyFreeConcat, SavesTheInputsBytes) {
  Result<GraphPlan> copying = PlanGraph(TwoConvConcat(1, 0), "greedy");
  Result<GraphPlan> viewing = PlanGraph(TwoConvConcat(1, 1), "greedy");
  ASSERT_TRUE(copying.ok() && viewing.ok());
  EXPECT_LT(viewing->plan.arena_bytes, copying->plan.arena_bytes);
}

TEST(CopyFreeConcat, OnlyWhenSafe) {
  // Not asked for.
  const Graph plain = TwoConvConcat(1, 0);
  EXPECT_FALSE(ComputeLiveness(plain).copy_free[plain.value(ValueNamed(plain, "join")).producer]);
  // An input that is also a graph output keeps its own buffer; the other input is still
  // written in place, and the concat copies only the first.
  const Graph exposed = TwoConvConcat(1, 1, /*first_conv_is_output=*/true);
  const Liveness live = ComputeLiveness(exposed);
  const ValueId join = ValueNamed(exposed, "join");
  EXPECT_FALSE(live.copy_free[exposed.value(join).producer]);
  EXPECT_NE(live.buffer_of[ValueNamed(exposed, "a")], live.buffer_of[join]);
  EXPECT_EQ(live.buffer_of[ValueNamed(exposed, "c")], live.buffer_of[join]);
  ExpectRunsLike(exposed, TwoConvConcat(1, 0, true), "greedy");
  const Graph exposed_channels = TwoConvConcat(3, 1, true);
  EXPECT_EQ(
      ViewRows(ComputeLiveness(exposed_channels), ValueNamed(exposed_channels, "c")).row_bytes, 16);
  for (const char* planner : {"greedy", "diagonal"})
    ExpectRunsLike(exposed_channels, TwoConvConcat(3, 0, true), planner);
}

// A concat whose output an optimizer updates in place (its velocity slot) keeps its inputs:
// the update gives the output persistent storage of its own.
TEST(CopyFreeConcat, NotWhenTheOutputIsUpdatedInPlace) {
  GraphBuilder b("updated");
  const ValueId x = b.Input("x", {2, 3});
  const ValueId a = b.Op("relu", {x}, {}, "a"), c = b.Op("relu", {x}, {}, "c");
  const ValueId joined = b.Op("concat", {a, c}, ViewConcat(1, 1), "join");
  const ValueId w = b.Input("w", {2, 6}), g = b.Input("g", {2, 6});
  Result<Graph> built = b.Finish({b.Op("sgd_momentum", {w, g, joined}, {}, "update")});
  ASSERT_TRUE(built.ok()) << built.status().message();
  const Liveness live = ComputeLiveness(*built);
  EXPECT_FALSE(live.copy_free[built->value(joined).producer]);
  EXPECT_NE(live.buffer_of[a], live.buffer_of[joined]);
}

// Along the channel axis the inputs interleave: each lies in rows of the output (its 4
// channels of every 8-channel pixel), and its convolution writes them there.
TEST(CopyFreeConcat, ChannelInputsLieInRowsOfTheOutput) {
  const Graph graph = TwoConvConcat(/*axis=*/3, /*view=*/1);
  const Liveness live = ComputeLiveness(graph);
  const ValueId a = ValueNamed(graph, "a"), c = ValueNamed(graph, "c"),
                join = ValueNamed(graph, "join");
  EXPECT_TRUE(live.copy_free[graph.value(join).producer]);
  EXPECT_EQ(live.buffer_of[a], live.buffer_of[join]);
  EXPECT_EQ(live.buffer_of[c], live.buffer_of[join]);
  EXPECT_EQ(ViewOffset(live, a), 0);
  EXPECT_EQ(ViewOffset(live, c), 16);
  for (ValueId v : {a, c}) {
    EXPECT_EQ(ViewRows(live, v).row_bytes, 16);
    EXPECT_EQ(ViewRows(live, v).stride_bytes, 32);
  }
  EXPECT_EQ(ViewRows(live, join).row_bytes, 0);
  const Graph reference = TwoConvConcat(3, 0);
  for (const char* planner : {"greedy", "diagonal", "naive", "mxnet"})
    ExpectRunsLike(graph, reference, planner);
  Result<GraphPlan> copying = PlanGraph(TwoConvConcat(3, 0), "greedy");
  Result<GraphPlan> viewing = PlanGraph(graph, "greedy");
  ASSERT_TRUE(copying.ok() && viewing.ok());
  EXPECT_LT(viewing->plan.arena_bytes, copying->plan.arena_bytes);
}

// Batches and the BLAS products: a batch of 2 concatenated along channels (axis -1), matrix
// products written in rows by sgemm's leading dimension (concat along the last axis: one
// product row per output row, one of them transposed) and in runs of rows (batch_matmul
// concatenated along its rows axis: two product rows per output row).
TEST(CopyFreeConcat, BatchesAndMatrixProductsWriteTheirRows) {
  auto build = [](int64_t view) {
    GraphBuilder b("rows_everywhere");
    const ValueId x = b.Input("x", {2, 4, 3, 3});
    const ValueId a =
        b.Op("conv2d", {x, b.LayerWeight("wa", {2, 3, 3, 3}, 27)}, ConvAttrs(1, "none"), "a");
    const ValueId c = b.Op("relu", {x}, {}, "c");
    const ValueId channels = b.Op("concat", {a, c}, ViewConcat(-1, view), "channels");
    const ValueId m = b.Input("m", {6, 5});
    const ValueId p = b.Op("matmul", {m, b.Weight("w1", {5, 4}, 0.5f)}, {}, "p");
    Attrs transposed;
    transposed.Set("transpose_a", int64_t{1});
    const ValueId mt = b.Input("mt", {5, 6});
    const ValueId q = b.Op("matmul", {mt, b.Weight("w2", {5, 6}, 0.5f)}, transposed, "q");
    const ValueId columns = b.Op("concat", {p, q}, ViewConcat(1, view), "columns");
    const ValueId t = b.Input("t", {3, 2, 4});
    const ValueId u = b.Op("batch_matmul", {t, b.Weight("w3", {3, 4, 3}, 0.5f)}, {}, "u");
    const ValueId v = b.Op("batch_matmul", {t, b.Weight("w4", {3, 4, 3}, 0.5f)}, {}, "v");
    const ValueId rows = b.Op("concat", {u, v}, ViewConcat(1, view), "rows");
    auto out = [&](ValueId value, const std::string& name) {
      return b.Op("relu", {value}, {}, name);
    };
    return std::move(b.Finish({out(channels, "y1"), out(columns, "y2"), out(rows, "y3")})).value();
  };
  const Graph graph = build(1);
  const Liveness live = ComputeLiveness(graph);
  EXPECT_EQ(ViewRows(live, ValueNamed(graph, "a")).row_bytes, 8);      // 2 channels
  EXPECT_EQ(ViewRows(live, ValueNamed(graph, "p")).stride_bytes, 40);  // 4 + 6 columns
  EXPECT_EQ(ViewRows(live, ValueNamed(graph, "q")).row_bytes, 24);
  EXPECT_EQ(ViewRows(live, ValueNamed(graph, "u")).row_bytes, 24);  // 2 x 3 per batch
  for (const char* concat : {"channels", "columns", "rows"})
    EXPECT_TRUE(live.copy_free[graph.value(ValueNamed(graph, concat)).producer]) << concat;
  const Graph reference = build(0);
  for (const char* planner : {"greedy", "diagonal"}) ExpectRunsLike(graph, reference, planner);
}

// x -> relu r -> 1x1 conv a (r dies there) and x -> conv c; concat(a, c). Copying, a's
// buffer may overlap r diagonally; written in rows of the concat it may not: O_s assumes a
// contiguous output.
TEST(CopyFreeConcat, RowsGetNoDiagonalOverlap) {
  auto build = [](int64_t axis, int64_t view) {
    GraphBuilder b("rows");
    const ValueId x = b.Input("x", {1, 6, 5, 4});
    const ValueId r = b.Op("relu", {x}, {}, "r");
    const ValueId a =
        b.Op("conv2d", {r, b.LayerWeight("wa", {4, 1, 1, 4}, 4)}, ConvAttrs(1, "none"), "a");
    const ValueId c =
        b.Op("conv2d", {x, b.LayerWeight("wc", {4, 1, 1, 4}, 4)}, ConvAttrs(1, "none"), "c");
    const ValueId joined = b.Op("concat", {a, c}, ViewConcat(axis, view), "join");
    const ValueId y = b.Op("max_pool2d", {joined}, PoolAttrs(2, 2, 2, "valid"), "y");
    return std::move(b.Finish({y})).value();
  };
  auto allowances = [](const Graph& graph) {
    Liveness live = ComputeLiveness(graph);
    AddOverlapAllowances(graph, OverlapSource::kAnalytic, &live);
    const int32_t a = live.buffer_of[ValueNamed(graph, "a")];
    return live.requests[static_cast<size_t>(a)].may_overlap.size();
  };
  EXPECT_EQ(allowances(build(3, 0)), 1u);
  EXPECT_EQ(allowances(build(1, 1)), 1u);  // contiguous at offset 0: the same overlap is safe
  EXPECT_EQ(allowances(build(3, 1)), 0u);
  ExpectRunsLike(build(3, 1), build(3, 0), "diagonal");
}

// Views inside views: an outer concat along rows of channel concats (their inputs in rows at
// the inner concat's offset), and a channel concat of a row concat (which, lying in rows
// itself, places its inputs in the same rows, each after the rows of the ones before).
TEST(CopyFreeConcat, NestedRowsAndBands) {
  for (const std::pair<int, int>& axes : {std::pair{1, 3}, std::pair{3, 1}}) {
    const int outer_axis = axes.first, inner_axis = axes.second;
    auto build = [&](int64_t view) {
      GraphBuilder b("nested_rows");
      const ValueId x = b.Input("x", {1, 4, 5, 3});
      auto conv = [&](const std::string& name) {
        return b.Op("conv2d", {x, b.LayerWeight("w" + name, {2, 3, 3, 3}, 27)},
                    ConvAttrs(1, "relu"), name);
      };
      const ValueId a = conv("a"), c = conv("c");
      const ValueId inner = b.Op("concat", {a, c}, ViewConcat(inner_axis, view), "inner");
      Attrs shape;
      shape.Set("shape", b.shape(inner));
      const ValueId d =
          b.Op("conv2d", {x, b.LayerWeight("wd", {4, 3, 3, 3}, 27)}, ConvAttrs(1, "none"), "d");
      const ValueId d_like = inner_axis == 3 ? d : b.Op("reshape", {d}, shape, "d_like");
      const ValueId outer = b.Op("concat", {d_like, inner}, ViewConcat(outer_axis, view), "outer");
      const ValueId y = b.Op("max_pool2d", {outer}, PoolAttrs(2, 2, 2, "valid"), "y");
      return std::move(b.Finish({y})).value();
    };
    const Graph graph = build(1);
    const Liveness live = ComputeLiveness(graph);
    const ValueId inner = ValueNamed(graph, "inner"), a = ValueNamed(graph, "a");
    const ValueId c = ValueNamed(graph, "c");
    EXPECT_EQ(live.buffer_of[a], live.buffer_of[inner]) << outer_axis;
    EXPECT_EQ(live.buffer_of[c], live.buffer_of[inner]) << outer_axis;
    if (outer_axis == 1) {
      EXPECT_EQ(ViewOffset(live, a), graph.value(inner).bytes());
    } else {  // inner's rows: 2 channels of every pixel, one every 4; c's after a's 20 pixels
      const RowLayout rows = ViewRows(live, inner);
      EXPECT_EQ(rows.row_bytes, 2 * 4);
      EXPECT_EQ(rows.stride_bytes, 4 * 4);
      EXPECT_EQ(ViewRows(live, a).row_bytes, rows.row_bytes);
      EXPECT_EQ(ViewRows(live, c).stride_bytes, rows.stride_bytes);
      EXPECT_EQ(ViewOffset(live, c), ViewOffset(live, inner) + 20 * rows.stride_bytes);
    }
    const Graph reference = build(0);
    for (const char* planner : {"greedy", "diagonal"}) ExpectRunsLike(graph, reference, planner);
  }
}

TEST(CopyFreeConcat, NestedConcatsShareTheOuterBuffer) {
  GraphBuilder b("nested");
  const ValueId x = b.Input("x", {1, 4, 5, 3});
  auto conv = [&](const std::string& name) {
    return b.Op("conv2d", {x, b.LayerWeight("w" + name, {2, 3, 3, 3}, 27)}, ConvAttrs(1, "none"),
                name);
  };
  const ValueId a = conv("a"), c = conv("c");
  const ValueId inner = b.Op("concat", {a, c}, ViewConcat(1, 1), "inner");
  const ValueId d = conv("d");
  const ValueId outer = b.Op("concat", {d, inner}, ViewConcat(1, 1), "outer");
  const ValueId y = b.Op("max_pool2d", {outer}, PoolAttrs(2, 2, 2, "valid"), "y");
  Result<Graph> built = b.Finish({y});
  ASSERT_TRUE(built.ok()) << built.status().message();
  const Graph& graph = *built;
  const Liveness live = ComputeLiveness(graph);
  const int64_t band = graph.value(a).bytes();  // 1x4x5x2 floats
  EXPECT_EQ(live.buffer_of[a], live.buffer_of[outer]);
  EXPECT_EQ(live.buffer_of[inner], live.buffer_of[outer]);
  EXPECT_EQ(ViewOffset(live, d), 0);
  EXPECT_EQ(ViewOffset(live, inner), band);
  EXPECT_EQ(ViewOffset(live, a), band);
  EXPECT_EQ(ViewOffset(live, c), 2 * band);
  Graph copying = graph;
  for (NodeId id = 0; id < copying.num_nodes(); ++id) {
    if (copying.node(id).op == "concat") copying.node(id).attrs.Set("view", int64_t{0});
  }
  const Graph& reference = copying;
  for (const char* planner : {"greedy", "diagonal"}) ExpectRunsLike(graph, reference, planner);
}

Graph SliceGraph(std::vector<int64_t> begin, std::vector<int64_t> size) {
  GraphBuilder b("slice");
  const ValueId x = b.Input("x", {1, 8, 4, 3});
  const ValueId r = b.Op("relu", {x}, {}, "r");
  Attrs attrs;
  attrs.Set("begin", std::move(begin));
  attrs.Set("size", std::move(size));
  attrs.Set("view", int64_t{1});
  const ValueId s = b.Op("slice", {r}, attrs, "s");
  const ValueId y =
      b.Op("conv2d", {s, b.LayerWeight("w", {2, 3, 3, 3}, 27)}, ConvAttrs(1, "none"), "y");
  return std::move(b.Finish({y})).value();
}

TEST(CopyFreeSlice, ContiguousRowsAreAViewAtTheirOffset) {
  const Graph graph = SliceGraph({0, 2, 0, 0}, {1, 5, 4, 3});
  const Liveness live = ComputeLiveness(graph);
  const ValueId r = ValueNamed(graph, "r"), s = ValueNamed(graph, "s");
  EXPECT_EQ(live.buffer_of[s], live.buffer_of[r]);
  EXPECT_EQ(ViewOffset(live, s), 2 * 4 * 3 * 4);
  ExpectRunsLike(graph, graph, "diagonal");
  ExpectRunsLike(graph, graph, "greedy");
}

TEST(CopyFreeSlice, ColumnsAreCopied) {
  const Graph graph = SliceGraph({0, 0, 1, 0}, {1, 8, 3, 3});
  const Liveness live = ComputeLiveness(graph);
  EXPECT_NE(live.buffer_of[ValueNamed(graph, "s")], live.buffer_of[ValueNamed(graph, "r")]);
  EXPECT_FALSE(live.copy_free[graph.value(ValueNamed(graph, "s")).producer]);
  ExpectRunsLike(graph, graph, "diagonal");
}

// conv 3x3 same -> max pool 3x3 stride 2 same -> depthwise 3x3 dilation 2 valid -> relu6 ->
// avg pool 2x2 stride 1 same; 1x19x11x3 input (odd sizes exercise uneven padding).
Graph WindowChain() {
  GraphBuilder b("window_chain");
  const ValueId x = b.Input("x", {1, 19, 11, 3});
  ValueId h =
      b.Op("conv2d", {x, b.LayerWeight("w0", {4, 3, 3, 3}, 27)}, ConvAttrs(1, "relu"), "conv");
  h = b.Op("max_pool2d", {h}, PoolAttrs(3, 3, 2, "same"), "maxpool");
  Attrs dw = ConvAttrs(1, "none", "valid");
  dw.Set("dilation", std::vector<int64_t>{2, 2});
  h = b.Op("depthwise_conv2d", {h, b.LayerWeight("w1", {1, 3, 3, 4}, 9)}, dw, "dw");
  h = b.Op("relu6", {h}, {}, "act");
  h = b.Op("avg_pool2d", {h}, PoolAttrs(2, 2, 1, "same"), "avgpool");
  Result<Graph> graph = b.Finish({h});
  EXPECT_TRUE(graph.ok()) << graph.status().message();
  return std::move(graph).value();
}

TEST(SplitChain, EveryChainAndTileCountRunsBitIdentically) {
  const Graph graph = WindowChain();
  const Graph& reference = graph;
  const auto ops = static_cast<int32_t>(graph.schedule.size());
  int splits = 0;
  for (int32_t first = 0; first < ops; ++first) {
    for (int32_t last = first; last < ops; ++last) {
      for (int32_t tiles : {2, 3, 5}) {
        for (const bool copy_free : {true, false}) {
          SplitStats stats;
          Result<Graph> split = SplitRegion(graph, {first, last, tiles, copy_free}, &stats);
          const Value& out =
              graph.value(graph.node(graph.schedule[static_cast<size_t>(last)]).outputs[0]);
          if (!split.ok()) {  // only refused for more tiles than the output has rows
            EXPECT_GT(tiles, out.shape[1]) << split.status().message();
            continue;
          }
          ++splits;
          // Duplicates: every band's output elements less the unsplit ops', recounted from the
          // graph; the last op's bands partition its output, so a one-op chain has none.
          int64_t band_elements = 0, chain_elements = 0;
          for (NodeId id : split->schedule) {
            const Node& node = split->node(id);
            if (node.name.find("/tile") != std::string::npos && node.op != "slice" &&
                node.op != "concat") {
              band_elements += split->value(split->node(id).outputs[0]).elements();
            }
          }
          for (int32_t pos = first; pos <= last; ++pos) {
            chain_elements +=
                graph.value(graph.node(graph.schedule[static_cast<size_t>(pos)]).outputs[0])
                    .elements();
          }
          EXPECT_EQ(stats.duplicated_elements, band_elements - chain_elements);
          if (first == last) {
            EXPECT_EQ(stats.duplicated_elements, 0);
          }
          const Node& concat = split->node(split->value(stats.output).producer);
          // A graph output keeps its own buffer: its concat copies.
          const bool graph_output = stats.output == split->outputs[0];
          EXPECT_EQ(ComputeLiveness(*split).copy_free[split->value(stats.output).producer],
                    copy_free && !graph_output);
          EXPECT_EQ(concat.op, "concat");
          ExpectRunsLike(*split, reference, "diagonal");
        }
      }
    }
  }
  EXPECT_GE(splits, 80);
}

TEST(SplitChain, ExactHaloOfAStrideTwoWindow) {
  // maxpool 3x3 stride 2 same on 19 rows: out 10 rows, padding total 2 -> top 1, bottom 1.
  // Split alone into 2 bands of 5 output rows: band 0 reads rows -1..9 (10 real rows), band 1
  // reads rows 9..19 (10 real rows + 1 padding row). Row 9 is sliced twice (1 x 11 x 4 input
  // elements), but no maxpool output is computed twice. Width 11: 2 padding columns, 1 a side.
  const Graph graph = WindowChain();
  SplitStats stats;
  Result<Graph> split = SplitRegion(graph, {1, 1, 2}, &stats);
  ASSERT_TRUE(split.ok()) << split.status().message();
  EXPECT_EQ(stats.duplicated_elements, 0);
  std::vector<int64_t> slice_rows, pads;
  for (NodeId id : split->schedule) {
    const Node& node = split->node(id);
    if (node.op == "slice") slice_rows.push_back(split->value(node.outputs[0]).shape[1]);
    if (node.op == "max_pool2d") {
      for (int64_t p : node.attrs.Ints("pads")) pads.push_back(p);
    }
  }
  EXPECT_EQ(slice_rows, (std::vector<int64_t>{10, 10}));
  EXPECT_EQ(pads, (std::vector<int64_t>{1, 0, 1, 1, 0, 1, 1, 1}));
  // conv + maxpool: conv bands of 10 rows each; conv row 9 computed twice (1 x 11 x 4).
  ASSERT_TRUE(SplitRegion(graph, {0, 1, 2}, &stats).ok());
  EXPECT_EQ(stats.duplicated_elements, 11 * 4);
  EXPECT_EQ(stats.max_tile_bytes, 10 * 11 * 4 * 4);
}

TEST(SplitChain, RejectsWhatItCannotSplit) {
  Result<Graph> cnn = LoadModel("zoo:cnn");
  ASSERT_TRUE(cnn.ok());
  // conv1 -> pool1 -> branch_a: pool1's output is also read by branch_b.
  EXPECT_FALSE(CheckRegion(*cnn, 0, 2).ok());
  EXPECT_TRUE(CheckRegion(*cnn, 0, 1).ok());
  // concat is not a spatial op.
  EXPECT_FALSE(CheckRegion(*cnn, 4, 5).ok());
  // More tiles than output rows.
  const Result<Graph> too_many = SplitRegion(*cnn, {1, 1, 17});
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("use 1..16"), std::string::npos);
  EXPECT_FALSE(SplitRegion(*cnn, {9, 12, 2}).ok());
}

TEST(SplitForMemory, NeverWorseAndUnchangedWithoutSpatialOps) {
  Result<Graph> mlp = LoadModel("zoo:mlp");
  ASSERT_TRUE(mlp.ok());
  Result<SplitResult> result = SplitForMemory(*mlp);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_TRUE(result->stages.empty());
  EXPECT_EQ(result->arena_after, result->arena_before);
  EXPECT_EQ(result->graph.num_nodes(), mlp->num_nodes());
}

TEST(SplitForMemory, CnnFloatAndInt8ShrinkWithinBudgetAndRunBitIdentically) {
  Result<Graph> cnn = LoadModel("zoo:cnn");
  ASSERT_TRUE(cnn.ok());
  Result<Graph> cnn8 = QuantizePostTraining(*cnn);
  ASSERT_TRUE(cnn8.ok()) << cnn8.status().message();
  for (const Graph* graph : {&*cnn, &*cnn8}) {
    SplitOptions options;
    options.max_recompute = 0.05;
    Result<SplitResult> result = SplitForMemory(*graph, options);
    ASSERT_TRUE(result.ok()) << result.status().message();
    ASSERT_FALSE(result->stages.empty());
    EXPECT_LT(result->arena_after, result->arena_before);
    EXPECT_LE(result->recompute_fraction(), 0.05);
    Result<GraphPlan> plan = PlanGraph(result->graph, "diagonal");
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->plan.arena_bytes, result->arena_after);
    ExpectRunsLike(result->graph, *graph, "diagonal");
  }
}

TEST(SplitForMemory, ZeroBudgetAllowsOnlyHaloFreeSplits) {
  Result<Graph> cnn = LoadModel("zoo:cnn");
  ASSERT_TRUE(cnn.ok());
  SplitOptions options;
  options.max_recompute = 0;
  Result<SplitResult> result = SplitForMemory(*cnn, options);
  ASSERT_TRUE(result.ok());
  EXPECT_LE(result->extra_flops, 0);
  EXPECT_LE(result->arena_after, result->arena_before);
  EXPECT_EQ(result->duplicated_elements, 0);
}

}  // namespace
}  // namespace memfold
