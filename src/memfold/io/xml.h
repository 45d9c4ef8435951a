// Text made safe for XML (the SVG pictures and the HTML report, which is well-formed XML too).
// Names in model files are user input. O(n).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace memfold {

// Text made safe for XML content and attribute values: & < > " ' escaped, and bytes that are
// not valid UTF-8, or characters XML 1.0 forbids (controls, U+FFFE, U+FFFF), replaced by
// U+FFFD.
std::string XmlEscape(std::string_view text);

// Length of the valid UTF-8 sequence starting at text[at] (its code point in *code), or 0 if
// the bytes there are not one (overlong forms, surrogates and code points above U+10FFFF are
// invalid).
size_t DecodeUtf8(std::string_view text, size_t at, uint32_t* code);

}  // namespace memfold
