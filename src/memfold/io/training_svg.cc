#include "memfold/io/training_svg.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include "memfold/io/svg_canvas.h"
#include "memfold/io/text.h"

namespace memfold {
namespace {

using namespace svg;  // NOLINT: the drawing vocabulary of this file

struct Kind {
  const char* name;
  const char* color;
};
// Bottom to top: persistent memory first, then the arena's kinds, then unused arena bytes.
constexpr Kind kWeights{"weights", "#f28e2b"};
constexpr Kind kOptimizer{"optimizer state", "#76b7b2"};
constexpr Kind kFeatureMaps{"feature maps", "#4e79a7"};
constexpr Kind kGradients{"gradients", "#e15759"};
constexpr Kind kWorkspace{"workspace", "#59a14f"};

constexpr double kTrainLeft = 92, kTrainChartW = 780, kTrainTop = 84, kPanelH = 170, kPanelGap = 56;
constexpr double kBarsLeft = 985, kBarW = 52, kBarGap = 30, kTrainWidth = 1250;

double Persistent(const MemoryProfile& p) {
  return static_cast<double>(p.breakdown.weights + p.breakdown.optimizer);
}

double TrainingMaxBytes(std::span<const StrategyMemory> strategies) {
  double max_bytes = 1;
  for (const StrategyMemory& s : strategies) {
    const MemoryProfile& p = *s.profile;
    const int64_t live =
        p.live_bytes.empty() ? 0 : *std::max_element(p.live_bytes.begin(), p.live_bytes.end());
    max_bytes = std::max({max_bytes, static_cast<double>(p.breakdown.total()),
                          Persistent(p) + static_cast<double>(live)});
  }
  return max_bytes * 1.06;
}

// For each of `columns` stretches of the schedule, the step with the most live bytes.
std::vector<size_t> SampleSteps(const std::vector<int64_t>& live, size_t columns) {
  std::vector<size_t> picks;
  const size_t n = live.size();
  columns = std::min(columns, n);
  for (size_t c = 0; c < columns; ++c) {
    const size_t begin = c * n / columns, end = std::max(begin + 1, (c + 1) * n / columns);
    picks.push_back(
        static_cast<size_t>(std::max_element(live.begin() + static_cast<std::ptrdiff_t>(begin),
                                             live.begin() + static_cast<std::ptrdiff_t>(end)) -
                            live.begin()));
  }
  return picks;
}

// One strategy's live memory: persistent bands, then stacked areas for the arena's kinds.
void DrawStrategyPanel(Svg& svg, const StrategyMemory& s, double top, double max_bytes) {
  const MemoryProfile& p = *s.profile;
  const double bottom = top + kPanelH;
  auto y = [&](double bytes) { return bottom - bytes / max_bytes * kPanelH; };
  const auto steps = static_cast<double>(std::max<size_t>(p.live_bytes.size(), 1));
  svg.Text(kTrainLeft, top - 8,
           s.strategy + ": footprint " + HumanBytes(p.breakdown.total()) + ", " +
               std::to_string(s.recomputed_nodes) + " nodes recomputed, " +
               GroupDigits(static_cast<int64_t>(p.live_bytes.size())) + " steps",
           "font-weight=\"bold\"");
  ByteAxis(svg, kTrainLeft, kTrainChartW, bottom, kPanelH, max_bytes, 4);
  const double weights = static_cast<double>(p.breakdown.weights), persistent = Persistent(p);
  svg.Rect(kTrainLeft, y(weights), kTrainChartW, bottom - y(weights),
           std::string("fill=\"") + kWeights.color + "\"",
           s.strategy + ": weights " + HumanBytes(p.breakdown.weights) + " (persistent)");
  svg.Rect(kTrainLeft, y(persistent), kTrainChartW, y(weights) - y(persistent),
           std::string("fill=\"") + kOptimizer.color + "\"",
           s.strategy + ": optimizer state " + HumanBytes(p.breakdown.optimizer) + " (persistent)");
  const std::vector<size_t> picks =
      SampleSteps(p.live_bytes, static_cast<size_t>(kTrainChartW / 1.5));
  const std::array<const std::vector<int64_t>*, 3> curves = {&p.live_feature_maps,
                                                             &p.live_gradients, &p.live_workspace};
  const std::array<const Kind*, 3> kinds = {&kFeatureMaps, &kGradients, &kWorkspace};
  std::vector<double> base(picks.size(), persistent);
  const double col_w = kTrainChartW / static_cast<double>(std::max<size_t>(picks.size(), 1));
  for (size_t k = 0; k < curves.size(); ++k) {
    std::vector<std::pair<double, double>> points;
    std::vector<double> top_edge(picks.size());
    int64_t most = 0;
    for (size_t c = 0; c < picks.size(); ++c) {
      const int64_t bytes = (*curves[k])[picks[c]];
      most = std::max(most, bytes);
      top_edge[c] = base[c] + static_cast<double>(bytes);
      points.emplace_back(kTrainLeft + c * col_w, y(top_edge[c]));
      points.emplace_back(kTrainLeft + (c + 1) * col_w, y(top_edge[c]));
    }
    for (size_t c = picks.size(); c-- > 0;) {
      points.emplace_back(kTrainLeft + (c + 1) * col_w, y(base[c]));
      points.emplace_back(kTrainLeft + c * col_w, y(base[c]));
    }
    if (most > 0) {
      svg.Polygon(points, std::string("fill=\"") + kinds[k]->color + "\" stroke=\"none\"",
                  s.strategy + ": live " + kinds[k]->name + ", at most " + HumanBytes(most));
    }
    base = std::move(top_edge);
  }
  const double footprint_y = y(static_cast<double>(p.breakdown.total()));
  svg.Line(kTrainLeft, footprint_y, kTrainLeft + kTrainChartW, footprint_y,
           "stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"");
  svg.Text(kTrainLeft + kTrainChartW - 4, footprint_y - 4,
           "footprint " + HumanBytes(p.breakdown.total()), "fill=\"#d62728\" text-anchor=\"end\"");
  const double boundary =
      kTrainLeft + (static_cast<double>(s.forward_nodes) + 0.5) / steps * kTrainChartW;
  svg.Line(boundary, top, boundary, bottom,
           "stroke=\"#222\" stroke-width=\"1\" stroke-dasharray=\"3 3\"");
  constexpr const char* kHalo =
      "stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\" fill=\"#222\"";
  svg.Text(boundary - 4, top + 12, "forward", std::string("text-anchor=\"end\" ") + kHalo);
  svg.Text(boundary + 4, top + 12, "backward", kHalo);
  svg.Line(kTrainLeft, bottom, kTrainLeft + kTrainChartW, bottom,
           "stroke=\"#444\" stroke-width=\"1\"");
  const auto last = static_cast<int64_t>(steps) - 1;
  const int64_t tick = StepTick(last, 8);
  for (int64_t t = 0; t <= last; t += tick) {
    const double x = kTrainLeft + (static_cast<double>(t) + 0.5) / steps * kTrainChartW;
    svg.Line(x, bottom, x, bottom + 4, "stroke=\"#444\" stroke-width=\"1\"");
    svg.Text(x, bottom + 15, GroupDigits(t), "text-anchor=\"middle\" font-size=\"10\"");
  }
}

// Echo's Figure 4 (right): the peak's bytes by data structure, one stacked bar per strategy.
void DrawBreakdownBars(Svg& svg, std::span<const StrategyMemory> strategies, double top,
                       double bottom, double max_bytes) {
  const double height = bottom - top;
  auto y = [&](double bytes) { return bottom - bytes / max_bytes * height; };
  svg.Text(kBarsLeft - 50, top - 28, "at the peak, by data structure", "font-weight=\"bold\"");
  ByteAxis(svg, kBarsLeft, static_cast<double>(strategies.size()) * (kBarW + kBarGap), bottom,
           height, max_bytes, 8);
  const double baseline =
      static_cast<double>(strategies.empty() ? 0 : strategies[0].profile->breakdown.total());
  for (size_t i = 0; i < strategies.size(); ++i) {
    const StrategyMemory& s = strategies[i];
    const MemoryBreakdown& b = s.profile->breakdown;
    const double x = kBarsLeft + kBarGap / 2 + static_cast<double>(i) * (kBarW + kBarGap);
    const double total = static_cast<double>(b.total());
    const std::array<std::pair<const char*, int64_t>, 6> parts = {
        {{kWeights.name, b.weights},
         {kOptimizer.name, b.optimizer},
         {kFeatureMaps.name, b.feature_maps},
         {kGradients.name, b.gradients},
         {kWorkspace.name, b.workspace},
         {"fragmentation", b.fragmentation}}};
    const std::array<const char*, 6> fills = {kWeights.color,     kOptimizer.color,
                                              kFeatureMaps.color, kGradients.color,
                                              kWorkspace.color,   "url(#spare)"};
    double at = 0;
    for (size_t k = 0; k < parts.size(); ++k) {
      const auto bytes = static_cast<double>(parts[k].second);
      if (bytes <= 0) continue;
      svg.Rect(x, y(at + bytes), kBarW, y(at) - y(at + bytes),
               std::string("fill=\"") + fills[k] + "\" stroke=\"#ffffff\" stroke-width=\"0.5\"",
               s.strategy + ": " + parts[k].first + " " + HumanBytes(parts[k].second) + " (" +
                   Percent(bytes, total) + ")");
      at += bytes;
    }
    svg.Text(x + kBarW / 2, bottom + 15, s.strategy, "text-anchor=\"middle\" font-weight=\"bold\"");
    svg.Text(x + kBarW / 2, bottom + 29, HumanBytes(b.total()),
             "text-anchor=\"middle\" font-size=\"10\"");
    char reduction[32];
    std::snprintf(reduction, sizeof(reduction), "%.2fx", total > 0 ? baseline / total : 0.0);
    svg.Text(x + kBarW / 2, y(total) - 5, reduction, "text-anchor=\"middle\" font-size=\"10\"");
  }
}

void DrawTrainingLegend(Svg& svg, std::string_view title) {
  svg.Text(kTrainLeft, 22, title, "font-size=\"14\" font-weight=\"bold\"");
  double x = kTrainLeft;
  for (const Kind* k : {&kWeights, &kOptimizer, &kFeatureMaps, &kGradients, &kWorkspace}) {
    LegendEntry(svg, &x, 46, std::string("fill=\"") + k->color + "\"", k->name);
  }
  LegendEntry(svg, &x, 46, "fill=\"url(#spare)\"", "fragmentation");
  LegendLine(svg, &x, 46, "stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"",
             "footprint (arena + persistent)");
}

}  // namespace

std::string TrainingSvg(std::span<const StrategyMemory> strategies, std::string_view title) {
  const double panels = static_cast<double>(strategies.size());
  const double charts_bottom = kTrainTop + panels * (kPanelH + kPanelGap) - kPanelGap;
  Svg svg(kTrainWidth, charts_bottom + 60);
  HatchPatterns(svg);
  DrawTrainingLegend(svg, title);
  const double max_bytes = TrainingMaxBytes(strategies);
  for (size_t i = 0; i < strategies.size(); ++i) {
    DrawStrategyPanel(svg, strategies[i],
                      kTrainTop + static_cast<double>(i) * (kPanelH + kPanelGap), max_bytes);
  }
  svg.Text(kTrainLeft + kTrainChartW / 2, charts_bottom + 34,
           "schedule step (forward, then backward and updates)", "text-anchor=\"middle\"");
  DrawBreakdownBars(svg, strategies, kTrainTop, charts_bottom, max_bytes);
  return svg.Finish();
}

}  // namespace memfold
