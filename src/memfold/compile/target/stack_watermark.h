// Stack high-water mark for bare-metal memfold programs: paint the unused stack with a pattern,
// run, then find the lowest word that was overwritten. Uses __stack_base/__stack_top from
// mps2_an386.ld.
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

// Fills the stack from __stack_base up to (current SP - 64 bytes) with 0x5AA5C33C.
void stack_paint(void);

// Returns __stack_top minus the address of the lowest word no longer holding the pattern, i.e. the
// deepest stack use (in bytes, from the top) since stack_paint().
unsigned stack_used_bytes(void);

#ifdef __cplusplus
}  // extern "C"
#endif
