// SplitMix64 (Steele, Lea and Flood 2014): a counter-based 64-bit mixer. Deterministic pseudo-
// random numbers keyed by (seed, index) come out the same on every machine, in any order:
// reference weights, dropout masks, calibration noise. O(1).
#pragma once

#include <cstdint>

namespace memfold {

constexpr uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace memfold
