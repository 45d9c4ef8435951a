// What the operating system says about this process's memory (Linux /proc): resident bytes
// now and at their peak, resetting the peak, and the memory the machine has available. Used to
// measure an executed step's real footprint beside its plan and to refuse a run that cannot
// fit. Each call reads one small /proc file: O(1). Returns -1 / false where /proc lacks it.
#pragma once

#include <cstdint>

namespace memfold {

int64_t ResidentBytes();      // VmRSS
int64_t PeakResidentBytes();  // VmHWM: the highest VmRSS since start or the last reset
// Makes the peak the current resident size (writes 5 to /proc/self/clear_refs).
bool ResetPeakResident();
int64_t AvailableMemoryBytes();  // MemAvailable of /proc/meminfo

}  // namespace memfold
