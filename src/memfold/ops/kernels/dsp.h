// The Armv7E-M DSP (SIMD32) instructions the int8 kernels are built from, on packed pairs of
// int16 lanes in a 32-bit word (lane 0 in the low half). On a core with the DSP extension
// (__ARM_FEATURE_DSP: Cortex-M4, M7, M33 ...) each function is one instruction, through ACLE
// (<arm_acle.h>) or, where ACLE has no form with the byte rotation, inline assembly; elsewhere
// (the host, other targets) a portable form computes the very same bits, so the host's
// executor and trace run the same arithmetic the device runs. All O(1), freestanding.
#pragma once

#include <algorithm>
#include <cstdint>

#include "memfold/ops/kernels/quant_math.h"

#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
#include <arm_acle.h>
#define MEMFOLD_ARM_DSP 1
#endif

namespace memfold::dsp {

#ifdef MEMFOLD_ARM_DSP

// Bytes 0 and 2 of x, sign-extended, added lane-wise to the lanes of a: SXTAB16.
inline uint32_t Sxtab16(uint32_t a, uint32_t x) { return __sxtab16(a, x); }
// Bytes 1 and 3 of x (x rotated right by 8), sign-extended, added to a: SXTAB16 ..., ROR #8.
inline uint32_t Sxtab16Odd(uint32_t a, uint32_t x) {
  uint32_t r;
  __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(a), "r"(x));
  return r;
}
// Bytes 0 and 2, and bytes 1 and 3, sign-extended: SXTB16 and SXTB16 ..., ROR #8.
inline uint32_t Sxtb16(uint32_t x) { return __sxtb16(x); }
inline uint32_t Sxtb16Odd(uint32_t x) {
  uint32_t r;
  __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
  return r;
}
// acc + x.lo * y.lo + x.hi * y.hi (wrapping): SMLAD.
inline int32_t Smlad(uint32_t x, uint32_t y, int32_t acc) { return __smlad(x, y, acc); }
// acc + x.lo * y.lo and acc + x.hi * y.hi: SMLABB, SMLATT.
inline int32_t Smlabb(uint32_t x, uint32_t y, int32_t acc) { return __smlabb(x, y, acc); }
inline int32_t Smlatt(uint32_t x, uint32_t y, int32_t acc) { return __smlatt(x, y, acc); }

// v saturated to int8's range: SSAT #8.
inline int32_t Saturate8(int32_t v) { return __ssat(v, 8); }
// The low bytes of v0 .. v3 (each in int8's range) as one word, v0 in byte 0: PKHBT twice, two
// masks and an ORR.
inline uint32_t PackBytes(int32_t v0, int32_t v1, int32_t v2, int32_t v3) {
  uint32_t even, odd;
  __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(even) : "r"(v0), "r"(v2));
  __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(odd) : "r"(v1), "r"(v3));
  return (even & 0x00FF00FFu) | ((odd & 0x00FF00FFu) << 8);
}
// Each signed byte of x clamped to [the byte of lo, the byte of hi]: SSUB8 and SEL twice (one
// asm block each, as SEL reads the GE flags SSUB8 sets).
inline uint32_t ClampBytes(uint32_t x, uint32_t lo, uint32_t hi) {
  uint32_t raised, t;
  __asm__("ssub8 %1, %2, %3\n\tsel %0, %2, %3" : "=r"(raised), "=&r"(t) : "r"(x), "r"(lo));
  uint32_t clamped;
  __asm__("ssub8 %1, %2, %3\n\tsel %0, %3, %2" : "=r"(clamped), "=&r"(t) : "r"(raised), "r"(hi));
  return clamped;
}

#else

namespace detail {
inline int32_t Lo(uint32_t x) { return static_cast<int16_t>(x & 0xFFFFu); }
inline int32_t Hi(uint32_t x) { return static_cast<int16_t>(x >> 16); }
inline int32_t Byte(uint32_t x, int k) { return static_cast<int8_t>((x >> (8 * k)) & 0xFFu); }
inline uint32_t Pack(int32_t lo, int32_t hi) {
  return (static_cast<uint32_t>(lo) & 0xFFFFu) | (static_cast<uint32_t>(hi) << 16);
}
}  // namespace detail

inline uint32_t Sxtab16(uint32_t a, uint32_t x) {
  return detail::Pack(detail::Lo(a) + detail::Byte(x, 0), detail::Hi(a) + detail::Byte(x, 2));
}
inline uint32_t Sxtab16Odd(uint32_t a, uint32_t x) {
  return detail::Pack(detail::Lo(a) + detail::Byte(x, 1), detail::Hi(a) + detail::Byte(x, 3));
}
inline uint32_t Sxtb16(uint32_t x) { return Sxtab16(0, x); }
inline uint32_t Sxtb16Odd(uint32_t x) { return Sxtab16Odd(0, x); }
inline int32_t Smlad(uint32_t x, uint32_t y, int32_t acc) {
  return WrapAdd(WrapAdd(acc, detail::Lo(x) * detail::Lo(y)), detail::Hi(x) * detail::Hi(y));
}
inline int32_t Smlabb(uint32_t x, uint32_t y, int32_t acc) {
  return WrapAdd(acc, detail::Lo(x) * detail::Lo(y));
}
inline int32_t Smlatt(uint32_t x, uint32_t y, int32_t acc) {
  return WrapAdd(acc, detail::Hi(x) * detail::Hi(y));
}
inline int32_t Saturate8(int32_t v) { return v < -128 ? -128 : (v > 127 ? 127 : v); }
inline uint32_t PackBytes(int32_t v0, int32_t v1, int32_t v2, int32_t v3) {
  return (static_cast<uint32_t>(v0) & 0xFFu) | ((static_cast<uint32_t>(v1) & 0xFFu) << 8) |
         ((static_cast<uint32_t>(v2) & 0xFFu) << 16) | (static_cast<uint32_t>(v3) << 24);
}
inline uint32_t ClampBytes(uint32_t x, uint32_t lo, uint32_t hi) {
  uint32_t out = 0;
  for (int k = 0; k < 4; ++k) {
    const int32_t v =
        std::min(std::max(detail::Byte(x, k), detail::Byte(lo, k)), detail::Byte(hi, k));
    out |= (static_cast<uint32_t>(v) & 0xFFu) << (8 * k);
  }
  return out;
}

#endif

// v's low byte in all four bytes.
inline uint32_t Bytes(int32_t v) { return (static_cast<uint32_t>(v) & 0xFFu) * 0x01010101u; }

// Both lanes set to v (v in int16's range).
inline uint32_t Lanes(int32_t v) {
  const uint32_t lane = static_cast<uint32_t>(v) & 0xFFFFu;
  return lane | (lane << 16);
}

}  // namespace memfold::dsp
