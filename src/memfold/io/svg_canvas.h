// What the SVG pictures share (io/arena_svg.h, io/training_svg.h): a minimal writer of
// self-contained SVG (no scripts, fonts or links; every text and title escaped), number
// formatting, byte and step axis ticks, the hatch patterns and legend entries. O(output).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memfold::svg {

// A coordinate or length with at most one decimal, "-0" avoided.
std::string Num(double value);
std::string Percent(double part, double whole);
// A label cut to `max_chars` characters (not bytes), with an ellipsis when cut.
std::string Shorten(std::string_view text, size_t max_chars);

// Byte ticks in one binary unit (B, KiB, MiB, GiB): a step of 1, 2 or 5 times a power of ten
// of that unit, giving at most `max_ticks` intervals up to `max_bytes`.
struct ByteTicks {
  double unit = 1;
  const char* unit_name = "B";
  double step = 1;  // in bytes
};
ByteTicks ChooseByteTicks(double max_bytes, int max_ticks);
std::string TickLabel(double bytes, const ByteTicks& t);
// Step ticks: 1, 2 or 5 times a power of ten, at most `max_ticks` intervals.
int64_t StepTick(int64_t steps, int max_ticks);

class Svg {
 public:
  Svg(double width, double height);
  void Raw(std::string_view markup) { out_ += markup; }
  // A rectangle; `title` (escaped here) becomes its tooltip.
  void Rect(double x, double y, double w, double h, std::string_view style,
            std::string_view title = {});
  void Line(double x1, double y1, double x2, double y2, std::string_view style);
  // Text (escaped here); `attributes` such as text-anchor or transform are trusted markup;
  // `title` becomes its tooltip.
  void Text(double x, double y, std::string_view text, std::string_view attributes = {},
            std::string_view title = {});
  void Polygon(const std::vector<std::pair<double, double>>& points, std::string_view style,
               std::string_view title);
  std::string Finish() { return out_ + "</svg>\n"; }

 private:
  std::string out_;
};

// Diagonal hatching for overlapping bytes (#overlap) and fragmentation (#spare).
void HatchPatterns(Svg& svg);
// A swatch or a line with its label, advancing *x past it.
void LegendEntry(Svg& svg, double* x, double y, std::string_view swatch_style,
                 std::string_view label);
void LegendLine(Svg& svg, double* x, double y, std::string_view line_style, std::string_view label);
// Horizontal grid lines and byte labels left of a chart.
void ByteAxis(Svg& svg, double left, double width, double bottom, double height, double max_bytes,
              int max_ticks);

}  // namespace memfold::svg
