// Well-formedness checks for the XML memfold writes (SVG pictures, the XHTML report), for
// tests. XmlProblem is a small checker of its own: valid UTF-8 of characters XML 1.0 allows,
// one root element, matching start and end tags, quoted attributes with no '<', only the
// predefined and numeric entities, and no "]]>" in text; it skips the XML declaration, a
// DOCTYPE and comments. XmllintProblem asks libxml2's xmllint as well, when it is installed.
// O(document size).
#pragma once

#include <sys/wait.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace memfold::testing {

namespace xml_detail {

// Length of the UTF-8 character at text[at] if valid and allowed by XML 1.0, else 0.
inline size_t AllowedCharLength(const std::string& text, size_t at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  size_t length = lead < 0x80                    ? 1
                  : lead >= 0xC2 && lead <= 0xDF ? 2
                  : lead >= 0xE0 && lead <= 0xEF ? 3
                  : lead >= 0xF0 && lead <= 0xF4 ? 4
                                                 : 0;
  if (length == 0 || at + length > text.size()) return 0;
  uint32_t code = length == 1 ? lead : lead & (0x7F >> length);
  for (size_t k = 1; k < length; ++k) {
    const auto b = static_cast<unsigned char>(text[at + k]);
    if ((b & 0xC0) != 0x80) return 0;
    code = (code << 6) | (b & 0x3F);
  }
  const uint32_t min_code[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < min_code[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  const bool allowed = code == 0x9 || code == 0xA || code == 0xD ||
                       (code >= 0x20 && code <= 0xD7FF) || (code >= 0xE000 && code <= 0xFFFD) ||
                       code >= 0x10000;
  return allowed ? length : 0;
}

inline bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == ':' ||
         c == '.';
}

// An entity reference at text[at] ('&'): its length, or 0 if it is not a valid one.
inline size_t EntityLength(const std::string& text, size_t at) {
  const size_t end = text.find(';', at);
  if (end == std::string::npos || end - at > 10) return 0;
  const std::string name = text.substr(at + 1, end - at - 1);
  if (name == "amp" || name == "lt" || name == "gt" || name == "quot" || name == "apos")
    return end - at + 1;
  if (name.size() >= 2 && name[0] == '#') {
    const bool hex = name[1] == 'x';
    const std::string digits = name.substr(hex ? 2 : 1);
    if (digits.empty()) return 0;
    for (char c : digits) {
      if (!(hex ? std::isxdigit(static_cast<unsigned char>(c))
                : std::isdigit(static_cast<unsigned char>(c))))
        return 0;
    }
    return end - at + 1;
  }
  return 0;
}

}  // namespace xml_detail

// Empty if `text` is a well-formed XML document, else what is wrong and where.
inline std::string XmlProblem(const std::string& text) {
  using namespace xml_detail;
  for (size_t at = 0; at < text.size();) {
    const size_t length = AllowedCharLength(text, at);
    if (length == 0)
      return "byte " + std::to_string(at) + ": invalid UTF-8 or a character XML forbids";
    at += length;
  }
  std::vector<std::string> open;
  int roots = 0;
  size_t at = 0;
  auto skip_past = [&](const std::string& end) -> bool {
    const size_t found = text.find(end, at);
    if (found == std::string::npos) return false;
    at = found + end.size();
    return true;
  };
  while (at < text.size()) {
    const char c = text[at];
    if (c == '&') {
      const size_t length = EntityLength(text, at);
      if (length == 0) return "byte " + std::to_string(at) + ": bad entity reference";
      at += length;
      continue;
    }
    if (c == '>' && at >= 2 && text.compare(at - 2, 3, "]]>") == 0)
      return "byte " + std::to_string(at) + ": ']]>' in text";
    if (c != '<') {
      if (open.empty() && !std::isspace(static_cast<unsigned char>(c)))
        return "byte " + std::to_string(at) + ": text outside the root";
      ++at;
      continue;
    }
    if (text.compare(at, 4, "<!--") == 0) {
      if (!skip_past("-->")) return "unterminated comment";
      continue;
    }
    if (text.compare(at, 2, "<?") == 0 || text.compare(at, 9, "<!DOCTYPE") == 0) {
      if (!open.empty() || roots > 0)
        return "byte " + std::to_string(at) + ": declaration inside the document";
      if (!skip_past(text[at + 1] == '?' ? "?>" : ">")) return "unterminated declaration";
      continue;
    }
    const bool closing = text[at + 1] == '/';
    size_t p = at + (closing ? 2 : 1);
    const size_t name_start = p;
    while (p < text.size() && IsNameChar(text[p])) ++p;
    const std::string name = text.substr(name_start, p - name_start);
    if (name.empty()) return "byte " + std::to_string(at) + ": '<' without a tag name";
    if (closing) {
      while (p < text.size() && std::isspace(static_cast<unsigned char>(text[p]))) ++p;
      if (p >= text.size() || text[p] != '>') return "byte " + std::to_string(at) + ": bad end tag";
      if (open.empty() || open.back() != name)
        return "byte " + std::to_string(at) + ": </" + name + "> does not close <" +
               (open.empty() ? "" : open.back()) + ">";
      open.pop_back();
      at = p + 1;
      continue;
    }
    // Attributes, then '>' or '/>'.
    std::vector<std::string> seen;
    while (true) {
      while (p < text.size() && std::isspace(static_cast<unsigned char>(text[p]))) ++p;
      if (p >= text.size()) return "unterminated start tag <" + name;
      if (text[p] == '>' || text.compare(p, 2, "/>") == 0) break;
      const size_t attr_start = p;
      while (p < text.size() && IsNameChar(text[p])) ++p;
      const std::string attr = text.substr(attr_start, p - attr_start);
      if (attr.empty() || p >= text.size() || text[p] != '=')
        return "byte " + std::to_string(p) + ": bad attribute in <" + name;
      for (const std::string& s : seen) {
        if (s == attr)
          return "byte " + std::to_string(p) + ": attribute " + attr + " twice in <" + name;
      }
      seen.push_back(attr);
      const char quote = text[p + 1];
      if (quote != '"' && quote != '\'')
        return "byte " + std::to_string(p) + ": unquoted attribute " + attr;
      const size_t value_end = text.find(quote, p + 2);
      if (value_end == std::string::npos) return "unterminated attribute " + attr;
      for (size_t k = p + 2; k < value_end; ++k) {
        if (text[k] == '<') return "byte " + std::to_string(k) + ": '<' in attribute " + attr;
        if (text[k] == '&' && EntityLength(text, k) == 0)
          return "byte " + std::to_string(k) + ": bad entity in attribute " + attr;
      }
      p = value_end + 1;
    }
    const bool empty = text[p] == '/';
    if (open.empty() && ++roots > 1)
      return "byte " + std::to_string(at) + ": a second root element <" + name + ">";
    if (!empty) open.push_back(name);
    at = p + (empty ? 2 : 1);
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  if (roots != 1) return "no root element";
  return "";
}

// xmllint's verdict on the file: nullopt when xmllint is not installed, "" when well-formed,
// else its message.
inline std::optional<std::string> XmllintProblem(const std::filesystem::path& file) {
  if (std::system("command -v xmllint >/dev/null 2>&1") != 0) return std::nullopt;
  const std::filesystem::path log = file.string() + ".xmllint";
  const std::string command = "xmllint --noout '" + file.string() + "' 2>'" + log.string() + "'";
  const int status = std::system(command.c_str());
  std::ifstream in(log);
  std::string message((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(log);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  return message.empty() ? "xmllint failed" : message;
}

}  // namespace memfold::testing
