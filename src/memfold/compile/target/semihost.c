// ARM semihosting calls via `bkpt 0xAB` (r0 = operation, r1 = argument, result in r0), plus small
// buffered hex/decimal printers built on SYS_WRITE0.
#include "semihost.h"

enum {
  kSysWrite0 = 0x04,
  kSysExit = 0x18,
  kSysExitExtended = 0x20,
  kAdpStoppedApplicationExit = 0x20026,
  kAdpStoppedRunTimeErrorUnknown = 0x20023,
};

static int semihost_call(int op, const void* arg) {
  register int r0 __asm__("r0") = op;
  register const void* r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

void semihost_write0(const char* s) { semihost_call(kSysWrite0, s); }

void semihost_exit(int code) {
  if (code == 0) {
    // On AArch32 SYS_EXIT takes the reason code itself in r1; ApplicationExit means status 0.
    semihost_call(kSysExit, (const void*)kAdpStoppedApplicationExit);
  } else {
    const uint32_t block[2] = {kAdpStoppedApplicationExit, (uint32_t)code};
    semihost_call(kSysExitExtended, block);
  }
  // Only reached if the host ignored the request: fall back to a plain failure exit (status 1).
  semihost_call(kSysExit, (const void*)kAdpStoppedRunTimeErrorUnknown);
  for (;;) {
  }
}

static const char kHexDigits[] = "0123456789abcdef";

void semihost_print_hex(const void* data, unsigned bytes) {
  const uint8_t* p = (const uint8_t*)data;
  char buf[65];  // 32 bytes per SYS_WRITE0 call.
  unsigned n = 0;
  for (unsigned i = 0; i < bytes; ++i) {
    buf[n++] = kHexDigits[p[i] >> 4];
    buf[n++] = kHexDigits[p[i] & 0xF];
    if (n == sizeof(buf) - 1 || i + 1 == bytes) {
      buf[n] = '\0';
      semihost_write0(buf);
      n = 0;
    }
  }
}

void semihost_print_hex32(uint32_t value) {
  char buf[9];
  for (int i = 7; i >= 0; --i, value >>= 4) buf[i] = kHexDigits[value & 0xF];
  buf[8] = '\0';
  semihost_write0(buf);
}

void semihost_print_uint(unsigned long value) {
  char buf[21];
  char* p = buf + sizeof(buf) - 1;
  *p = '\0';
  do {
    *--p = (char)('0' + value % 10);
    value /= 10;
  } while (value != 0);
  semihost_write0(p);
}
