#include "memfold/exec/run_memory.h"

#include <unistd.h>

#include <cstdio>
#include <limits>
#include <string>

namespace memfold {
namespace {

// a + b, saturating at the largest int64 (value sizes are each below 2^63, their sum need not be).
int64_t SaturatingAdd(int64_t a, int64_t b) {
  return a > std::numeric_limits<int64_t>::max() - b ? std::numeric_limits<int64_t>::max() : a + b;
}

// "1.5 GiB": the sizes this check talks about are large.
std::string Gibibytes(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
  return text;
}

}  // namespace

int64_t RunMemoryBound(const Graph& graph) {
  int64_t bytes = 0;
  for (const Value& v : graph.values()) {
    if (v.is_constant()) continue;
    bytes = SaturatingAdd(bytes, v.bytes());
    bytes = SaturatingAdd(bytes, v.bytes());
  }
  for (ValueId input : graph.inputs) bytes = SaturatingAdd(bytes, graph.value(input).bytes());
  return bytes;
}

int64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(pages) * static_cast<int64_t>(page_size);
}

Status CheckRunFitsInMemory(const Graph& graph, int64_t available) {
  const int64_t needed = RunMemoryBound(graph);
  if (needed <= available) return Status::Ok();
  return Status::Error(
      "running it needs up to " + Gibibytes(needed) +
      " (inputs, the arena and an unplanned copy to compare with) but this machine has " +
      Gibibytes(available) + "; `memfold plan` still plans it, or choose a smaller configuration");
}

}  // namespace memfold
