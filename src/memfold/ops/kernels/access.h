// How kernels touch memory. Every kernel is a template over an access policy `A` and reads
// and writes tensors only through In<A, T> / Out<A, T>. The executor instantiates kernels with
// `Direct` (plain loads and stores); the safe-overlap trace method instantiates the same code
// with a recording policy, so the recorded access order is exactly the order the kernel runs.
//
// Kernels must therefore never copy a tensor into a private buffer and never write an output
// element before reading every input it still needs at that step: diagonal memory
// optimisation relies on their access order.
//
// The kernel sources are freestanding (no heap, exceptions or iostream) so `memfold compile`
// builds the very same code for the device, with MEMFOLD_FREESTANDING defined: then only the
// plain form exists. Host-only kernel files live in kernels/host/.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace memfold {

// The safe overlap O_s implied by an order of accesses (REFERENCE.md §1): with the output at
// [0, N_out) and the input starting at N_out - O_s, no write may land on input bytes that are
// read later. Every read of input byte r is checked against the highest output byte written
// before it: O_s = min over reads of (N_out - max_written_before + r), capped at N_out.
// Shared by the trace method (fed by recorded accesses) and the algorithmic method (fed by
// loop replays), so the two can only differ in the access order they report.
class OverlapAccumulator {
 public:
  explicit OverlapAccumulator(int64_t output_bytes) : n_out_(output_bytes), best_(output_bytes) {}
  void Read(int64_t input_byte) { best_ = std::min(best_, n_out_ - max_written_ + input_byte); }
  void Write(int64_t output_byte_end) { max_written_ = std::max(max_written_, output_byte_end); }
  int64_t safe_overlap() const { return best_; }

 private:
  int64_t n_out_;
  int64_t best_;
  int64_t max_written_ = 0;
};

// Four consecutive bytes from `p` as one word (any alignment): the SIMD kernels' loads.
inline uint32_t LoadBytes4(const void* p) {
  uint32_t word;
  std::memcpy(&word, p, sizeof(word));
  return word;
}

struct Direct {
  template <typename T>
  static T Load(const T* base, int64_t index) {
    return base[index];
  }
  template <typename T>
  static uint32_t LoadWord(const T* base, int64_t index) {
    return LoadBytes4(base + index);
  }
  template <typename T>
  static T LoadOwn(const T* base, int64_t index) {
    return base[index];
  }
  template <typename T>
  static void Store(T* base, int64_t index, T value) {
    base[index] = value;
  }
  // The 4 bytes of `word` to elements index .. index + 3 of a byte-sized T (any alignment).
  template <typename T>
  static void StoreWord(T* base, int64_t index, uint32_t word) {
    std::memcpy(base + index, &word, sizeof(word));
  }
};

#ifndef MEMFOLD_FREESTANDING
// Where a traced kernel reports its accesses: stores through Out whose bytes reach into
// [begin, end), and loads through In whose bytes reach into [read_begin, read_end), a range the
// watch narrows to the reads that can still matter to it (so that most loads cost a compare).
// Reads of a kernel's own outputs and scratch (Out's operator[]) are not reported. The trace
// method of safe-overlap analysis and checked execution (exec/checked_run.h) implement it.
class AccessWatch {
 public:
  const std::byte* begin = nullptr;
  const std::byte* end = nullptr;
  const std::byte* read_begin = nullptr;
  const std::byte* read_end = nullptr;
  virtual void Read(const std::byte* p, int64_t bytes) = 0;
  virtual void Write(const std::byte* p, int64_t bytes) = 0;

 protected:
  ~AccessWatch() = default;
};
inline thread_local AccessWatch* current_watch = nullptr;

// Sets current_watch for one traced kernel call and clears it again.
class ScopedWatch {
 public:
  explicit ScopedWatch(AccessWatch* watch) { current_watch = watch; }
  ~ScopedWatch() { current_watch = nullptr; }
  ScopedWatch(const ScopedWatch&) = delete;
  ScopedWatch& operator=(const ScopedWatch&) = delete;
};

