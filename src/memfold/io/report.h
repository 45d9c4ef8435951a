// One self-contained HTML page (inline CSS and SVG; no scripts, fonts or links to fetch) made of
// sections of text, tables and pictures: the renderer behind `memfold report`. The page is
// also well-formed XML (polyglot XHTML), so XML tools can check it.
//
// Every string of a Report is plain text and is escaped here (tensor and model names are user
// input); only `svg` holds markup, and it must be an SVG document memfold produced (io/arena_svg.h,
// io/training_svg.h). O(size of the page).
#pragma once

#include <string>
#include <vector>

namespace memfold {

struct ReportTable {
  std::string caption;                         // may be empty
  std::vector<std::string> header;             // a leading '>' right-aligns the column (not shown)
  std::vector<std::vector<std::string>> rows;  // rows may be shorter than the header
};

struct ReportSection {
  std::string id;  // anchor, [a-z0-9_-]; also used in the table of contents
  std::string title;
  std::vector<std::string> paragraphs;
  std::vector<ReportTable> tables;
  std::string svg;  // an SVG document shown after the tables, or empty
};

struct Report {
  std::string title;
  std::string subtitle;
  std::vector<ReportSection> sections;
};

std::string RenderHtml(const Report& report);

// An SVG document as an element to inline in HTML: the XML declaration removed.
std::string InlineSvg(const std::string& svg_document);

}  // namespace memfold
