// How kernels touch memory. Every kernel is a template over an access policy `A` and reads
// and writes tensors only through In<A, T> / Out<A, T>. The executor instantiates kernels with
// `Direct` (plain loads and stores); the safe-overlap trace method instantiates the same code
// with a recording policy, so the recorded access order is exactly the order the kernel runs.
//
// Kernels must therefore never copy a tensor into a private buffer and never write an output
// element before reading every input it still needs at that step: diagonal memory
// optimisation relies on their access order.
#pragma once

#include <cstdint>

namespace memfold {

struct Direct {
  template <typename T>
  static T Load(const T* base, int64_t index) {
    return base[index];
  }
  template <typename T>
  static void Store(T* base, int64_t index, T value) {
    base[index] = value;
  }
};

template <typename A, typename T>
struct In {
  const T* base;
  T operator[](int64_t index) const { return A::Load(base, index); }
};

template <typename A, typename T>
struct Out {
  T* base;
  void Set(int64_t index, T value) const { A::Store(base, index, value); }
  T operator[](int64_t index) const { return A::Load(static_cast<const T*>(base), index); }
};

}  // namespace memfold
