#include "memfold/io/svg.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>
#include <vector>

#include "memfold/io/text.h"

namespace memfold {
namespace {

// ---- Text and numbers -------------------------------------------------------------------

// Length of the valid UTF-8 sequence starting at text[at] (its code point in *code), or 0 if
// the bytes there are not one (overlong forms, surrogates and code points above U+10FFFF are
// invalid).
size_t DecodeUtf8(std::string_view text, size_t at, uint32_t* code) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[at + k]); };
  const unsigned char lead = byte(0);
  size_t length = 0;
  uint32_t min_code = 0;
  if (lead < 0x80) {
    *code = lead;
    return 1;
  }
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, min_code = 0x80;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, min_code = 0x800;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, min_code = 0x10000;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  *code = lead & (0x7F >> length);
  for (size_t k = 1; k < length; ++k) {
    if ((byte(k) & 0xC0) != 0x80) return 0;
    *code = (*code << 6) | (byte(k) & 0x3F);
  }
  if (*code < min_code || *code > 0x10FFFF || (*code >= 0xD800 && *code <= 0xDFFF)) return 0;
  return length;
}

// Characters XML 1.0 allows in a document.
bool XmlAllows(uint32_t code) {
  return code == 0x9 || code == 0xA || code == 0xD || (code >= 0x20 && code <= 0xD7FF) ||
         (code >= 0xE000 && code <= 0xFFFD) || code >= 0x10000;
}

// A label cut to `max_chars` characters (not bytes), with an ellipsis when cut.
std::string Shorten(std::string_view text, size_t max_chars) {
  size_t at = 0, chars = 0;
  while (at < text.size() && chars < max_chars) {
    uint32_t code = 0;
    at += std::max<size_t>(1, DecodeUtf8(text, at, &code));
    ++chars;
  }
  if (at >= text.size()) return std::string(text);
  return std::string(text.substr(0, at)) + "\u2026";
}

// A coordinate or length with at most one decimal, "-0" avoided.
std::string Num(double value) {
  char text[32];
  const double rounded = std::round(value * 10) / 10;
  std::snprintf(text, sizeof(text), "%.1f", rounded == 0 ? 0.0 : rounded);
  std::string s = text;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s;
}

std::string Percent(double part, double whole) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f %%", whole > 0 ? 100.0 * part / whole : 0.0);
  return text;
}

// ---- Axis scales --------------------------------------------------------------------------

// Byte ticks in one binary unit (B, KiB, MiB, GiB): a step of 1, 2 or 5 times a power of ten
// of that unit, giving at most `max_ticks` intervals up to `max_bytes`.
struct ByteTicks {
  double unit = 1;
  const char* unit_name = "B";
  double step = 1;  // in bytes
};

ByteTicks ChooseByteTicks(double max_bytes, int max_ticks) {
  ByteTicks t;
  const std::array<const char*, 4> names = {"B", "KiB", "MiB", "GiB"};
  for (size_t k = 1; k < names.size() && max_bytes >= std::pow(1024.0, static_cast<double>(k));
       ++k) {
    t.unit = std::pow(1024.0, static_cast<double>(k));
    t.unit_name = names[k];
  }
  const double raw = std::max(max_bytes / t.unit / max_ticks, 1e-9);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * power;
  for (double factor : {1.0, 2.0, 5.0}) {
    if (factor * power >= raw) {
      step = factor * power;
      break;
    }
  }
  if (t.unit_name == names[0]) step = std::max(step, 1.0);
  t.step = step * t.unit;
  return t;
}

std::string TickLabel(double bytes, const ByteTicks& t) {
  char text[32];
  const double value = bytes / t.unit;
  std::snprintf(text, sizeof(text), value == std::floor(value) ? "%.0f %s" : "%.1f %s", value,
                t.unit_name);
  return text;
}

// Step ticks: 1, 2 or 5 times a power of ten, at most `max_ticks` intervals.
int64_t StepTick(int64_t steps, int max_ticks) {
  const double raw = std::max(1.0, static_cast<double>(steps) / max_ticks);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    if (factor * power >= raw) return static_cast<int64_t>(factor * power);
  }
  return static_cast<int64_t>(10 * power);
}

// ---- A minimal SVG writer -------------------------------------------------------------------

constexpr const char* kFont = "font-family=\"DejaVu Sans,Helvetica,Arial,sans-serif\"";

