#include "memfold/io/curve_svg.h"

#include <algorithm>
#include <cmath>

#include "memfold/io/svg_canvas.h"

namespace memfold {
namespace {

constexpr double kWidth = 640, kHeight = 360;
constexpr double kLeft = 70, kRight = 20, kTop = 40, kBottom = 50;

}  // namespace

std::string CurveSvg(const std::string& title, const std::vector<CurvePoint>& points) {
  svg::Svg out(kWidth, kHeight);
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  const double bottom = kTop + plot_h;
  double max_bytes = 1, max_overhead = 1.1;
  for (const CurvePoint& p : points) {
    max_bytes = std::max(max_bytes, static_cast<double>(p.arena_bytes));
    max_overhead = std::max(max_overhead, p.overhead);
  }
  max_bytes *= 1.05;
  max_overhead = 1 + (max_overhead - 1) * 1.05;
  out.Text(kLeft, 20, svg::Shorten(title, 90), "font-weight=\"bold\"");
  svg::ByteAxis(out, kLeft, plot_w, bottom, plot_h, max_bytes, 6);
  auto x_of = [&](double overhead) { return kLeft + (overhead - 1) / (max_overhead - 1) * plot_w; };
  auto y_of = [&](int64_t bytes) {
    return bottom - static_cast<double>(bytes) / max_bytes * plot_h;
  };
  out.Line(kLeft, bottom, kLeft + plot_w, bottom, "stroke=\"#444\" stroke-width=\"1\"");
  const double step = max_overhead - 1 > 1 ? 0.5 : max_overhead - 1 > 0.4 ? 0.1 : 0.05;
  for (double o = 1; o <= max_overhead + 1e-9; o += step) {
    out.Line(x_of(o), bottom, x_of(o), bottom + 4, "stroke=\"#444\"");
    char label[16];
    std::snprintf(label, sizeof(label), "%.2f", o);
    out.Text(x_of(o), bottom + 18, label, "text-anchor=\"middle\"");
  }
  out.Text(kLeft + plot_w / 2, kHeight - 8, "compute overhead (total FLOPs / the model's)",
           "text-anchor=\"middle\"");
  for (size_t k = 0; k + 1 < points.size(); ++k) {
    const double x0 = x_of(points[k].overhead), x1 = x_of(points[k + 1].overhead);
    const double y0 = y_of(points[k].arena_bytes), y1 = y_of(points[k + 1].arena_bytes);
    out.Line(x0, y0, x1, y0, "stroke=\"#1f77b4\" stroke-width=\"2\"");
    out.Line(x1, y0, x1, y1, "stroke=\"#1f77b4\" stroke-width=\"2\"");
  }
  for (const CurvePoint& p : points) {
    // A small diamond per verified plan; its tooltip says what the plan is.
    const double x = x_of(p.overhead), y = y_of(p.arena_bytes), r = 4;
    out.Polygon({{x, y - r}, {x + r, y}, {x, y + r}, {x - r, y}}, "fill=\"#1f77b4\"", p.label);
  }
  return out.Finish();
}

}  // namespace memfold
