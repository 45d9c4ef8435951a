// The mutation test of checked execution (exec/checked_run.h): verified plans of 17 models —
// float and int8, the int8 zoo models whose softmax output hides everything, split `best`
// plans, plans with concatenation views, diagonal and greedy plans, real .tflite files — are
// corrupted on purpose, the verifier is bypassed, and checked execution must catch every
// corruption.
//
// A corruption moves one buffer j over a buffer i that is still to be read after j is written:
//
//   full      j at i's offset;
//   end       j's last bytes over i's first byte;
//   start     j's first bytes over i's last byte;
//   diagonal  an operator's output over the input that dies at it, overlapping one byte more
//             than the input's exact safe overlap O_s (the trace method's).
//
// "end" and "start" overlap by one byte where j's element type allows it (int8), else by the
// smallest overlap that keeps j's elements aligned (4 bytes for float32 and int32 scratch):
// kernels load whole elements, so no runtime places a float32 tensor at an odd address. The
// diagonal overlap is rounded up the same way.
//
// Only corruptions that change what some operator reads are generated: for "full", "end" and
// "start", some byte of i in the overlap must hold i's data when j's byte lands on it (written
// before) and be read after; for "diagonal", O_s must be below both buffers' sizes (an
// element-wise operator that may overwrite its whole dying input cannot be over-overlapped).
// A move that nothing reads back (j over bytes of i no operator reads again) leaves every
// computation as it was; no execution can tell it from a correct plan, and it is not generated.
// Every generated corruption must also be refused by VerifyPlan.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <random>

