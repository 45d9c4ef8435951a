// Reading a whole file. O(file size).
#pragma once

#include <string>

#include "memfold/base/status.h"

namespace memfold {

// The bytes of the file at `path`; the error names the path and says what it is (`what`,
// e.g. "the file", "the input file").
Result<std::string> ReadWholeFile(const std::string& path, const std::string& what = "the file");

}  // namespace memfold
