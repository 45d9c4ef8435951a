// Operator re-ordering (passes/schedule): search time per model, and what the search buys.
//
// One benchmark per reference model and per shared .tflite model: the timed loop is
// MinimisePeakSchedule with default options. The label then gives, exactly in bytes, the
// estimated peak (the diagonal planner's overlap-aware lower bound) before and after, the
// diagonal arena of the file's order and of the searched order (PlanWithBestSchedule, planned
// once outside the timed loop), the search kind and the states it stored.
// BM_ScheduleRandomDag/N times the search on random branched graphs of N nodes,
// BM_ScheduleParallelBranches/N on N expand/reduce branches given in breadth-first order, and
// BM_ScheduleTraining/MODEL on one training step of a tiny reference training model.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "memfold/ops/builder.h"
#include "memfold/passes/gradient.h"
#include "memfold/passes/schedule.h"
#include "memfold/pipeline/model_loader.h"

namespace memfold {
namespace {

std::string Thousands(int64_t value) {
  std::string digits = std::to_string(value), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Plans the graph in its own and in the searched order (outside the timed loop) and writes
// what the search bought into the benchmark's label.
void Label(benchmark::State& state, const Graph& graph) {
  Result<ScheduledPlan> planned = PlanWithBestSchedule(graph);
  if (!planned.ok()) {
    state.SkipWithError(planned.status().message().c_str());
    return;
  }
  const ScheduleSearch& s = planned->search;
  state.counters["ops"] = graph.num_nodes();
  state.counters["states"] = static_cast<double>(s.states);
  state.SetLabel("peak " + Thousands(s.peak_before) + " -> " + Thousands(s.peak_after) +
                 ", arena " + Thousands(planned->original_arena) + " -> " +
                 Thousands(planned->searched_arena) + (planned->reordered ? " (kept)" : "") + ", " +
                 std::string(ScheduleSearchKindName(s.kind)));
}

// Times MinimisePeakSchedule on `graph`, then labels the run.
void TimeSearch(benchmark::State& state, const Graph& graph) {
  for (auto _ : state) {
    Result<ScheduleSearch> search = MinimisePeakSchedule(graph);
    if (!search.ok()) {
      state.SkipWithError(search.status().message().c_str());
      return;
    }
    benchmark::DoNotOptimize(search->schedule.data());
  }
  Label(state, graph);
}

void BM_Schedule(benchmark::State& state, const std::string& model) {
  Result<Graph> graph = LoadModel(model);
  if (!graph.ok()) {
    state.SkipWithError(graph.status().message().c_str());
    return;
  }
  TimeSearch(state, *graph);
}

// A random branched graph of `nodes` convolutions, element-wise ops and concats on small
// feature maps with varying channel counts.
Graph RandomDag(int nodes, uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  GraphBuilder b("random_dag", seed);
  std::vector<ValueId> pool = {b.Input("x", {1, 8, 8, 8})};
  Attrs axis;
  axis.Set("axis", int64_t{3});
  for (int i = 0; i < nodes; ++i) {
    const std::string name = "n" + std::to_string(i);
    const ValueId x = pool[static_cast<size_t>(
        std::max<int64_t>(0, static_cast<int64_t>(pool.size()) - 1 - pick(0, 6)))];
    const int64_t channels = b.shape(x)[3];
    switch (pick(0, 2)) {
      case 0:
        pool.push_back(b.Op("conv2d",
                            {x, b.Weight(name + "/w", {pick(4, 32), 1, 1, channels}, 0.5f)},
                            ConvAttrs(1, "relu"), name));
        break;
      case 1:
        pool.push_back(b.Op("relu", {x}, {}, name));
        break;
      default:
        pool.push_back(
            b.Op("concat",
                 {x, pool[static_cast<size_t>(pick(0, static_cast<int64_t>(pool.size()) - 1))]},
                 axis, name));
        if (b.shape(pool.back())[3] > 64) {
          pool.back() = b.Op(
              "conv2d",
              {pool.back(), b.Weight(name + "/squeeze", {16, 1, 1, b.shape(pool.back())[3]}, 0.5f)},
              ConvAttrs(1, "relu"), name + "/squeeze");
          ++i;
        }
        break;
    }
  }
  return std::move(b.Finish({pool.back()})).value();
}

void BM_ScheduleRandomDag(benchmark::State& state) {
  const Graph graph = RandomDag(static_cast<int>(state.range(0)), 42);
  TimeSearch(state, graph);
}
BENCHMARK(BM_ScheduleRandomDag)
    ->Arg(50)
    ->Arg(100)
    ->Arg(200)
    ->Arg(400)
    ->Unit(benchmark::kMillisecond);

// `branches` parallel branches from one input, each a 1x1 convolution expanding 2 to 32
// channels and one reducing back to 1, joined by a concat; the file order runs every expansion
// first (breadth first, as some exporters emit). The best order finishes one branch at a time.
Graph ParallelBranches(int branches) {
  GraphBuilder b("branches");
  const ValueId x = b.Input("x", {1, 8, 8, 2});
  std::vector<ValueId> expanded, reduced;
  for (int i = 0; i < branches; ++i) {
    const std::string name = "b" + std::to_string(i);
    expanded.push_back(b.Op("conv2d", {x, b.Weight(name + "/expand", {32, 1, 1, 2}, 0.5f)},
                            ConvAttrs(1, "relu"), name + "/expand"));
  }
  for (int i = 0; i < branches; ++i) {
    const std::string name = "b" + std::to_string(i);
    reduced.push_back(
        b.Op("conv2d",
             {expanded[static_cast<size_t>(i)], b.Weight(name + "/reduce", {1, 1, 1, 32}, 0.5f)},
             ConvAttrs(1, "none"), name + "/reduce"));
  }
  Attrs axis;
  axis.Set("axis", int64_t{3});
  return std::move(b.Finish({b.Op("concat", reduced, axis, "join")})).value();
}

void BM_ScheduleParallelBranches(benchmark::State& state) {
  const Graph graph = ParallelBranches(static_cast<int>(state.range(0)));
  TimeSearch(state, graph);
}
BENCHMARK(BM_ScheduleParallelBranches)
    ->Arg(4)
    ->Arg(8)
    ->Arg(16)
    ->Arg(32)
    ->Unit(benchmark::kMillisecond);

// One training step (forward, backward from the gradient pass, optimizer updates) of a tiny
// reference training model.
void BM_ScheduleTraining(benchmark::State& state, const std::string& model) {
  Result<Graph> graph = LoadModel(model);
  if (!graph.ok() || !BuildTrainingGraph(&*graph).ok()) {
    state.SkipWithError(("cannot build a training step of " + model).c_str());
    return;
  }
  TimeSearch(state, *graph);
}

std::vector<std::string> Models() {
  std::vector<std::string> models = {"zoo:mobilenet_v1", "zoo:mobilenet_v2", "zoo:cnn",
                                     "zoo:mlp",          "zoo:squeezenet",   "zoo:densenet121",
                                     "zoo:inception_v3"};
  const std::filesystem::path shared =
      std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "shared" / "models";
  std::vector<std::string> files;
  std::error_code error;
  for (auto it = std::filesystem::recursive_directory_iterator(shared, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (it->path().extension() == ".tflite")
      files.push_back(std::filesystem::weakly_canonical(it->path()).string());
  }
  std::sort(files.begin(), files.end());
  models.insert(models.end(), files.begin(), files.end());
  return models;
}

// Registers one BM_Schedule per model before benchmark_main runs.
const bool kRegistered = [] {
  for (const std::string& model : Models()) {
    const std::string name = "BM_Schedule/" + std::filesystem::path(model).filename().string();
    benchmark::RegisterBenchmark(name.c_str(), BM_Schedule, model)->Unit(benchmark::kMillisecond);
  }
  for (const char* model : {"zoo:nmt,size=tiny", "zoo:resnet,size=tiny",
                            "zoo:transformer,size=tiny", "zoo:deepspeech2,size=tiny"}) {
    benchmark::RegisterBenchmark((std::string("BM_ScheduleTraining/") + model).c_str(),
                                 BM_ScheduleTraining, std::string(model))
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
}  // namespace memfold
