// The sources every compiled tree carries, embedded in memfold at build time
// (cmake/embed_sources.cmake): the freestanding kernels and their headers, the device runtime
// (runtime/), ir/dtype and the bare-metal target support (compile/target/). Paths are those of
// the generated tree: "memfold/..." for library code, "target/..." for the board files.
#pragma once

#include <span>
#include <string_view>

namespace memfold {

struct EmbeddedFile {
  std::string_view path;
  std::string_view text;
};

std::span<const EmbeddedFile> EmbeddedSources();

}  // namespace memfold
