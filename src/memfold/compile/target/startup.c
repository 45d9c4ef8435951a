// Startup code for bare-metal memfold programs on QEMU mps2-an386 (Cortex-M4F): the vector table,
// Reset_Handler (enable FPU, copy .data, zero .bss, run static constructors, call main, exit via
// semihosting with main's return value) and fault handlers that report and exit with status 100.
// There is deliberately no heap and no _sbrk: any use of malloc fails to link.
#include <stdint.h>
#include <string.h>

#include "semihost.h"

#define FAULT_EXIT_CODE 100

extern uint32_t __stack_top[];
extern uint32_t __data_start[], __data_end[], __data_load[];
extern uint32_t __bss_start[], __bss_end[];
extern void (*__preinit_array_start[])(void), (*__preinit_array_end[])(void);
extern void (*__init_array_start[])(void), (*__init_array_end[])(void);

int main(void);
void Reset_Handler(void);
void Fault_Handler(void);

// C++ objects with destructors register them with __aeabi_atexit; main never returns into a
// libc exit(), so destructors never run and nothing needs recording (newlib's would pull in more).
void* __dso_handle = 0;
int __aeabi_atexit(void* object, void (*destructor)(void*), void* dso) {
  (void)object;
  (void)destructor;
  (void)dso;
  return 0;
}

__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(uintptr_t)__stack_top,  // Initial main SP.
    Reset_Handler,
    Fault_Handler,  // NMI
    Fault_Handler,  // HardFault
    Fault_Handler,  // MemManage
    Fault_Handler,  // BusFault
    Fault_Handler,  // UsageFault
    0,              // Reserved
    0,              // Reserved
    0,              // Reserved
    0,              // Reserved
    Fault_Handler,  // SVCall
    Fault_Handler,  // DebugMonitor
    0,              // Reserved
    Fault_Handler,  // PendSV
    Fault_Handler,  // SysTick
};

void Reset_Handler(void) {
  // CPACR: full access to CP10/CP11 (the FPU) before any floating-point instruction runs.
  volatile uint32_t* cpacr = (volatile uint32_t*)0xE000ED88u;
  *cpacr |= 0xFu << 20;
  __asm__ volatile("dsb\n\tisb" ::: "memory");

  memcpy(__data_start, __data_load, (size_t)((char*)__data_end - (char*)__data_start));
  memset(__bss_start, 0, (size_t)((char*)__bss_end - (char*)__bss_start));

  for (void (**f)(void) = __preinit_array_start; f < __preinit_array_end; ++f) (*f)();
  for (void (**f)(void) = __init_array_start; f < __init_array_end; ++f) (*f)();

  semihost_exit(main());
}

// Called with the exception stack frame {r0, r1, r2, r3, r12, lr, pc, xpsr}.
__attribute__((used, noreturn)) static void fault_report(const uint32_t* frame) {
  uint32_t ipsr;
  __asm__ volatile("mrs %0, ipsr" : "=r"(ipsr));
  semihost_write0("\nmemfold: unexpected exception ");
  semihost_print_uint(ipsr & 0x1FF);
  semihost_write0(" pc=0x");
  semihost_print_hex32(frame[6]);
  semihost_write0(" lr=0x");
  semihost_print_hex32(frame[5]);
  semihost_write0(" cfsr=0x");
  semihost_print_hex32(*(volatile uint32_t*)0xE000ED28u);
  semihost_write0(" hfsr=0x");
  semihost_print_hex32(*(volatile uint32_t*)0xE000ED2Cu);
  semihost_write0("\n");
  semihost_exit(FAULT_EXIT_CODE);
}

// Picks the stack the frame was pushed on (EXC_RETURN bit 2) and hands it to fault_report.
__attribute__((naked)) void Fault_Handler(void) {
  __asm__ volatile(
      "tst lr, #4\n\t"
      "ite eq\n\t"
      "mrseq r0, msp\n\t"
      "mrsne r0, psp\n\t"
      "b fault_report\n\t");
}
