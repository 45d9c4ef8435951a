// `memfold train`: builds the training step of a model (forward, backward, optimizer update),
// plans its memory and reports the footprint and its breakdown; with --steps it also trains,
// planned and unplanned side by side, and prints the loss per step and the gradient hash.
// `--strategy all` plans none, mirror and echo and compares them side by side; with --steps K
// it also times K steps of the three interleaved in one process (RunInterleaved); `--svg OUT`
// draws the live memory of all three strategies in one picture.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "memfold/io/file.h"
#include "memfold/io/sha256.h"
#include "memfold/io/text.h"
#include "memfold/io/training_svg.h"
#include "memfold/ops/registry.h"
#include "memfold/passes/training_plan.h"
#include "memfold/placement/portfolio.h"
#include "memfold/placement/problem_csv.h"
#include "memfold/plan/profile.h"
#include "progress.h"

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
    curve.push_back(*std::max_element(live.begin() + static_cast<std::ptrdiff_t>(start),
                                      live.begin() + static_cast<std::ptrdiff_t>(end)));
  }
  return curve;
}

Json BreakdownJson(const MemoryBreakdown& b) {
  return {{"feature_maps", b.feature_maps}, {"weights", b.weights},
          {"gradients", b.gradients},       {"optimizer", b.optimizer},
          {"workspace", b.workspace},       {"fragmentation", b.fragmentation}};
}

// The single-strategy JSON object (CONTRACT.md), before any steps run.
Json PlanJson(const std::string& model, const PlannedTraining& p) {
  Json out = {{"model", model},
              {"strategy", p.strategy()},
              {"total_bytes", p.profile.breakdown.total()},
              {"arena_bytes", p.plan.plan.arena_bytes},
              {"lower_bound_bytes", p.plan.lower_bound},
              {"optimal", p.plan.optimal},
              {"gap_to_lower_bound", GapToLowerBound(p.plan.plan.arena_bytes, p.plan.lower_bound)},
              {"breakdown", BreakdownJson(p.profile.breakdown)},
              {"by_layer_type", p.profile.by_layer_type},
              {"nodes", p.graph.schedule.size()},
              {"recomputed_nodes", p.recomputed_nodes},
              {"forward_flops", p.forward_flops},
              {"recompute_flops", p.recompute_flops},
              {"plan_ms", p.plan_ms}};
  out["chosen_strategy"] = p.chosen_strategy();
  if (p.recomputation == Recomputation::kEcho) {
    out["fell_back_to_baseline"] = p.fell_back;
    out["echo_own_total_bytes"] = p.echo_own_bytes;
  }
  out["live_curve"] = LiveCurve(p.profile.live_bytes, 200);
  out["peak_step"] = p.profile.peak_time;
  return out;
}

// Why Echo's result is another strategy's graph, if it is.
std::string ChoiceNote(const PlannedTraining& t) {
  if (t.recomputation != Recomputation::kEcho || t.kept == Recomputation::kEcho) return "";
  const std::string own = HumanBytes(t.echo_own_bytes);
  if (t.kept == Recomputation::kMirror) {
    return "; Echo's own graph needs " + own + ", Mirror's less, so Mirror's graph is kept";
  }
  return "; Echo's own graph needs " + own + ", not less than the baseline, which is kept";
}

