/* An LD_PRELOAD library that counts the heap bytes a process holds (every malloc, calloc,
 * realloc and aligned allocation, by malloc_usable_size) and their peak since the last reset,
 * so a script can measure what one call of a library (ONNX Runtime's run) allocates at most.
 * Built and used by scripts/onnx_table.py:
 *   gcc -O2 -shared -fPIC -o heap_peak.so heap_peak.c
 *   LD_PRELOAD=./heap_peak.so python ...   # ctypes: heap_peak_reset(), heap_peak_bytes()
 * glibc's own entry points (__libc_malloc, ...) allocate, so no dlsym bootstrap is needed. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
extern void* __libc_memalign(size_t, size_t);
extern void __libc_free(void*);

static atomic_llong held, peak;

static void* counted(void* p) {
  if (p != NULL) {
    long long now = atomic_fetch_add(&held, (long long)malloc_usable_size(p)) +
                    (long long)malloc_usable_size(p);
    long long seen = atomic_load(&peak);
    while (now > seen && !atomic_compare_exchange_weak(&peak, &seen, now)) {
    }
  }
  return p;
}

static void uncount(void* p) {
  if (p != NULL) atomic_fetch_sub(&held, (long long)malloc_usable_size(p));
}

void* malloc(size_t n) { return counted(__libc_malloc(n)); }
void* calloc(size_t n, size_t size) { return counted(__libc_calloc(n, size)); }
void free(void* p) {
  uncount(p);
  __libc_free(p);
}
void* realloc(void* p, size_t n) {
  const long long old = p != NULL ? (long long)malloc_usable_size(p) : 0;
  void* q = __libc_realloc(p, n);
  if (q == NULL && n != 0) return NULL; /* p is still held */
  atomic_fetch_sub(&held, old);
  return counted(q);
}
void* memalign(size_t align, size_t n) { return counted(__libc_memalign(align, n)); }
void* aligned_alloc(size_t align, size_t n) { return counted(__libc_memalign(align, n)); }
int posix_memalign(void** out, size_t align, size_t n) {
  void* p = __libc_memalign(align, n);
  if (p == NULL) return ENOMEM;
  *out = counted(p);
  return 0;
}

/* The peak restarts from what is held now. */
void heap_peak_reset(void) { atomic_store(&peak, atomic_load(&held)); }
/* The most bytes held at once since the last reset. */
long long heap_peak_bytes(void) { return atomic_load(&peak); }
long long heap_held_bytes(void) { return atomic_load(&held); }
