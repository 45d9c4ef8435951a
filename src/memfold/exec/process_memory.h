// What the operating system says about this process's memory (Linux /proc): resident bytes
// now and at their peak, resetting the peak, and the memory the machine has available. Used to
// measure an executed step's real footprint beside its plan and to refuse a run that cannot
// fit. Each query reads one small /proc file: O(1). Returns -1 / false where /proc lacks it.
#pragma once

#include <cstdint>

namespace memfold {

int64_t ResidentBytes();      // VmRSS
int64_t PeakResidentBytes();  // VmHWM: the highest VmRSS since start or the last reset
// Makes the peak the current resident size (writes 5 to /proc/self/clear_refs).
bool ResetPeakResident();
int64_t AvailableMemoryBytes();  // MemAvailable of /proc/meminfo
// Gives the heap's free pages back to the operating system (glibc's malloc_trim), so that
// memory allocated next is counted as it is touched rather than hidden in pages an earlier,
// freed allocation left resident. O(heap size).
void ReturnFreedHeapMemory();

}  // namespace memfold
