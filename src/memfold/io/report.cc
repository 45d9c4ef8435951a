#include "memfold/io/report.h"

#include <cctype>

#include "memfold/io/xml.h"

namespace memfold {
namespace {

// No '<' or '&' in the CSS: the page must stay well-formed XML.
constexpr const char* kStyle = R"css(
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 24px 32px; color: #222; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ccc; padding-bottom: 4px; }
p.subtitle { color: #666; margin-top: 0; }
nav a { margin-right: 14px; }
table { border-collapse: collapse; margin: 10px 0 18px 0; font-size: 13px; }
caption { text-align: left; font-weight: bold; padding-bottom: 4px; }
th, td { padding: 3px 10px; border-bottom: 1px solid #e4e4e4; text-align: left; }
th { background: #f3f3f3; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
div.picture { overflow-x: auto; border: 1px solid #eee; margin: 8px 0; }
)css";

// Anchors keep to [a-z0-9_-] so they need no escaping in attributes.
std::string Anchor(const std::string& id) {
  std::string out;
  for (char c : id) {
    const auto u = static_cast<unsigned char>(c);
    out += std::isalnum(u) || c == '_' || c == '-' ? static_cast<char>(std::tolower(u)) : '-';
  }
  return out.empty() ? "section" : out;
}

std::string Cell(const char* tag, const std::string& text, bool numeric) {
  return std::string("<") + tag + (numeric ? " class=\"num\"" : "") + ">" + XmlEscape(text) + "</" +
         tag + ">";
}

std::string RenderTable(const ReportTable& table) {
  std::string html = "<table>\n";
  if (!table.caption.empty()) html += "<caption>" + XmlEscape(table.caption) + "</caption>\n";
  std::vector<bool> numeric;
  html += "<thead><tr>";
  for (const std::string& h : table.header) {
    numeric.push_back(!h.empty() && h[0] == '>');
    html += Cell("th", numeric.back() ? h.substr(1) : h, numeric.back());
  }
  html += "</tr></thead>\n<tbody>\n";
  for (const std::vector<std::string>& row : table.rows) {
    html += "<tr>";
    for (size_t k = 0; k < row.size(); ++k)
      html += Cell("td", row[k], k < numeric.size() && numeric[k]);
    html += "</tr>\n";
  }
  return html + "</tbody>\n</table>\n";
}

std::string RenderSection(const ReportSection& section) {
  std::string html =
      "<section id=\"" + Anchor(section.id) + "\">\n<h2>" + XmlEscape(section.title) + "</h2>\n";
  for (const std::string& p : section.paragraphs) html += "<p>" + XmlEscape(p) + "</p>\n";
  for (const ReportTable& t : section.tables) html += RenderTable(t);
  if (!section.svg.empty())
    html += "<div class=\"picture\">\n" + InlineSvg(section.svg) + "</div>\n";
  return html + "</section>\n";
}

}  // namespace

std::string InlineSvg(const std::string& svg_document) {
  if (svg_document.rfind("<?xml", 0) != 0) return svg_document;
  const size_t end = svg_document.find("?>");
  if (end == std::string::npos) return svg_document;
  size_t start = end + 2;
  while (start < svg_document.size() &&
         (svg_document[start] == '\n' || svg_document[start] == '\r'))
    ++start;
  return svg_document.substr(start);
}

std::string RenderHtml(const Report& report) {
  std::string html =
      "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
      "<meta charset=\"utf-8\"/>\n<title>" +
      XmlEscape(report.title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<h1>" +
      XmlEscape(report.title) + "</h1>\n";
  if (!report.subtitle.empty())
    html += "<p class=\"subtitle\">" + XmlEscape(report.subtitle) + "</p>\n";
  html += "<nav>";
  for (const ReportSection& s : report.sections)
    html += "<a href=\"#" + Anchor(s.id) + "\">" + XmlEscape(s.title) + "</a>";
  html += "</nav>\n";
  for (const ReportSection& s : report.sections) html += RenderSection(s);
  return html + "</body>\n</html>\n";
}

}  // namespace memfold