void PrintHuman(const TrainOptions& o, const PlannedTraining& t) {
  const MemoryBreakdown& b = t.profile.breakdown;
  const MemoryProfile& p = t.profile;
  std::cout << o.common.model << ": training step of " << t.graph.schedule.size()
            << " nodes, strategy " << o.strategy << " (" << t.recomputed_nodes
            << " nodes recomputed" << ChoiceNote(t) << "), planned in " << t.plan_ms << " ms\n\n";
  TextTable table({"memory", ">bytes", ">share"});
  const auto total = static_cast<double>(b.total());
  auto add = [&](const char* name, int64_t bytes) {
    char share[16];
    std::snprintf(share, sizeof(share), "%.1f %%",
                  total > 0 ? 100.0 * static_cast<double>(bytes) / total : 0.0);
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
  for (const auto& [layer, bytes] : p.by_layer_type)
    std::cout << " " << layer << " " << HumanBytes(bytes) << ";";
  std::cout << "\narena " << HumanBytes(t.plan.plan.arena_bytes) << " (" << t.plan.plan.planner
            << " plan, verified)\n";
}

// A resident size the OS reported, or "unknown" where /proc could not say.
std::string MeasuredText(int64_t bytes) { return bytes >= 0 ? HumanBytes(bytes) : "unknown"; }

// `--strategy all`: the comparison table, or one JSON object with a `strategies` array of the
// single-strategy objects.
int PrintAllStrategies(const TrainOptions& o, const std::vector<PlannedTraining>& planned) {
  if (o.common.json) {
    Json strategies = Json::array();
    for (const PlannedTraining& p : planned) strategies.push_back(PlanJson(o.common.model, p));
    std::cout << JsonText(Json{
                     {"model", o.common.model}, {"planner", o.planner}, {"strategies", strategies}})
              << "\n";
    return kExitOk;
  }
  const StrategyTable compared = CompareStrategies(planned);
  TextTable table(compared.header);
  for (const std::vector<std::string>& row : compared.rows) table.Add(row);
  std::cout << o.common.model << ": one training step under each strategy (" << o.planner
            << " planner; plans only, nothing executed)\n\n"
            << table.Render();
  return kExitOk;
}

// Shows each step of a long run as a Phase (progress, and with --verbose its time).
class PhaseProgress {
 public:
  StepProgress Hooks() {
    return {[this](const std::string& what) { phase_.emplace(what); },
            [this](const std::string& result) {
              if (phase_) phase_->Done(result);
              phase_.reset();
            }};
  }

 private:
  std::optional<Phase> phase_;
};

// Trains `steps` steps in the planned arena, each checked against an unplanned step.
int RunSteps(const TrainOptions& o, const PlannedTraining& p, Json* out) {
  PhaseProgress progress;
  Result<TrainingRun> run = TrainChecked(p, o.steps, progress.Hooks());
  if (!run.ok()) return Fail(o.common.model + ": " + run.status().message(), kExitFailed);
  if (!o.common.json) {
    for (size_t step = 0; step < run->losses.size(); ++step)
      std::cout << "step " << step << " loss " << run->losses[step] << "\n";
  }
  (*out)["time_ms_by_layer_type"] = run->layer_ms;
  (*out)["loss"] = run->losses.back();
  (*out)["losses"] = run->losses;
  (*out)["grad_sha256"] = Sha256Hex(run->last.gradients);
  (*out)["measured_peak_bytes"] = run->measured_peak_bytes;
  (*out)["step_ms"] = run->median_step_ms();
  if (!o.common.json) {
    std::cout << "planned step: " << Fixed(run->median_step_ms(), 1)
              << " ms (median); measured peak resident " << MeasuredText(run->measured_peak_bytes)
              << " for " << HumanBytes(p.profile.breakdown.total()) << " planned\n";
    std::cout << "time by layer type (planned runs):";
    for (const auto& [layer, ms] : run->layer_ms) std::cout << " " << layer << " " << ms << " ms;";
    std::cout << "\ngrad_sha256 " << (*out)["grad_sha256"].get<std::string>()
              << " (planned and unplanned steps identical)\n";
  }
  return kExitOk;
}

// `--strategy all --steps K`: TimeInterleaved's table: per strategy the median step and its
// overhead against none.
int RunInterleaved(const TrainOptions& o, const std::vector<PlannedTraining>& planned) {
  PhaseProgress progress;
  Result<std::vector<StrategyTiming>> timed = TimeInterleaved(planned, o.steps, progress.Hooks());
  if (!timed.ok()) return Fail(o.common.model + ": " + timed.status().message(), kExitFailed);
  const double none_ms = timed->front().median_ms();
  Json strategies = Json::array();
  TextTable table({"strategy", ">planned", ">measured peak RSS", ">step (median)", ">vs none"});
  for (size_t s = 0; s < planned.size(); ++s) {
    const StrategyTiming& t = (*timed)[s];
    const double median = t.median_ms();
    Json row = PlanJson(o.common.model, planned[s]);
    row["loss"] = t.checked.loss;
    row["grad_sha256"] = Sha256Hex(t.checked.gradients);
    row["measured_peak_bytes"] = t.checked.measured_peak_bytes;
    row["step_ms"] = median;
    row["step_ms_runs"] = t.runs;
    row["step_vs_none"] = median / none_ms;
    strategies.push_back(std::move(row));
    table.Add({planned[s].strategy(), HumanBytes(planned[s].profile.breakdown.total()),
               MeasuredText(t.checked.measured_peak_bytes), Fixed(median, 1) + " ms",
               Fixed(100 * (median / none_ms - 1), 1) + " %"});
  }
  if (o.common.json) {
    std::cout << JsonText(Json{{"model", o.common.model},
                               {"planner", o.planner},
                               {"steps", o.steps},
                               {"strategies", strategies}})
              << "\n";
    return kExitOk;
  }
  std::cout << o.common.model << ": " << o.steps
            << " planned steps of each strategy, interleaved in one process (first steps "
               "checked against unplanned twins; operators' time)\n\n"
            << table.Render();
  return kExitOk;
}

}  // namespace

