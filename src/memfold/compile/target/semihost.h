// ARM semihosting (bkpt 0xAB) for bare-metal memfold programs under QEMU: console output and
// program exit with a status code. Requires qemu ... -semihosting-config enable=on,target=native.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Writes a NUL-terminated string to the host console (SYS_WRITE0).
void semihost_write0(const char* s);

// Stops the program; QEMU exits with status `code & 0xFF`. 0 uses SYS_EXIT, anything else
// SYS_EXIT_EXTENDED with the parameter block {ADP_Stopped_ApplicationExit, code}.
__attribute__((noreturn)) void semihost_exit(int code);

// Prints `bytes` bytes of `data` in memory order as lowercase hex, no separators or newline.
void semihost_print_hex(const void* data, unsigned bytes);

// Prints a 32-bit value as 8 lowercase hex digits (most significant first), no prefix.
void semihost_print_hex32(uint32_t value);

// Prints an unsigned value in decimal.
void semihost_print_uint(unsigned long value);

#ifdef __cplusplus
}  // extern "C"
#endif
