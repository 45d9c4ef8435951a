#include "memfold/io/file.h"

#include <fstream>
#include <iterator>

namespace memfold {

Result<std::string> ReadWholeFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error(path + ": cannot open " + what);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace memfold