#include "memfold/exec/checked_run.h"
#include "memfold/exec/executor.h"
#include "memfold/exec/overlap_trace.h"
#include "memfold/ops/registry.h"
#include "memfold/passes/best_plan.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/placement/verify_plan.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {
namespace {

struct Case {
  std::string model;
  std::string planner;  // greedy, diagonal or best
  bool concat_views = false;
  int moves = 80;      // at most this many of the kinds full, end and start together
  int diagonals = 40;  // at most this many diagonal over-reaches, spread over the schedule
};

std::string Shared(const std::string& relative) {
  return std::string(MEMFOLD_SHARED_DIR) + "/models/" + relative;
}

// Small configurations: each corruption is one planned run (up to where it is caught).
std::vector<Case> Cases() {
  return {
      {"zoo:mobilenet_v2,alpha=0.35,res=32,dtype=i8", "diagonal", false, 160},
      {"zoo:mobilenet_v2,alpha=0.35,res=64,dtype=i8", "best", false, 60, 20},
      {"zoo:mobilenet_v2,alpha=0.35,res=32", "diagonal", false, 160},
      {"zoo:mobilenet_v1,alpha=0.25,res=32,dtype=i8", "greedy"},
      {"zoo:densenet121,res=32,dtype=i8", "diagonal", false, 12, 6},
      {"zoo:squeezenet,res=48,dtype=i8", "diagonal", true, 120},
      {"zoo:inception_v3,res=75,dtype=i8", "greedy", false, 8, 4},
      {"zoo:cnn", "diagonal", true, 200},
      {"zoo:cnn,dtype=i8", "best", false, 200},
      {"zoo:mlp,dtype=i8", "greedy"},
      {Shared("tflite-micro/keyword_scrambled_8bit.tflite"), "diagonal"},
      {Shared("tflite-micro/person_detect.tflite"), "best", false, 50, 20},
      {Shared("mlcommons-tiny/kws_ref_model.tflite"), "diagonal"},
      {Shared("mlcommons-tiny/ad01_fp32.tflite"), "diagonal"},
      {Shared("tflite-micro/hello_world_int8.tflite"), "greedy"},
      // Converter output: explicit PADs, QUANTIZE at the input, DEQUANTIZE at the end.
      {Shared("tinyengine/vww.tflite"), "diagonal", false, 60, 20},
      {Shared("tflite-micro/micro_speech_quantized.tflite"), "diagonal"},
  };
}

// Per byte of every buffer: when it is written (the earliest writer of a value covering it:
// graph inputs at 0, a node's outputs and scratch at its time) and the last time a value
// covering it is read (graph outputs at the end).
struct ByteTimes {
  std::vector<int32_t> written, last_read;
};

std::vector<ByteTimes> TimesOf(const Graph& g, const Liveness& live) {
  std::vector<ByteTimes> times(live.requests.size());
  for (const BufferRequest& r : live.requests) {
    times[static_cast<size_t>(r.id)].written.assign(static_cast<size_t>(r.bytes),
                                                    std::numeric_limits<int32_t>::max());
    times[static_cast<size_t>(r.id)].last_read.assign(static_cast<size_t>(r.bytes), -1);
  }
  std::vector<int32_t> write(static_cast<size_t>(g.num_values()), -1), read(write);
  for (ValueId v : g.inputs) write[static_cast<size_t>(v)] = 0;
  for (size_t pos = 0; pos < g.schedule.size(); ++pos) {
    const NodeId id = g.schedule[pos];
    for (ValueId in : g.node(id).inputs) {
      if (in != kNoValue) read[static_cast<size_t>(in)] = NodeTime(pos);
    }
    for (ValueId out : g.node(id).outputs) write[static_cast<size_t>(out)] = NodeTime(pos);
    for (int32_t s : live.scratch_of[static_cast<size_t>(id)]) {
      std::fill(times[static_cast<size_t>(s)].written.begin(),
                times[static_cast<size_t>(s)].written.end(), NodeTime(pos));
      std::fill(times[static_cast<size_t>(s)].last_read.begin(),
                times[static_cast<size_t>(s)].last_read.end(), NodeTime(pos));
    }
  }
  for (ValueId v : g.outputs) read[static_cast<size_t>(v)] = live.end_time;
  for (ValueId v = 0; v < g.num_values(); ++v) {
    const int32_t b = live.buffer_of[static_cast<size_t>(v)];
    if (b == kNoBuffer || write[static_cast<size_t>(v)] < 0) continue;
    ByteTimes& t = times[static_cast<size_t>(b)];
    const RowLayout rows = ViewRows(live, v);
    const int64_t bytes = g.value(v).bytes();
    const int64_t row = rows.row_bytes == 0 ? bytes : rows.row_bytes;
    for (int64_t done = 0, k = 0; done < bytes; done += row, ++k) {
      const int64_t start = ViewOffset(live, v) + k * rows.stride_bytes;
      for (int64_t q = start; q < start + std::min(row, bytes - done); ++q) {
        auto& w = t.written[static_cast<size_t>(q)];
        auto& r = t.last_read[static_cast<size_t>(q)];
        w = std::min(w, write[static_cast<size_t>(v)]);
        r = std::max(r, read[static_cast<size_t>(v)]);
      }
    }
  }
  return times;
}

int64_t ElementAlignment(const Graph& g, const Liveness& live, int32_t buffer) {
  const ValueId v = live.value_of[static_cast<size_t>(buffer)];
  if (v == kNoValue) return 4;  // scratch: int32 or float32 accumulators
  return std::max(1, ElementBytes(g.value(v).dtype));
}

struct Corruption {
  std::string kind;
  Plan plan;
  std::string what;       // for failure messages
  int64_t position = -1;  // diagonal: the operator that must be caught
};

Plan Moved(const Plan& plan, int32_t buffer, int64_t offset, int64_t bytes) {
  Plan moved = plan;
  moved.planner += " (corrupted)";
  moved.offsets[static_cast<size_t>(buffer)] = offset;
  moved.arena_bytes = std::max(moved.arena_bytes, offset + bytes);
  return moved;
}

// Whether moving j to `offset` lands a byte of j on a byte of i that holds i's data then and is
// read afterwards.
bool ChangesAReadOfI(const Plan& plan, const std::vector<ByteTimes>& times, int32_t i, int32_t j,
                     int64_t offset) {
  const int64_t i_at = plan.offsets[static_cast<size_t>(i)];
  const ByteTimes& ti = times[static_cast<size_t>(i)];
  const ByteTimes& tj = times[static_cast<size_t>(j)];
  const int64_t lo = std::max(offset, i_at);
  const int64_t hi = std::min(offset + static_cast<int64_t>(tj.written.size()),
                              i_at + static_cast<int64_t>(ti.written.size()));
  for (int64_t p = lo; p < hi; ++p) {
    const int32_t lands = tj.written[static_cast<size_t>(p - offset)];
    const auto q = static_cast<size_t>(p - i_at);
    if (ti.written[q] < lands && lands < ti.last_read[q]) return true;
  }
  return false;
}

int64_t AlignDown(int64_t value, int64_t alignment) {
  return value >= 0 ? value / alignment * alignment : -AlignUp(-value, alignment);
}

std::vector<Corruption> MovesOverLiveBuffers(const Graph& g, const Liveness& live, const Plan& plan,
                                             int count, uint32_t seed) {
  const std::vector<ByteTimes> times = TimesOf(g, live);
  std::vector<int32_t> movable, targets;
  for (const BufferRequest& r : live.requests) {
    if (r.bytes == 0) continue;
    targets.push_back(r.id);
    if (r.first > 0) movable.push_back(r.id);  // graph inputs are written before anything runs
  }
  std::vector<Corruption> out;
  if (movable.empty() || targets.size() < 2) return out;
  std::mt19937 rng(seed);
  for (int attempt = 0; attempt < count * 200 && static_cast<int>(out.size()) < count; ++attempt) {
    const int32_t j = movable[rng() % movable.size()];
    const int32_t i = targets[rng() % targets.size()];
    if (i == j) continue;
    const int64_t i_at = plan.offsets[static_cast<size_t>(i)];
    const int64_t i_bytes = live.requests[static_cast<size_t>(i)].bytes;
    const int64_t j_bytes = live.requests[static_cast<size_t>(j)].bytes;
    const int64_t align = ElementAlignment(g, live, j);
    const int kind = static_cast<int>(rng() % 3);
    int64_t offset = i_at;
    if (kind == 1) offset = AlignUp(std::max<int64_t>(0, i_at - j_bytes + 1), align);
    if (kind == 2) offset = AlignDown(i_at + i_bytes - 1, align);
    if (offset < 0 || offset + j_bytes <= i_at || offset >= i_at + i_bytes) continue;
    if (!ChangesAReadOfI(plan, times, i, j, offset)) continue;
    const char* names[] = {"full", "end", "start"};
    const int64_t overlap = std::min(offset + j_bytes, i_at + i_bytes) - std::max(offset, i_at);
    out.push_back({names[kind], Moved(plan, j, offset, j_bytes),
                   std::string(names[kind]) + ": buffer " + std::to_string(j) + " (" +
                       std::to_string(j_bytes) + " B) over buffer " + std::to_string(i) + " by " +
                       std::to_string(overlap) + " B"});
  }
  return out;
}

// A buffer holding exactly one contiguous value at its start (no views, no rows).
bool Plain(const Graph& g, const Liveness& live, ValueId v) {
  const int32_t b = live.buffer_of[static_cast<size_t>(v)];
  return b != kNoBuffer && ViewOffset(live, v) == 0 && ViewRows(live, v).row_bytes == 0 &&
         live.requests[static_cast<size_t>(b)].bytes == g.value(v).bytes();
}

std::vector<Corruption> DiagonalOverreach(const Graph& g, const Liveness& live, const Plan& plan,
                                          int count) {
  std::vector<Corruption> out;
  for (size_t pos = 0; pos < g.schedule.size(); ++pos) {
    const Node& node = g.node(g.schedule[pos]);
    const OpDef* def = OpOf(node);
    if (def == nullptr || def->alias || node.outputs.empty() ||
        live.copy_free[static_cast<size_t>(g.schedule[pos])])
      continue;
    const ValueId y = node.outputs[0];
    if (!Plain(g, live, y) ||
        live.value_of[static_cast<size_t>(live.buffer_of[static_cast<size_t>(y)])] != y)
      continue;
    const int32_t by = live.buffer_of[static_cast<size_t>(y)];
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const ValueId x = node.inputs[k];
      if (x == kNoValue || !Plain(g, live, x)) continue;
      const int32_t bx = live.buffer_of[static_cast<size_t>(x)];
      if (live.requests[static_cast<size_t>(bx)].last != NodeTime(pos)) continue;  // not dying here
      const std::optional<int64_t> os = SafeOverlapByTrace(g, node, static_cast<int>(k));
      const int64_t align = std::max(1, ElementBytes(g.value(y).dtype));
      const int64_t y_bytes = g.value(y).bytes(), x_bytes = g.value(x).bytes();
      if (!os || *os + align > std::min(y_bytes, x_bytes)) continue;
      const int64_t x_at = plan.offsets[static_cast<size_t>(bx)];
      const int64_t offset = AlignUp(std::max<int64_t>(0, x_at - y_bytes + *os + 1), align);
      if (offset < 0) continue;
      out.push_back({"diagonal", Moved(plan, by, offset, y_bytes),
                     "diagonal: '" + node.name + "' output over its input '" + g.value(x).name +
                         "' by " + std::to_string(offset + y_bytes - x_at) + " B, O_s " +
                         std::to_string(*os) + " B",
                     static_cast<int64_t>(pos)});
    }
  }
  std::vector<Corruption> spread;  // every k-th, so that the whole schedule is covered
  for (size_t k = 0; k < static_cast<size_t>(count) && !out.empty(); ++k) {
    const size_t at = k * out.size() / static_cast<size_t>(count);
    if (spread.empty() || spread.back().what != out[at].what) spread.push_back(out[at]);
  }
  return spread;
}

