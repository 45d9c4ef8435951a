// The MPS2 board's CMSDK APB TIMER0 as a free-running counter, for instruction counts: QEMU run
// with `-icount shift=0` advances its virtual clock 1 ns per executed instruction, and the timer
// counts the board's 25 MHz peripheral clock, so one tick is 40 instructions (on real silicon a
// tick is 1/25 MHz of wall time instead). O(1) per call.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Starts TIMER0 counting down from 0xFFFFFFFF (it wraps after 2^32 ticks: 171 s at 25 MHz).
void timer_start(void);

// Ticks since timer_start.
uint32_t timer_ticks(void);

#ifdef __cplusplus
}  // extern "C"
#endif
