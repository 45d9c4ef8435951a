// `memfold train`: builds the training step of a model (forward, backward, optimizer update),
// plans its memory and reports the footprint and its breakdown; with --steps it also trains,
// planned and unplanned side by side, and prints the loss per step and the gradient hash.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "memfold/exec/training.h"
#include "memfold/io/text.h"
#include "memfold/ops/registry.h"
#include "memfold/plan/profile.h"

namespace memfold::cli {
namespace {

using Json = nlohmann::ordered_json;

// The live arena bytes over the schedule, at most `points` samples (each the maximum of its
// stretch of steps, so the peak is never lost).
Json LiveCurve(const std::vector<int64_t>& live, size_t points) {
  Json curve = Json::array();
  const size_t stride = std::max<size_t>(1, (live.size() + points - 1) / points);
  for (size_t start = 0; start < live.size(); start += stride) {
    const size_t end = std::min(live.size(), start + stride);
    curve.push_back(*std::max_element(live.begin() + static_cast<std::ptrdiff_t>(start), live.begin() + static_cast<std::ptrdiff_t>(end)));
  }
  return curve;
}

Json BreakdownJson(const MemoryBreakdown& b) {
  return {{"feature_maps", b.feature_maps}, {"weights", b.weights}, {"gradients", b.gradients},
          {"optimizer", b.optimizer}, {"workspace", b.workspace}, {"fragmentation", b.fragmentation}};
}

void PrintHuman(const TrainOptions& o, const PlannedTraining& t) {
  const MemoryBreakdown& b = t.profile.breakdown;
  const MemoryProfile& p = t.profile;
  std::cout << o.common.model << ": training step of " << t.graph.schedule.size() << " nodes, strategy "
            << o.strategy << " (" << t.recomputed_nodes << " nodes recomputed"
            << (t.fell_back ? "; Echo's plan was not smaller, so the baseline is kept" : "")
            << "), planned in " << t.plan_ms << " ms\n\n";
  TextTable table({"memory", ">bytes", ">share"});
  const auto total = static_cast<double>(b.total());
  auto add = [&](const char* name, int64_t bytes) {
    char share[16];
    std::snprintf(share, sizeof(share), "%.1f %%", total > 0 ? 100.0 * static_cast<double>(bytes) / total : 0.0);
    table.Add({name, HumanBytes(bytes), share});
  };
  add("feature maps", b.feature_maps);
  add("weights", b.weights);
  add("gradients", b.gradients);
  add("optimizer state", b.optimizer);
  add("workspace", b.workspace);
  add("fragmentation", b.fragmentation);
  table.Add({"total", HumanBytes(b.total()), ""});
  std::cout << table.Render() << "\nby layer type:";
  for (const auto& [layer, bytes] : p.by_layer_type) std::cout << " " << layer << " " << HumanBytes(bytes) << ";";
  std::cout << "\narena " << HumanBytes(t.plan.plan.arena_bytes) << " (" << t.plan.plan.planner << " plan, verified)\n";
}

}  // namespace

int TrainCommand(const TrainOptions& o) {
  Result<Graph> loaded = LoadModel(o.common.model);
  if (!loaded.ok()) return Fail(loaded.status().message());
  TrainingConfig config;
  config.optimizer = o.optimizer;
  config.learning_rate = o.learning_rate;
  Result<PlannedTraining> planned = PlanTraining(std::move(loaded).value(), o.strategy, config, o.planner);
  if (!planned.ok()) return Fail(o.common.model + ": " + planned.status().message());
  const PlannedTraining& p = *planned;
  Json out = {{"model", o.common.model}, {"strategy", o.strategy}, {"total_bytes", p.profile.breakdown.total()},
              {"arena_bytes", p.plan.plan.arena_bytes}, {"breakdown", BreakdownJson(p.profile.breakdown)},
              {"by_layer_type", p.profile.by_layer_type}, {"nodes", p.graph.schedule.size()},
              {"recomputed_nodes", p.recomputed_nodes}, {"forward_flops", p.forward_flops},
              {"recompute_flops", p.recompute_flops}, {"plan_ms", p.plan_ms}};
  if (o.strategy == "echo") out["fell_back_to_baseline"] = p.fell_back;
  out["live_curve"] = LiveCurve(p.profile.live_bytes, 200);
  out["peak_step"] = p.profile.peak_time;
  if (!o.common.json) PrintHuman(o, p);
  if (!o.plan_only && o.steps > 0) {
    Trainer trainer(p.graph, p.training, p.plan);
    const std::vector<Bytes> inputs = TrainingInputs(p.graph);
    Json losses = Json::array();
    StepResult last;
    std::map<std::string, double> layer_ms;
    for (int step = 0; step < o.steps; ++step) {
      Result<StepResult> result = trainer.Step(inputs);
      if (!result.ok()) return Fail(o.common.model + ": step " + std::to_string(step) + ": " + result.status().message(), kExitFailed);
      losses.push_back(result->loss);
      for (const auto& [layer, ms] : result->layer_ms) layer_ms[layer] += ms;
      if (!o.common.json) std::cout << "step " << step << " loss " << result->loss << "\n";
      last = std::move(result).value();
    }
    out["time_ms_by_layer_type"] = layer_ms;
    out["loss"] = losses.back();
    out["losses"] = losses;
    out["grad_sha256"] = GradientSha256(last);
    if (!o.common.json) {
      std::cout << "time by layer type (planned runs):";
      for (const auto& [layer, ms] : layer_ms) std::cout << " " << layer << " " << ms << " ms;";
      std::cout << "\ngrad_sha256 " << out["grad_sha256"].get<std::string>() << " (planned and unplanned steps identical)\n";
    }
  }
  if (o.common.json) std::cout << out.dump(1) << "\n";
  return kExitOk;
}

}  // namespace memfold::cli