struct Planned {
  Graph graph;
  GraphPlan plan;
};

Planned PlanCase(const Graph& model, const Case& c) {
  if (c.planner == "best") {
    Result<BestPlan> best = PlanBest(model);
    EXPECT_TRUE(best.ok()) << best.status().message();
    return {std::move(best->graph), std::move(best->plan)};
  }
  Graph graph = model;
  if (c.concat_views) {
    EXPECT_GT(MarkConcatViews(&graph), 0);
  }
  Result<GraphPlan> gp = PlanGraph(graph, c.planner, {.refine = true});
  EXPECT_TRUE(gp.ok()) << gp.status().message();
  return {std::move(graph), std::move(gp).value()};
}

// One planned case, ready to corrupt: the model, the plan under test and its corruptions.
struct Prepared {
  Graph model;
  Planned planned;
  std::vector<Corruption> corruptions;
};

Prepared Prepare(const Case& c, uint32_t seed) {
  Result<Graph> model = LoadModel(c.model);
  EXPECT_TRUE(model.ok()) << model.status().message();
  Prepared p{std::move(model).value(), {}, {}};
  p.planned = PlanCase(p.model, c);
  if (c.planner == "best") {
    EXPECT_GT(p.planned.graph.num_nodes(), p.model.num_nodes()) << c.model << ": best must split";
  }
  const Liveness& live = p.planned.plan.liveness;
  const Plan& plan = p.planned.plan.plan;
  p.corruptions = MovesOverLiveBuffers(p.planned.graph, live, plan, c.moves, seed);
  for (Corruption& d : DiagonalOverreach(p.planned.graph, live, plan, c.diagonals)) {
    p.corruptions.push_back(std::move(d));
  }
  return p;
}