// Plain accesses that also report those the current watch asks for.
struct Traced {
  template <typename T>
  static T Load(const T* base, int64_t index) {
    const auto* p = reinterpret_cast<const std::byte*>(base + index);
    AccessWatch* w = current_watch;
    if (p < w->read_end && p + sizeof(T) > w->read_begin) w->Read(p, sizeof(T));
    return base[index];
  }
  template <typename T>
  static uint32_t LoadWord(const T* base, int64_t index) {
    const auto* p = reinterpret_cast<const std::byte*>(base + index);
    AccessWatch* w = current_watch;
    if (p < w->read_end && p + 4 > w->read_begin) w->Read(p, 4);
    return LoadBytes4(p);
  }
  template <typename T>
  static T LoadOwn(const T* base, int64_t index) {
    return base[index];
  }
  template <typename T>
  static void Store(T* base, int64_t index, T value) {
    const auto* p = reinterpret_cast<const std::byte*>(base + index);
    AccessWatch* w = current_watch;
    if (p < w->end && p + sizeof(T) > w->begin) w->Write(p, sizeof(T));
    base[index] = value;
  }
  template <typename T>
  static void StoreWord(T* base, int64_t index, uint32_t word) {
    const auto* p = reinterpret_cast<const std::byte*>(base + index);
    AccessWatch* w = current_watch;
    if (p < w->end && p + 4 > w->begin) w->Write(p, 4);
    std::memcpy(base + index, &word, sizeof(word));
  }
};

#endif  // MEMFOLD_FREESTANDING

template <typename A, typename T>
struct In {
  const T* base;
  T operator[](int64_t index) const { return A::Load(base, index); }
  // The 4 bytes from element `index` on, as one word (byte-sized T: 4 elements).
  uint32_t Word(int64_t index) const { return A::LoadWord(base, index); }
};

// An output tensor, addressed by its row-major element index. Usually contiguous; an output
// written in place into a concatenation along an inner axis lies in rows instead: `row`
// elements of it, then the other inputs' elements, the next row `stride` elements after the
// previous one's start (row = 0: contiguous).
// Row and stride are machine words (32 bits on the device, where a 64-bit division per element
// would be a library call).
template <typename A, typename T>
struct Out {
  T* base;
  std::ptrdiff_t row = 0;
  std::ptrdiff_t stride = 0;
  int64_t At(int64_t index) const {
    if (row == 0) return index;
    const auto i = static_cast<std::ptrdiff_t>(index);
    return i / row * stride + i % row;
  }
  void Set(int64_t index, T value) const { A::Store(base, At(index), value); }
  // Elements index .. index + 3 (byte-sized T) from the bytes of `word`, byte 0 first: one
  // store when they lie in one row.
  void SetWord(int64_t index, uint32_t word) const {
    if (row == 0 || static_cast<std::ptrdiff_t>(index) % row + 4 <= row) {
      A::StoreWord(base, At(index), word);
      return;
    }
    for (int k = 0; k < 4; ++k)
      Set(index + k, static_cast<T>(static_cast<uint8_t>(word >> (8 * k))));
  }
  T operator[](int64_t index) const { return A::LoadOwn(static_cast<const T*>(base), At(index)); }
};

// Copies x[i .. i + n) to y[o .. o + n) in increasing order. Byte elements of a contiguous
// output go four at a time, each word read before it is written: no read happens later,
// relative to the writes, than in the element order, so the element order's safe overlap
// still holds.
template <typename A, typename T>
void CopyRun(const Out<A, T>& y, int64_t o, In<A, T> x, int64_t i, std::ptrdiff_t n) {
  std::ptrdiff_t k = 0;
  if constexpr (sizeof(T) == 1) {
    if (y.row == 0) {
      T* const to = y.base + o;
      const In<A, T> from{x.base + i};
      for (; k + 4 <= n; k += 4) A::StoreWord(to, k, from.Word(k));
    }
  }
  for (; k < n; ++k) y.Set(o + k, x[i + k]);
}

// The output view of a kernel's output argument (a TensorArg: its data and row layout).
template <typename A, typename T, typename Arg>
Out<A, T> OutputOf(const Arg& arg) {
  return Out<A, T>{reinterpret_cast<T*>(arg.data), static_cast<std::ptrdiff_t>(arg.row),
                   static_cast<std::ptrdiff_t>(arg.row_stride)};
}

}  // namespace memfold

// Instantiates a kernel template for plain execution and for tracing (in the kernel's .cc). A
// freestanding build (the device: compile/codegen.h) has no tracing and only the plain form.
#ifdef MEMFOLD_FREESTANDING
#define MF_INSTANTIATE_KERNEL(kernel) template void kernel<::memfold::Direct>(const KernelContext&);
#define MF_INSTANTIATE_KERNEL_T(kernel, T) \
  template void kernel<::memfold::Direct, T>(const KernelContext&);
#else
#define MF_INSTANTIATE_KERNEL(kernel)                            \
  template void kernel<::memfold::Direct>(const KernelContext&); \
  template void kernel<::memfold::Traced>(const KernelContext&);
#define MF_INSTANTIATE_KERNEL_T(kernel, T)                          \
  template void kernel<::memfold::Direct, T>(const KernelContext&); \
  template void kernel<::memfold::Traced, T>(const KernelContext&);
#endif
