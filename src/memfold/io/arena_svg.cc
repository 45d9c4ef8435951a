#include "memfold/io/arena_svg.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "memfold/io/svg_canvas.h"
#include "memfold/io/text.h"

namespace memfold {
namespace {

using namespace svg;  // NOLINT: the drawing vocabulary of this file

constexpr std::array<const char*, 10> kBufferColors = {"#8db0d8", "#f6b77a", "#9fd49a", "#e99a9b",
                                                       "#c3a8dc", "#c9a79c", "#eeaed6", "#b7d7d3",
                                                       "#e5d38a", "#a9c7a0"};
constexpr double kArenaChartHeight = 560;
constexpr double kArenaLeft = 84, kArenaRight = 200, kArenaTop = 72, kArenaBottom = 190;
constexpr size_t kMaxDrawnBuffers = 1000;  // the rest are merged, to bound the file size

struct ArenaLayout {
  int32_t steps = 0;   // time steps 0..end_time
  double step_px = 0;  // width of one step
  double chart_w = 0;
  double max_bytes = 1;  // top of the y axis
  int32_t label_every = 1;
  double x(double step) const { return kArenaLeft + step * step_px; }
  double y(double bytes) const {
    return kArenaTop + kArenaChartHeight - bytes / max_bytes * kArenaChartHeight;
  }
};

ArenaLayout LayOutArena(const GraphPlan& gp) {
  ArenaLayout l;
  l.steps = gp.liveness.end_time + 1;
  const double steps = static_cast<double>(l.steps);
  // Up to 400 steps every operator gets a readable column; beyond, the width is capped.
  // Small graphs get wide columns, so the chart (and the legend above it) is never narrow.
  l.step_px = l.steps <= 400 ? std::max(std::clamp(1200.0 / steps, 10.0, 24.0), 720.0 / steps)
                             : 4000.0 / steps;
  l.chart_w = l.step_px * steps;
  l.label_every = static_cast<int32_t>(std::ceil(11.0 / l.step_px));
  l.max_bytes =
      static_cast<double>(std::max<int64_t>({gp.plan.arena_bytes, gp.lower_bound, 1})) * 1.06;
  return l;
}

// What runs at each time step: "inputs", "#i name" for operators, "outputs".
std::vector<std::string> StepNames(const Graph& g, int32_t steps) {
  std::vector<std::string> names(static_cast<size_t>(steps));
  for (int32_t t = 0; t < steps; ++t) {
    if (t == 0) {
      names[0] = "graph inputs";
    } else if (t - 1 < static_cast<int32_t>(g.schedule.size())) {
      const Node& n = g.node(g.schedule[static_cast<size_t>(t - 1)]);
      names[static_cast<size_t>(t)] =
          "#" + std::to_string(t - 1) + " " + n.name + " (" + n.op + ")";
    } else {
      names[static_cast<size_t>(t)] = "outputs read";
    }
  }
  return names;
}

// Each request's name: its value's, or "scratch of NODE".
std::vector<std::string> RequestNames(const Graph& g, const Liveness& live) {
  std::vector<std::string> names(live.requests.size(), "scratch");
  for (size_t r = 0; r < live.requests.size(); ++r) {
    if (live.value_of[r] != kNoValue) names[r] = g.value(live.value_of[r]).name;
  }
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    for (int32_t r : live.scratch_of[static_cast<size_t>(n)]) {
      names[static_cast<size_t>(r)] = "scratch of " + g.node(n).name;
    }
  }
  return names;
}

std::string BufferTitle(const std::string& name, const BufferRequest& r, int64_t offset,
                        const std::vector<std::string>& step_names) {
  return name + "\n" + HumanBytes(r.bytes) + " (" + GroupDigits(r.bytes) + " B) at offset " +
         GroupDigits(offset) + "\nlive from step " + std::to_string(r.first) + " (" +
         step_names[static_cast<size_t>(r.first)] + ")\n       to step " + std::to_string(r.last) +
         " (" + step_names[static_cast<size_t>(r.last)] + ")";
}

// Buffers too small to draw one by one: painted into a grid of 1 x kCellH px cells and emitted
// as merged runs (horizontal runs, stacked vertically where identical).
constexpr double kCellH = 3;
class MergedCells {
 public:
  MergedCells(double width, double height)
      : cols_(static_cast<int>(std::ceil(width))),
        rows_(static_cast<int>(std::ceil(height / kCellH))),
        cells_(static_cast<size_t>(cols_) * static_cast<size_t>(rows_), 0) {}
  void Paint(double x0, double x1, double y0, double y1) {  // chart-relative pixels
    const int c0 = std::clamp(static_cast<int>(std::floor(x0)), 0, cols_ - 1);
    const int c1 = std::clamp(static_cast<int>(std::ceil(x1)), c0 + 1, cols_);
    const int r0 = std::clamp(static_cast<int>(std::floor(y0 / kCellH)), 0, rows_ - 1);
    const int r1 = std::clamp(static_cast<int>(std::ceil(y1 / kCellH)), r0 + 1, rows_);
    for (int r = r0; r < r1; ++r) {
      for (int c = c0; c < c1; ++c) cells_[Index(r, c)] = 1;
    }
    any_ = true;
  }
  bool any() const { return any_; }
  void Emit(Svg& svg, double left, double top) const {
    std::map<std::pair<int, int>, int> open;  // run [c0, c1) -> first row it appeared in
    for (int r = 0; r <= rows_; ++r) {
      std::map<std::pair<int, int>, int> next;
      for (const auto& run : RunsOfRow(r)) {
        auto it = open.find(run);
        next[run] = it == open.end() ? r : it->second;
        if (it != open.end()) open.erase(it);
      }
      for (const auto& [run, first_row] : open) {
        svg.Rect(left + run.first, top + kCellH * first_row, run.second - run.first,
                 kCellH * (r - first_row), "fill=\"#9a9a9a\"");
      }
      open = std::move(next);
    }
  }