class Svg {
 public:
  Svg(double width, double height) {
    out_ +=
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
        "width=\"" +
        Num(width) + "\" height=\"" + Num(height) + "\" viewBox=\"0 0 " + Num(width) + " " +
        Num(height) + "\" " + kFont + " font-size=\"11\">\n";
  }
  void Raw(std::string_view markup) { out_ += markup; }
  // A rectangle; `title` (escaped here) becomes its tooltip.
  void Rect(double x, double y, double w, double h, std::string_view style,
            std::string_view title = {}) {
    out_ += "<rect x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" width=\"" + Num(w) + "\" height=\"" +
            Num(h) + "\" " + std::string(style);
    if (title.empty()) {
      out_ += "/>\n";
    } else {
      out_ += "><title>" + XmlEscape(title) + "</title></rect>\n";
    }
  }
  void Line(double x1, double y1, double x2, double y2, std::string_view style) {
    out_ += "<line x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) + "\" x2=\"" + Num(x2) + "\" y2=\"" +
            Num(y2) + "\" " + std::string(style) + "/>\n";
  }
  // Text (escaped here); `attributes` such as text-anchor or transform are trusted markup;
  // `title` becomes its tooltip.
  void Text(double x, double y, std::string_view text, std::string_view attributes = {},
            std::string_view title = {}) {
    out_ += "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\"" + (attributes.empty() ? "" : " ") +
            std::string(attributes) + ">" + XmlEscape(text);
    if (!title.empty()) out_ += "<title>" + XmlEscape(title) + "</title>";
    out_ += "</text>\n";
  }
  void Polygon(const std::vector<std::pair<double, double>>& points, std::string_view style,
               std::string_view title) {
    out_ += "<polygon points=\"";
    for (const auto& [x, y] : points) out_ += Num(x) + "," + Num(y) + " ";
    out_ += "\" " + std::string(style) + "><title>" + XmlEscape(title) + "</title></polygon>\n";
  }
  std::string Finish() { return out_ + "</svg>\n"; }

 private:
  std::string out_;
};

// Diagonal hatching for overlapping bytes and fragmentation.
void HatchPatterns(Svg& svg) {
  svg.Raw(
      "<defs>\n"
      "<pattern id=\"overlap\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
      "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#fde0dd\"/>"
      "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#c51b8a\" "
      "stroke-width=\"3\"/></pattern>\n"
      "<pattern id=\"spare\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
      "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#f2f2f2\"/>"
      "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#bab0ac\" "
      "stroke-width=\"2\"/></pattern>\n"
      "</defs>\n");
}

void LegendEntry(Svg& svg, double* x, double y, std::string_view swatch_style,
                 std::string_view label) {
  svg.Rect(*x, y - 9, 14, 10, swatch_style);
  svg.Text(*x + 18, y, label);
  *x += 28 + 6.2 * static_cast<double>(label.size());
}

void LegendLine(Svg& svg, double* x, double y, std::string_view line_style,
                std::string_view label) {
  svg.Line(*x, y - 4, *x + 16, y - 4, line_style);
  svg.Text(*x + 20, y, label);
  *x += 30 + 6.2 * static_cast<double>(label.size());
}

// Horizontal grid lines and byte labels left of a chart.
void ByteAxis(Svg& svg, double left, double width, double bottom, double height, double max_bytes,
              int max_ticks) {
  const ByteTicks ticks = ChooseByteTicks(max_bytes, max_ticks);
  for (double b = 0; b <= max_bytes * (1 + 1e-9); b += ticks.step) {
    const double y = bottom - b / max_bytes * height;
    svg.Line(left, y, left + width, y, "stroke=\"#e6e6e6\" stroke-width=\"1\"");
    svg.Text(left - 6, y + 4, TickLabel(b, ticks), "text-anchor=\"end\"");
  }
  svg.Line(left, bottom, left, bottom - height, "stroke=\"#444\" stroke-width=\"1\"");
}

// ---- Arena picture ----------------------------------------------------------------------------

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

// ---- Training picture ---------------------------------------------------------------------------

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

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    uint32_t code = 0;
    const size_t length = DecodeUtf8(text, at, &code);
    if (length == 0 || !XmlAllows(code)) {
      out += "\uFFFD";
      at += std::max<size_t>(length, 1);
      continue;
    }
    switch (text[at]) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.append(text.substr(at, length));
    }
    at += length;
  }
  return out;
}

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
