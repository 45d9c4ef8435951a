#include "memfold/io/svg_canvas.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "memfold/io/xml.h"

namespace memfold::svg {
namespace {

constexpr const char* kFont = "font-family=\"DejaVu Sans,Helvetica,Arial,sans-serif\"";

}  // namespace

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

int64_t StepTick(int64_t steps, int max_ticks) {
  const double raw = std::max(1.0, static_cast<double>(steps) / max_ticks);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    if (factor * power >= raw) return static_cast<int64_t>(factor * power);
  }
  return static_cast<int64_t>(10 * power);
}

Svg::Svg(double width, double height) {
  out_ +=
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"" +
      Num(width) + "\" height=\"" + Num(height) + "\" viewBox=\"0 0 " + Num(width) + " " +
      Num(height) + "\" " + kFont + " font-size=\"11\">\n";
}

void Svg::Rect(double x, double y, double w, double h, std::string_view style,
               std::string_view title) {
  out_ += "<rect x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" width=\"" + Num(w) + "\" height=\"" +
          Num(h) + "\" " + std::string(style);
  if (title.empty()) {
    out_ += "/>\n";
  } else {
    out_ += "><title>" + XmlEscape(title) + "</title></rect>\n";
  }
}

void Svg::Line(double x1, double y1, double x2, double y2, std::string_view style) {
  out_ += "<line x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) + "\" x2=\"" + Num(x2) + "\" y2=\"" +
          Num(y2) + "\" " + std::string(style) + "/>\n";
}

void Svg::Text(double x, double y, std::string_view text, std::string_view attributes,
               std::string_view title) {
  out_ += "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\"" + (attributes.empty() ? "" : " ") +
          std::string(attributes) + ">" + XmlEscape(text);
  if (!title.empty()) out_ += "<title>" + XmlEscape(title) + "</title>";
  out_ += "</text>\n";
}

void Svg::Polygon(const std::vector<std::pair<double, double>>& points, std::string_view style,
                  std::string_view title) {
  out_ += "<polygon points=\"";
  for (const auto& [x, y] : points) out_ += Num(x) + "," + Num(y) + " ";
  out_ += "\" " + std::string(style) + "><title>" + XmlEscape(title) + "</title></polygon>\n";
}

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

}  // namespace memfold::svg