 private:
  size_t Index(int r, int c) const {
    return static_cast<size_t>(r) * static_cast<size_t>(cols_) + static_cast<size_t>(c);
  }
  std::vector<std::pair<int, int>> RunsOfRow(int r) const {
    std::vector<std::pair<int, int>> runs;
    if (r >= rows_) return runs;
    for (int c = 0; c < cols_;) {
      if (!cells_[Index(r, c)]) {
        ++c;
        continue;
      }
      const int start = c;
      while (c < cols_ && cells_[Index(r, c)]) ++c;
      runs.emplace_back(start, c);
    }
    return runs;
  }
  int cols_, rows_;
  std::vector<char> cells_;
  bool any_ = false;
};

// Requests drawn one by one: at least kMinDrawnPx in both directions, the largest areas first
// up to kMaxDrawnBuffers; the others are merged.
constexpr double kMinDrawnPx = 2.5;
std::vector<char> DrawnIndividually(const GraphPlan& gp, const ArenaLayout& l) {
  const std::vector<BufferRequest>& requests = gp.liveness.requests;
  std::vector<double> area(requests.size(), 0);
  std::vector<size_t> candidates;
  for (size_t i = 0; i < requests.size(); ++i) {
    const BufferRequest& r = requests[i];
    const double w = (r.last - r.first + 1) * l.step_px;
    const double h = static_cast<double>(r.bytes) / l.max_bytes * kArenaChartHeight;
    area[i] = w * h;
    if (r.bytes > 0 && w >= kMinDrawnPx && h >= kMinDrawnPx) candidates.push_back(i);
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](size_t a, size_t b) { return area[a] > area[b]; });
  if (candidates.size() > kMaxDrawnBuffers) candidates.resize(kMaxDrawnBuffers);
  std::vector<char> drawn(requests.size(), 0);
  for (size_t i : candidates) drawn[i] = 1;
  return drawn;
}

void DrawBuffers(Svg& svg, const Graph& g, const GraphPlan& gp, const ArenaLayout& l,
                 const std::vector<std::string>& step_names, bool* merged_any) {
  const std::vector<std::string> names = RequestNames(g, gp.liveness);
  const std::vector<char> drawn = DrawnIndividually(gp, l);
  MergedCells merged(l.chart_w, kArenaChartHeight);
  for (const BufferRequest& r : gp.liveness.requests) {
    if (r.bytes == 0) continue;
    const int64_t offset = gp.plan.offsets[static_cast<size_t>(r.id)];
    const double x0 = l.x(r.first), x1 = l.x(r.last + 1);
    const double y0 = l.y(static_cast<double>(offset + r.bytes)),
                 y1 = l.y(static_cast<double>(offset));
    if (!drawn[static_cast<size_t>(r.id)]) {
      merged.Paint(x0 - kArenaLeft, x1 - kArenaLeft, y0 - kArenaTop, y1 - kArenaTop);
      continue;
    }
    const bool scratch = gp.liveness.value_of[static_cast<size_t>(r.id)] == kNoValue;
    const std::string fill =
        scratch ? "#c8c8c8" : kBufferColors[static_cast<size_t>(r.id) % kBufferColors.size()];
    svg.Rect(x0, y0, x1 - x0, y1 - y0,
             "fill=\"" + fill + "\" stroke=\"#ffffff\" stroke-width=\"0.6\"",
             BufferTitle(names[static_cast<size_t>(r.id)], r, offset, step_names));
  }
  merged.Emit(svg, kArenaLeft, kArenaTop);
  *merged_any = merged.any();
}