Result<std::vector<PlannedTraining>> PlanAllStrategies(const TrainingSource& source,
                                                       const TrainingConfig& config,
                                                       const std::string& planner) {
  std::vector<PlannedTraining> planned;
  for (const std::string& strategy : RecomputationNames()) {
    Phase phase("plan training step (" + strategy + ")");
    MF_ASSIGN_OR_RETURN(PlannedTraining p, PlanSource(source, strategy, config, planner));
    phase.Done(HumanBytes(p.profile.breakdown.total()));
    planned.push_back(std::move(p));
  }
  return planned;
}

std::vector<std::string> RecomputationNames() {
  std::vector<std::string> names;
  for (const RecomputationStrategy& s : RecomputationStrategies()) names.emplace_back(s.name);
  return names;
}

StrategyTable CompareStrategies(const std::vector<PlannedTraining>& planned) {
  StrategyTable t;
  t.header = {""};
  for (const PlannedTraining& p : planned) t.header.push_back(">" + p.strategy());
  const auto baseline = std::find_if(planned.begin(), planned.end(), [](const PlannedTraining& p) {
    return p.recomputation == Recomputation::kNone;
  });
  auto row = [&](const std::string& name, auto cell) {
    std::vector<std::string> r = {name};
    for (const PlannedTraining& p : planned) r.push_back(cell(p));
    t.rows.push_back(std::move(r));
  };
  auto bytes = [&](const std::string& name, int64_t MemoryBreakdown::*field) {
    row(name, [&](const PlannedTraining& p) { return HumanBytes(p.profile.breakdown.*field); });
  };
  row("total", [](const PlannedTraining& p) { return HumanBytes(p.profile.breakdown.total()); });
  bytes("feature maps", &MemoryBreakdown::feature_maps);
  bytes("weights", &MemoryBreakdown::weights);
  bytes("gradients", &MemoryBreakdown::gradients);
  bytes("optimizer state", &MemoryBreakdown::optimizer);
  bytes("workspace", &MemoryBreakdown::workspace);
  bytes("fragmentation", &MemoryBreakdown::fragmentation);
  row("nodes", [](const PlannedTraining& p) {
    return GroupDigits(static_cast<int64_t>(p.graph.schedule.size()));
  });
  row("recomputed nodes", [](const PlannedTraining& p) { return GroupDigits(p.recomputed_nodes); });
  row("recompute FLOPs (% of forward)", [](const PlannedTraining& p) {
    return Fixed(p.forward_flops > 0 ? 100.0 * p.recompute_flops / p.forward_flops : 0.0, 2) + " %";
  });
  if (baseline != planned.end()) {
    row("reduction vs none", [&](const PlannedTraining& p) {
      const auto total = static_cast<double>(p.profile.breakdown.total());
      return Fixed(
                 total > 0 ? static_cast<double>(baseline->profile.breakdown.total()) / total : 0.0,
                 2) +
             "x";
    });
  }
  row("plan ms", [](const PlannedTraining& p) { return Fixed(p.plan_ms, 1); });
  row("graph kept", [](const PlannedTraining& p) { return p.chosen_strategy(); });
  row("Echo's own graph", [](const PlannedTraining& p) {
    return p.recomputation == Recomputation::kEcho ? HumanBytes(p.echo_own_bytes)
                                                   : std::string("-");
  });
  row("fell back to baseline", [](const PlannedTraining& p) {
    return p.recomputation == Recomputation::kEcho ? std::string(p.fell_back ? "yes" : "no")
                                                   : std::string("-");
  });
  return t;
}

