// A loop of known length for the instruction-count test (tests/device/instruction_count.cc):
// `spin` runs exactly 2 * n instructions in its loop (SUBS, BNE per iteration), timed by the
// harness's timer; prints "ticks N" per run through semihosting.
#include <stdint.h>

#include "target/semihost.h"
#include "target/timer.h"

__attribute__((noinline)) static void spin(uint32_t n) {
  __asm__ volatile("1: subs %0, %0, #1\n\tbne 1b" : "+r"(n) : : "cc");
}

int main(void) {
  static const uint32_t kLengths[] = {1000, 1000000, 25000000};
  timer_start();
  for (unsigned k = 0; k < sizeof(kLengths) / sizeof(kLengths[0]); ++k) {
    const uint32_t start = timer_ticks();
    spin(kLengths[k]);
    const uint32_t ticks = timer_ticks() - start;
    semihost_write0("ticks ");
    semihost_print_uint(ticks);
    semihost_write0("\n");
  }
  return 0;
}