// One output's bytes shared with an input that dies at its operator.
struct SharedBytes {
  int32_t out, in;
  int64_t begin, end, allowed;
};

std::vector<SharedBytes> FindSharedBytes(const GraphPlan& gp) {
  std::vector<SharedBytes> shared;
  for (const BufferRequest& out : gp.liveness.requests) {
    const int64_t out_begin = gp.plan.offsets[static_cast<size_t>(out.id)],
                  out_end = out_begin + out.bytes;
    for (const OverlapAllowance& a : out.may_overlap) {
      const int64_t in_begin = gp.plan.offsets[static_cast<size_t>(a.input)];
      const int64_t in_end = in_begin + gp.liveness.requests[static_cast<size_t>(a.input)].bytes;
      const int64_t begin = std::max(out_begin, in_begin), end = std::min(out_end, in_end);
      if (end > begin) shared.push_back({out.id, a.input, begin, end, a.max_bytes});
    }
  }
  return shared;
}

struct OverlapCount {
  size_t drawn = 0, total = 0;
};

// The shared bytes hatched in their operator's column: those at least a pixel tall in a
// column at least kMinDrawnPx wide, the largest kMaxDrawnBuffers of them.
OverlapCount DrawOverlaps(Svg& svg, const Graph& g, const GraphPlan& gp, const ArenaLayout& l) {
  const std::vector<std::string> names = RequestNames(g, gp.liveness);
  std::vector<SharedBytes> shared = FindSharedBytes(gp);
  OverlapCount count{0, shared.size()};
  std::stable_sort(shared.begin(), shared.end(), [](const SharedBytes& a, const SharedBytes& b) {
    return a.end - a.begin > b.end - b.begin;
  });
  for (const SharedBytes& s : shared) {
    const double y0 = l.y(static_cast<double>(s.end)), y1 = l.y(static_cast<double>(s.begin));
    if (count.drawn == kMaxDrawnBuffers || l.step_px < kMinDrawnPx || y1 - y0 < 1) break;
    svg.Rect(l.x(gp.liveness.requests[static_cast<size_t>(s.out)].first), y0, l.step_px, y1 - y0,
             "fill=\"url(#overlap)\" stroke=\"#c51b8a\" stroke-width=\"1\"",
             names[static_cast<size_t>(s.out)] + " is written over the start of " +
                 names[static_cast<size_t>(s.in)] + ", which dies at this operator:\n" +
                 GroupDigits(s.end - s.begin) +
                 " B shared (proven safe overlap O_s = " + GroupDigits(s.allowed) + " B)");
    ++count.drawn;
  }
  return count;
}

void DrawStepAxis(Svg& svg, const ArenaLayout& l, const std::vector<std::string>& step_names) {
  const double bottom = kArenaTop + kArenaChartHeight;
  svg.Line(kArenaLeft, bottom, kArenaLeft + l.chart_w, bottom,
           "stroke=\"#444\" stroke-width=\"1\"");
  const double font = std::min(10.0, std::max(7.0, l.step_px * l.label_every * 0.8));
  for (int32_t t = 0; t < l.steps; t += l.label_every) {
    const double x = l.x(t + 0.5);
    svg.Line(x, bottom, x, bottom + 4, "stroke=\"#444\" stroke-width=\"1\"");
    const std::string& name = step_names[static_cast<size_t>(t)];
    svg.Text(x + font * 0.35, bottom + 8, Shorten(name, 30),
             "font-size=\"" + Num(font) + "\" text-anchor=\"end\" transform=\"rotate(-60 " +
                 Num(x + font * 0.35) + " " + Num(bottom + 8) + ")\"",
             "step " + std::to_string(t) + ": " + name);
  }
}