std::string Label(const Case& c) {
  const std::string shared = Shared("");
  const std::string model = c.model.rfind(shared, 0) == 0 ? c.model.substr(shared.size()) : c.model;
  return model + " (" + c.planner + (c.concat_views ? ", concat views" : "") + ")";
}

TEST(PlanMutation, CheckedExecutionCatchesEveryCorruption) {
  int total = 0;
  std::map<std::string, int> by_kind, by_check;
  uint32_t seed = 1;
  for (const Case& c : Cases()) {
    const Prepared p = Prepare(c, seed++);
    const Liveness& live = p.planned.plan.liveness;
    Result<CheckedRunner> runner =
        CheckedRunner::Make(p.model, p.planned.graph, DefaultInputs(p.model));
    ASSERT_TRUE(runner.ok()) << runner.status().message();
    const Result<CheckedRun> clean = runner->Run(live, p.planned.plan.plan);
    ASSERT_TRUE(clean.ok() && clean->identical()) << c.model << ": the uncorrupted plan must run";
    std::map<std::string, int> kinds;
    for (const Corruption& bad : p.corruptions) {
      const std::string label = Label(c) + ", " + bad.what;
      EXPECT_FALSE(VerifyPlan(live.requests, bad.plan).ok()) << label;
      const Result<CheckedRun> run = runner->Run(live, bad.plan);
      ASSERT_TRUE(run.ok()) << label << ": " << run.status().message();
      ASSERT_FALSE(run->identical()) << label << " was not caught";
      if (bad.kind == "diagonal") {
        EXPECT_EQ(run->first_difference->position, bad.position) << label;
      }
      ++kinds[bad.kind];
      ++by_kind[bad.kind];
      ++by_check[run->first_difference->check];
    }
    std::cout << Label(c) << ": " << p.corruptions.size() << " corruptions caught (full "
              << kinds["full"] << ", end " << kinds["end"] << ", start " << kinds["start"]
              << ", diagonal " << kinds["diagonal"] << ")\n";
    total += static_cast<int>(p.corruptions.size());
  }
  std::cout << total << " corruptions, every one caught; first caught by the value check "
            << by_check["value"] << ", owner " << by_check["owner"] << ", in-kernel "
            << by_check["in-kernel"] << ", output " << by_check["output"] << "\n";
  EXPECT_GE(total, 1000);
  for (const char* kind : {"full", "end", "start", "diagonal"})
    EXPECT_GE(by_kind[kind], 50) << kind;
  EXPECT_GT(by_check["in-kernel"], 0);
  EXPECT_GT(by_check["owner"], 0);
}

