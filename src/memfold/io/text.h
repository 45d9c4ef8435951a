// Human-readable output: byte sizes ("5.74 MiB"), digit grouping ("6,021,120"), fixed-point
// numbers ("3.14", "+0.90") and aligned text tables. O(cells).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memfold {

std::string GroupDigits(int64_t value);             // 6021120 -> "6,021,120"
std::string HumanBytes(int64_t bytes);              // 6021120 -> "5.74 MiB"; < 1 KiB -> "512 B"
std::string Fixed(double value, int digits);        // (3.14159, 2) -> "3.14"
std::string SignedFixed(double value, int digits);  // (0.9, 2) -> "+0.90"; (-0.9, 2) -> "-0.90"
// Two sizes for one sentence ("the arena ... does not fit the budget ..."): HumanBytes, unless
// both round to the same text; then exact bytes ("65,952 B", "65,951 B").
std::pair<std::string, std::string> DistinctSizes(int64_t a, int64_t b);

// `text` with each control character replaced by U+FFFD (the Unicode replacement character), so
// that messages and tables quoting a name from a file stay one line each.
std::string PrintableText(std::string_view text);

// Parses sizes such as "256K", "1M", "1.5GiB", "4096" (K = 1024). Error on anything else.
bool ParseByteSize(const std::string& text, int64_t* bytes);

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  // Columns whose header starts with '>' are right-aligned (the '>' is not printed).
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string Render() const;
  // The same table in Markdown (a '>' column is right-aligned there too).
  std::string RenderMarkdown() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace memfold