std::string StrategiesSvg(const std::string& model, const std::vector<PlannedTraining>& planned) {
  std::vector<StrategyMemory> strategies;
  for (const PlannedTraining& p : planned) {
    strategies.push_back({p.strategy(), &p.profile, p.training.forward_nodes, p.recomputed_nodes});
  }
  return TrainingSvg(strategies, model + ": live memory of one training step (" +
                                     planned.front().plan.plan.planner + " plans)");
}

int TrainCommand(const TrainOptions& o) {
  const bool all = o.strategy == "all";
  if (all && o.export_problem)
    return Fail(
        "--export-problem writes one plan's problem; choose --strategy none, mirror or echo");
  Phase load("load " + o.common.model);
  Result<TrainingSource> loaded = LoadTrainingSource(o.common.model);
  if (!loaded.ok()) return Fail(loaded.status().message());
  load.Done(std::to_string(loaded->shown().schedule.size()) + " ops");
  if (loaded->joint && !o.plan_only && o.steps > 0) {
    return Fail(o.common.model +
                " is a joint graph traced by PyTorch, whose backward operators memfold plans but "
                "does not run; train it in PyTorch with memfold.torch.compile(model)");
  }
  TrainingConfig config;
  config.optimizer = o.optimizer;
  config.learning_rate = o.learning_rate;
  std::vector<PlannedTraining> planned;
  if (all || o.svg) {
    Result<std::vector<PlannedTraining>> every = PlanAllStrategies(*loaded, config, o.planner);
    if (!every.ok()) return Fail(o.common.model + ": " + every.status().message());
    planned = std::move(every).value();
    if (o.svg) {
      Phase phase("write " + *o.svg);
      Status written = WriteFile(*o.svg, StrategiesSvg(o.common.model, planned));
      if (!written.ok()) return Fail(written.message());
    }
    if (all && !o.plan_only && o.steps > 0) return RunInterleaved(o, planned);
    if (all) return PrintAllStrategies(o, planned);
    const auto chosen = std::find_if(planned.begin(), planned.end(), [&](const PlannedTraining& p) {
      return p.strategy() == o.strategy;
    });
    planned = {std::move(*chosen)};
  } else {
    Phase phase("plan training step (" + o.strategy + ")");
    Result<PlannedTraining> one = PlanSource(*loaded, o.strategy, config, o.planner);
    if (!one.ok()) return Fail(o.common.model + ": " + one.status().message());
    phase.Done(HumanBytes(one->profile.breakdown.total()));
    planned.push_back(std::move(one).value());
  }
  const PlannedTraining& p = planned.front();
  if (o.export_problem) {
    Phase phase("write " + *o.export_problem);
    const PlacementProblem problem = ProblemFromRequests(p.plan.liveness.requests);
    Status written = WriteFile(*o.export_problem, WritePlacementCsv(problem, p.plan.plan.offsets));
    if (!written.ok()) return Fail(written.message());
  }
  Json out = PlanJson(o.common.model, p);
  if (!o.common.json) PrintHuman(o, p);
  if (!o.plan_only && o.steps > 0) {
    const int code = RunSteps(o, p, &out);
    if (code != kExitOk) return code;
  }
  if (o.common.json) std::cout << JsonText(out) << "\n";
  return kExitOk;
}

}  // namespace memfold::cli
