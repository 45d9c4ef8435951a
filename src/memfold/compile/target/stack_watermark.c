// Stack painting and high-water-mark measurement; see stack_watermark.h.
#include "stack_watermark.h"

#include <stdint.h>

#define STACK_PATTERN 0x5AA5C33Cu

extern uint32_t __stack_base[];
extern uint32_t __stack_top[];

__attribute__((noinline)) void stack_paint(void) {
  uintptr_t sp;
  __asm__ volatile("mov %0, sp" : "=r"(sp));
  volatile uint32_t* end = (volatile uint32_t*)((sp - 64) & ~(uintptr_t)3);
  for (volatile uint32_t* p = __stack_base; p < end; ++p) *p = STACK_PATTERN;
}

unsigned stack_used_bytes(void) {
  const volatile uint32_t* p = __stack_base;
  while (p < __stack_top && *p == STACK_PATTERN) ++p;
  return (unsigned)((uintptr_t)__stack_top - (uintptr_t)p);
}
