#include "memfold/exec/process_memory.h"

#include <malloc.h>

#include <fstream>
#include <sstream>
#include <string>

namespace memfold {
namespace {

// The "<key>: <number> kB" line of a /proc file, in bytes.
int64_t ProcKilobytes(const char* path, const std::string& key) {
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    if (line.compare(0, key.size() + 1, key + ":") != 0) continue;
    std::istringstream fields(line.substr(key.size() + 1));
    int64_t kilobytes = -1;
    fields >> kilobytes;
    return kilobytes < 0 ? -1 : kilobytes * 1024;
  }
  return -1;
}

}  // namespace

int64_t ResidentBytes() { return ProcKilobytes("/proc/self/status", "VmRSS"); }
int64_t PeakResidentBytes() { return ProcKilobytes("/proc/self/status", "VmHWM"); }

bool ResetPeakResident() {
  std::ofstream file("/proc/self/clear_refs");
  file << "5";
  file.flush();
  return static_cast<bool>(file);
}

int64_t AvailableMemoryBytes() { return ProcKilobytes("/proc/meminfo", "MemAvailable"); }

void ReturnFreedHeapMemory() { malloc_trim(0); }

}  // namespace memfold