void DrawArenaLines(Svg& svg, const GraphPlan& gp, const ArenaLayout& l,
                    const std::vector<std::string>& step_names) {
  const double right = kArenaLeft + l.chart_w;
  const double arena_y = l.y(static_cast<double>(gp.plan.arena_bytes));
  double bound_y = l.y(static_cast<double>(gp.lower_bound));
  svg.Line(kArenaLeft, arena_y, right, arena_y, "stroke=\"#d62728\" stroke-width=\"2\"");
  svg.Line(kArenaLeft, bound_y, right, bound_y,
           "stroke=\"#222\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"");
  svg.Text(right + 6, arena_y + 4, "arena " + HumanBytes(gp.plan.arena_bytes), "fill=\"#d62728\"");
  if (std::fabs(bound_y - arena_y) < 14) bound_y = arena_y + 14;
  svg.Text(right + 6, bound_y + 4, "lower bound " + HumanBytes(gp.lower_bound));
  const double peak_x = l.x(gp.peak_time + 0.5);
  svg.Line(peak_x, kArenaTop - 4, peak_x, kArenaTop + kArenaChartHeight,
           "stroke=\"#d62728\" stroke-width=\"1\" stroke-dasharray=\"2 3\"");
  svg.Text(peak_x, kArenaTop - 8,
           "peak: " + Shorten(step_names[static_cast<size_t>(gp.peak_time)], 40),
           "fill=\"#d62728\" text-anchor=\"" +
               std::string(peak_x > kArenaLeft + l.chart_w / 2 ? "end" : "start") + "\"");
}

void DrawArenaLegend(Svg& svg, std::string_view title, const GraphPlan& gp, OverlapCount overlaps,
                     bool merged) {
  svg.Text(kArenaLeft, 20,
           std::string(title) + ": " + std::to_string(gp.liveness.requests.size()) +
               " buffers, arena " + HumanBytes(gp.plan.arena_bytes) + " (" +
               GroupDigits(gp.plan.arena_bytes) + " B)",
           "font-size=\"14\" font-weight=\"bold\"");
  double x = kArenaLeft;
  LegendEntry(svg, &x, 42, "fill=\"#8db0d8\"", "buffer: lifetime x bytes (hover)");
  if (overlaps.total > 0) {
    const std::string shown = overlaps.drawn == overlaps.total
                                  ? ""
                                  : " (" + GroupDigits(static_cast<int64_t>(overlaps.drawn)) +
                                        " of " + GroupDigits(static_cast<int64_t>(overlaps.total)) +
                                        " shown)";
    LegendEntry(svg, &x, 42, "fill=\"url(#overlap)\" stroke=\"#c51b8a\"",
                "output over its dying input (O_s)" + shown);
  }
  if (merged) LegendEntry(svg, &x, 42, "fill=\"#9a9a9a\"", "small buffers, merged");
  LegendLine(svg, &x, 42, "stroke=\"#d62728\" stroke-width=\"2\"", "arena (peak)");
  LegendLine(svg, &x, 42, "stroke=\"#222\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"",
             "lower bound");
  svg.Text(12, kArenaTop + kArenaChartHeight / 2, "byte offset",
           "text-anchor=\"middle\" transform=\"rotate(-90 12 " +
               Num(kArenaTop + kArenaChartHeight / 2) + ")\"");
}

}  // namespace

std::string ArenaSvg(const Graph& graph, const GraphPlan& plan, std::string_view title) {
  const ArenaLayout layout = LayOutArena(plan);
  const std::vector<std::string> step_names = StepNames(graph, layout.steps);
  Svg svg(kArenaLeft + layout.chart_w + kArenaRight, kArenaTop + kArenaChartHeight + kArenaBottom);
  HatchPatterns(svg);
  ByteAxis(svg, kArenaLeft, layout.chart_w, kArenaTop + kArenaChartHeight, kArenaChartHeight,
           layout.max_bytes, 8);
  bool merged = false;
  DrawBuffers(svg, graph, plan, layout, step_names, &merged);
  const OverlapCount overlaps = DrawOverlaps(svg, graph, plan, layout);
  DrawArenaLines(svg, plan, layout, step_names);
  DrawStepAxis(svg, layout, step_names);
  DrawArenaLegend(svg, title, plan, overlaps, merged);
  return svg.Finish();
}

}  // namespace memfold