// The same corruptions judged the old way, by the final outputs alone: how many would pass.
// A measurement, not a check (it doubles the runs), so disabled in `make test`; run it with
//   memfold_tests --gtest_also_run_disabled_tests --gtest_filter=PlanMutation.DISABLED_*
TEST(PlanMutation, DISABLED_OutputsAloneMissCorruptions) {
  int total = 0, missed = 0;
  uint32_t seed = 1;
  for (const Case& c : Cases()) {
    const Prepared p = Prepare(c, seed++);
    const std::vector<Bytes> inputs = DefaultInputs(p.model);
    const Result<RunOutputs> reference = RunUnplanned(p.model, inputs);
    ASSERT_TRUE(reference.ok());
    int case_missed = 0;
    for (const Corruption& bad : p.corruptions) {
      const Result<RunOutputs> run =
          RunPlanned(p.planned.graph, p.planned.plan.liveness, bad.plan, inputs);
      case_missed += run.ok() && run->outputs == reference->outputs;
    }
    std::cout << Label(c) << ": " << case_missed << " of " << p.corruptions.size()
              << " pass when only the outputs are compared\n";
    total += static_cast<int>(p.corruptions.size());
    missed += case_missed;
  }
  std::cout << missed << " of " << total << " corruptions pass an outputs-only comparison\n";
  EXPECT_GT(missed, 0);
}

}  // namespace
}  // namespace memfold
