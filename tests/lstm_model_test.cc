// The LSTM keyword model (tests/lstm_model.h) as a file written by memfold and read back: it
// runs planned under every planner bit-identically to its unplanned run with every read checked,
// and the greedy plan's arena is exactly what TFLM's allocator needs for it — the LSTM's four
// scratch buffers included — by TFLM's rules written out below by hand. Also: what TFLM's
// LSTM Prepare refuses, memfold's inference refuses with a message.
#include "tests/lstm_model.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "memfold/exec/checked_run.h"
#include "memfold/exec/executor.h"
#include "memfold/exec/overlap_trace.h"
#include "memfold/passes/best_plan.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/plan/plan_graph.h"
#include "tests/program_runner.h"

namespace memfold {
namespace {

// The model as memfold writes it and reads it back; an error fails the test with its message.
Graph ReadBack(const testing::LstmModelSpec& spec) {
  Result<Bytes> file = testing::LstmKeywordFile(spec);
  EXPECT_TRUE(file.ok()) << file.status().message();
  if (!file.ok()) return {};
  Result<Graph> g = LoadTflite(*file, "lstm_kws.tflite");
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? std::move(*g) : Graph{};
}

std::string Describe(const CheckedRun& run) {
  if (run.identical()) return "";
  const ReadDifference& d = *run.first_difference;
  return d.check + " at " + std::to_string(d.position) + " (" + d.op + ") reading " + d.value_name +
         ": " + d.detail;
}

// The sizes of the kernels' scratch requests in the greedy plan of the model read back.
std::vector<int64_t> ScratchSizes(const testing::LstmModelSpec& spec, int64_t* arena = nullptr) {
  const GraphPlan gp = PlanGraph(ReadBack(spec), "greedy").value();
  std::vector<int64_t> sizes;
  for (size_t r = 0; r < gp.liveness.requests.size(); ++r) {
    if (gp.liveness.value_of[r] == kNoValue) sizes.push_back(gp.liveness.requests[r].bytes);
  }
  if (arena != nullptr) *arena = gp.plan.arena_bytes;
  return sizes;
}

void ExpectEveryPlanRunsIdentically(const Graph& g) {
  const std::vector<Bytes> inputs = DefaultInputs(g);
  for (const char* planner : {"greedy", "diagonal"}) {
    const GraphPlan gp = PlanGraph(g, planner, {.refine = true}).value();
    const CheckedRun run = RunChecked(g, g, gp.liveness, gp.plan, inputs).value();
    EXPECT_TRUE(run.identical()) << planner << ": " << Describe(run);
  }
  const BestPlan best = PlanBest(g, {}).value();
  const CheckedRun run =
      RunChecked(g, best.graph, best.plan.liveness, best.plan.plan, inputs).value();
  EXPECT_TRUE(run.identical());
}

TEST(LstmModel, SurvivesTheFileAndRunsUnderEveryPlanner) {
  for (DType dtype : {DType::kI8, DType::kF32}) {
    for (bool time_major : {false, true}) {
      SCOPED_TRACE(std::string(DTypeName(dtype)) + (time_major ? " time-major" : ""));
      const testing::LstmModelSpec spec{.dtype = dtype, .time_major = time_major};
      Result<Graph> made = testing::LstmKeywordGraph(spec);
      ASSERT_TRUE(made.ok()) << made.status().message();
      const Graph& built = *made;
      const Graph read = ReadBack(spec);
      ASSERT_EQ(read.schedule.size(), built.schedule.size());
      EXPECT_TRUE(OperatorsThatCannotRun(read).empty());
      const std::vector<Bytes> inputs = DefaultInputs(read);
      const RunOutputs ran = RunUnplanned(read, inputs).value();
      EXPECT_EQ(RunUnplanned(read, inputs).value().outputs, ran.outputs) << "second run";
      EXPECT_EQ(ran.outputs, RunUnplanned(built, inputs).value().outputs);
      ExpectEveryPlanRunsIdentically(read);
    }
  }
}

// The LSTM's safe overlap model (LstmOverlap) equals what its traced kernel does, for every
// element type and layout, and it lets the output start over part of the input.
TEST(LstmModel, OverlapModelEqualsTheTrace) {
  for (DType dtype : {DType::kI8, DType::kF32}) {
    for (bool time_major : {false, true}) {
      const Graph g = testing::LstmKeywordGraph({.dtype = dtype, .time_major = time_major}).value();
      const Node& lstm = g.node(g.schedule.front());
      const std::optional<int64_t> trace = SafeOverlapByTrace(g, lstm, 0);
      ASSERT_TRUE(trace.has_value());
      EXPECT_EQ(FindOp(lstm.op)->overlap_algorithmic(g, lstm, 0), *trace);
      EXPECT_GT(*trace, 0);
      EXPECT_LT(*trace, g.value(lstm.outputs[0]).bytes());
    }
  }
}

// TFLM's arena for the int8 model (REFERENCE.md §2): tensors needing arena memory, 16-byte
// aligned, in tensor order — input [1, 49, 10] i8 = 490 -> 496 B (live at op 0), LSTM output
// [1, 49, 32] = 1,568 B (ops 0-1), last frame [1, 32] = 32 B (ops 1-2), logits [1, 4] -> 16 B
// (ops 2-3), probabilities -> 16 B (op 3 to the end) — then the LSTM's four scratch buffers,
// batch x units int16 = 64 B each, live at op 0. Largest first: LSTM output at 0, input at
// 1,568, the scratch buffers at 2,064, 2,128, 2,192 and 2,256 (all meet at op 0), last frame
// at 1,568 (the input is dead by op 1), logits at 0 (the LSTM output is dead by op 2),
// probabilities at 16. Head = 2,320 B; without the scratch buffers it would be 2,064.
TEST(LstmModel, GreedyArenaIsWhatTflmAllocatesScratchIncluded) {
  int64_t arena = 0;
  EXPECT_EQ(ScratchSizes({}, &arena), (std::vector<int64_t>{64, 64, 64, 64}));
  EXPECT_EQ(arena, 2320);
}

// The plan as TFLM receives it: `memfold plan --emit-tflite` writes the tensors' offsets, and
// TFLM places the LSTM's scratch buffers itself around them (memfold's `offline` planner does
// exactly that with the written file). The arena TFLM then needs is the one memfold reported.
TEST(LstmModel, ReportedArenaIsWhatTflmNeedsWithTheOfflinePlan) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string model = (dir / "memfold_lstm_kws.tflite").string();
  const Bytes bytes = testing::LstmKeywordFile({}).value();
  std::ofstream(model, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  for (const char* planner : {"greedy", "diagonal", "best"}) {
    const std::string planned =
        (dir / (std::string("memfold_lstm_") + planner + ".tflite")).string();
    const auto reported = testing::Memfold("plan " + model + " --planner " + planner +
                                           " --emit-tflite " + planned + " --json");
    ASSERT_EQ(reported.code, 0) << reported.err;
    const auto replayed = testing::Memfold("plan " + planned + " --planner offline --json");
    ASSERT_EQ(replayed.code, 0) << replayed.err;
    EXPECT_EQ(replayed.Json()["arena_bytes"], reported.Json()["arena_bytes"]) << planner;
    if (std::string(planner) == "greedy") {
      EXPECT_EQ(reported.Json()["arena_bytes"], 2320);
    }
  }
}

// The float model's scratch is four batch x units float32 buffers (128 B each).
TEST(LstmModel, FloatScratchHoldsFloatCells) {
  EXPECT_EQ(ScratchSizes({.dtype = DType::kF32}), (std::vector<int64_t>{128, 128, 128, 128}));
}

// What TFLM's Prepare refuses (ValidateTensorStatus, ValidateTensorSize) is refused here.
TEST(LstmModel, InferenceRefusesWhatTflmRefuses) {
  const Graph good = testing::LstmKeywordGraph({}).value();
  const Node& lstm = good.node(good.schedule.front());
  auto refused = [&](auto edit, Attrs attrs) {
    Graph g = good;
    std::vector<ValueId> inputs = lstm.inputs;
    edit(inputs);
    return !AddOp(&g, "unidirectional_sequence_lstm", inputs, std::move(attrs)).ok();
  };
  auto same = [](std::vector<ValueId>&) {};
  EXPECT_FALSE(refused(same, lstm.attrs));
  // CIFG (no input-gate weights), a peephole, a projection, a layer-norm coefficient.
  EXPECT_TRUE(
      refused([](std::vector<ValueId>& in) { in[kLstmInputWeights] = kNoValue; }, lstm.attrs));
  EXPECT_TRUE(refused([](std::vector<ValueId>& in) { in[9] = in[kLstmBias]; }, lstm.attrs));
  EXPECT_TRUE(
      refused([](std::vector<ValueId>& in) { in[16] = in[kLstmInputWeights]; }, lstm.attrs));
  EXPECT_TRUE(refused([](std::vector<ValueId>& in) { in[20] = in[kLstmBias]; }, lstm.attrs));
  // Recurrent weights of the input's shape, a bias of the wrong type, no cell state.
  EXPECT_TRUE(
      refused([](std::vector<ValueId>& in) { in[kLstmRecurrentWeights] = in[kLstmInputWeights]; },
              lstm.attrs));
  EXPECT_TRUE(
      refused([](std::vector<ValueId>& in) { in[kLstmBias] = in[kLstmHiddenState]; }, lstm.attrs));
  EXPECT_TRUE(refused([](std::vector<ValueId>& in) { in[kLstmCellState] = kNoValue; }, lstm.attrs));
  // An int16 cell state whose scale is not a power of two of at most 1.
  for (float scale : {0.3f, 64.0f}) {
    Graph g = good;
    g.value(lstm.inputs[kLstmCellState]).quant->scale = {scale};
    EXPECT_FALSE(AddOp(&g, "unidirectional_sequence_lstm", lstm.inputs, lstm.attrs).ok()) << scale;
  }
  // A cell activation the kernel does not compute.
  Attrs relu = lstm.attrs;
  relu.Set("cell_activation", std::string("relu"));
  EXPECT_TRUE(refused(same, relu));
}

}  // namespace
}  // namespace memfold
