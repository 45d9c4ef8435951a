#include "memfold/io/text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace memfold {

std::string PrintableText(std::string_view text) {
  std::string printable;
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      printable += "\xEF\xBF\xBD";
    } else {
      printable += c;
    }
  }
  return printable;
}

std::string GroupDigits(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3)
    digits.insert(static_cast<size_t>(i), ",");
  return value < 0 ? "-" + digits : digits;
}

std::string Fixed(double value, int digits) {
  char text[48];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

std::string SignedFixed(double value, int digits) {
  char text[48];
  std::snprintf(text, sizeof(text), "%+.*f", digits, value);
  return text;
}

std::string HumanBytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (std::fabs(value) >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  if (unit == 0) {
    std::snprintf(text, sizeof(text), "%lld B", static_cast<long long>(bytes));
  } else {
    std::snprintf(text, sizeof(text), "%.2f %s", value, units[unit]);
  }
  return text;
}

std::pair<std::string, std::string> DistinctSizes(int64_t a, int64_t b) {
  if (HumanBytes(a) != HumanBytes(b)) return {HumanBytes(a), HumanBytes(b)};
  return {GroupDigits(a) + " B", GroupDigits(b) + " B"};
}

bool ParseByteSize(const std::string& text, int64_t* bytes) {
  char* end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(number) || number < 0) return false;
  std::string suffix(end);
  std::transform(suffix.begin(), suffix.end(), suffix.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  double scale = 1;
  if (suffix == "" || suffix == "B")
    scale = 1;
  else if (suffix == "K" || suffix == "KB" || suffix == "KIB")
    scale = 1024.0;
  else if (suffix == "M" || suffix == "MB" || suffix == "MIB")
    scale = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "GB" || suffix == "GIB")
    scale = 1024.0 * 1024 * 1024;
  else if (suffix == "T" || suffix == "TB" || suffix == "TIB")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else
    return false;
  const double value = number * scale;
  if (value > 9.0e18 || value != std::floor(value)) return false;
  *bytes = static_cast<int64_t>(value);
  return true;
}

std::string TextTable::Render() const {
  const size_t cols = header_.size();
  std::vector<size_t> width(cols, 0);
  std::vector<bool> right(cols, false);
  std::vector<std::string> names(cols);
  for (size_t c = 0; c < cols; ++c) {
    right[c] = !header_[c].empty() && header_[c][0] == '>';
    names[c] = right[c] ? header_[c].substr(1) : header_[c];
    width[c] = names[c].size();
  }
  for (const auto& row : rows_) {
    for (size_t c = 0; c < cols && c < row.size(); ++c)
      width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < cols; ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      const std::string pad(width[c] - cell.size(), ' ');
      out += right[c] ? pad + cell : cell + (c + 1 < cols ? pad : "");
      if (c + 1 < cols) out += "  ";
    }
    return out + "\n";
  };
  std::string out = line(names);
  std::vector<std::string> rule(cols);
  for (size_t c = 0; c < cols; ++c) rule[c] = std::string(width[c], '-');
  out += line(rule);
  for (const auto& row : rows_) out += line(row);
  return out;
}

std::string TextTable::RenderMarkdown() const {
  std::string head = "|", rule = "|";
  for (const std::string& h : header_) {
    const bool right = !h.empty() && h[0] == '>';
    head += " " + (right ? h.substr(1) : h) + " |";
    rule += right ? "---:|" : "---|";
  }
  std::string out = head + "\n" + rule + "\n";
  for (const auto& row : rows_) {
    out += "|";
    for (size_t c = 0; c < header_.size(); ++c) out += " " + (c < row.size() ? row[c] : "") + " |";
    out += "\n";
  }
  return out;
}

}  // namespace memfold
