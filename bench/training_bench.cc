// Executed training-step time under each recomputation strategy (Echo's runtime overhead):
// one planned step (forward, backward, update) of a reference model, timed by Google
// Benchmark. Arguments: 0 = none, 1 = mirror, 2 = echo. The unplanned twin run that Trainer
// uses for its bit-identity check is not part of the timing: this drives a Session directly.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include "memfold/exec/training.h"
#include "memfold/passes/echo.h"
#include "memfold/passes/training_plan.h"
#include "memfold/pipeline/model_loader.h"

namespace memfold {
namespace {

const char* const kStrategies[] = {"none", "mirror", "echo"};

// Freed memory stays with the allocator (no separate mappings for large blocks, no trimming),
// so repeated plans measure the planner rather than the kernel re-faulting the pages glibc
// returned after the previous iteration (about 15 us per page on this virtual machine).
const bool kKeepFreedMemory = [] {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  return true;
}();

void TrainingStep(benchmark::State& state, const char* model) {
  const char* strategy = kStrategies[state.range(0)];
  Result<PlannedTraining> p = PlanTraining(std::move(LoadModel(model)).value(), strategy);
  Session session(p->graph);
  const std::vector<Bytes> inputs = TrainingInputs(p->graph);
  ExecOptions options;
  options.poison = false;
  for (auto _ : state) {
    Result<RunOutputs> out = session.Run(inputs, &p->plan.liveness, &p->plan.plan, options);
    benchmark::DoNotOptimize(out);
  }
  state.SetLabel(std::string(strategy) + ", " + std::to_string(p->recomputed_nodes) +
                 " nodes recomputed");
}

BENCHMARK_CAPTURE(TrainingStep, nmt_small, "zoo:nmt,size=tiny,batch=16,hidden=64,seq=10")
    ->DenseRange(0, 2)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(TrainingStep, transformer_small, "zoo:transformer,size=tiny,batch=8,seq=16")
    ->DenseRange(0, 2)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(TrainingStep, resnet_tiny, "zoo:resnet,size=tiny")
    ->DenseRange(0, 2)
    ->Unit(benchmark::kMillisecond);

// The whole training plan of a full-size reference model (gradient pass, recomputation choice
// and rewrite, dead-node elimination, placement, verification, profile), per strategy; echo
// also plans a rival's graph for its never-worse check when that rival's floor says it could
// win. Model loading (weight initialisation) is outside the timing. A second of warm-up first:
// a fresh process's first plans pay for first-touch page faults, about 15 us each on this
// virtual machine (about 20k for DeepSpeech2), which `memfold train --plan-only` reports in
// its plan_ms but which are the allocator's and the kernel's cost, not the planner's.
void PlanTrainingStep(benchmark::State& state, const char* model) {
  const char* strategy = kStrategies[state.range(0)];
  benchmark::DoNotOptimize(kKeepFreedMemory);
  const Graph forward = std::move(LoadModel(model)).value();
  int64_t total = 0;
  for (auto _ : state) {
    state.PauseTiming();
    Graph copy = forward;
    state.ResumeTiming();
    Result<PlannedTraining> p = PlanTraining(std::move(copy), strategy);
    total = p->profile.breakdown.total();
    benchmark::DoNotOptimize(p);
  }
  state.SetLabel(std::string(strategy) + ", " + std::to_string(total) + " B");
}
BENCHMARK_CAPTURE(PlanTrainingStep, nmt, "zoo:nmt")
    ->DenseRange(0, 2)
    ->MinWarmUpTime(1.0)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(PlanTrainingStep, deepspeech2, "zoo:deepspeech2")
    ->DenseRange(0, 2)
    ->MinWarmUpTime(1.0)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(PlanTrainingStep, transformer, "zoo:transformer")
    ->DenseRange(0, 2)
    ->MinWarmUpTime(1.0)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(PlanTrainingStep, resnet50, "zoo:resnet")
    ->DenseRange(0, 2)
    ->MinWarmUpTime(1.0)
    ->Unit(benchmark::kMillisecond);

// The Echo pass alone (candidate selection and stash estimate, no planning) on the full-scale
// NMT training graph (29k nodes); the paper quotes < 300 ms for its analysis.
void EchoPassNmt(benchmark::State& state) {
  Graph g = std::move(LoadModel("zoo:nmt")).value();
  const TrainingGraph t = std::move(BuildTrainingGraph(&g)).value();
  for (auto _ : state) benchmark::DoNotOptimize(EchoChoice(g, t));
  state.SetLabel(std::to_string(g.num_nodes()) + " nodes");
}
BENCHMARK(EchoPassNmt)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace memfold
