// CMSDK APB timer registers (ARM DDI 0479): CTRL at +0 (bit 0 enables), VALUE at +4 (counts
// down), RELOAD at +8. TIMER0 sits at 0x40000000 on the MPS2 FPGA images QEMU emulates.
#include "timer.h"

#define TIMER0 ((volatile uint32_t*)0x40000000u)
enum { kCtrl = 0, kValue = 1, kReload = 2 };

void timer_start(void) {
  TIMER0[kCtrl] = 0;
  TIMER0[kReload] = 0xFFFFFFFFu;
  TIMER0[kValue] = 0xFFFFFFFFu;
  TIMER0[kCtrl] = 1;
}

uint32_t timer_ticks(void) { return 0xFFFFFFFFu - TIMER0[kValue]; }
