// What a kernel sees of one node: its attributes, its tensors (type, shape, quantisation, where
// the bytes are), its scratch buffers and the data its op prepared ahead of the run.
//
// Freestanding on purpose: plain views over memory someone else owns, no heap, no exceptions,
// no iostream. The host executor builds these views from the IR (exec/kernel_args.h); code
// that `memfold compile` generates builds the same views from static tables, so the device
// runs the very kernels whose access order the safe overlaps were derived from. Every kernel
// reads its node only through this header. All lookups are O(attributes) or O(rank).
//
// Preconditions: the op's inference function checked shapes and attributes, so a getter never
// asks for a missing attribute or one of another kind.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "memfold/ir/dtype.h"

namespace memfold {

using ShapeView = std::span<const int64_t>;

// The most dimensions a tensor may have (the registry refuses more), so kernels can keep
// per-dimension counters in fixed arrays.
inline constexpr size_t kMaxRank = 8;
using RankArray = std::array<int64_t, kMaxRank>;

// One named attribute: the union member of `kind` holds its value (24 bytes on a 32-bit core,
// where the device's tables are flash).
struct AttrArg {
  enum class Kind : uint8_t { kInt, kFloat, kStr, kInts };
  std::string_view name;
  Kind kind = Kind::kInt;
  union {
    int64_t i = 0;
    double f;
    std::string_view s;
    std::span<const int64_t> ints;
  };
};

// A node's attributes, sorted by name.
class AttrArgs {
 public:
  AttrArgs() = default;
  explicit AttrArgs(std::span<const AttrArg> items) : items_(items) {}
  const AttrArg* Find(std::string_view name) const {
    for (const AttrArg& a : items_) {
      if (a.name == name) return &a;
    }
    return nullptr;
  }
  bool Has(std::string_view name) const { return Find(name) != nullptr; }
  // The value of attribute `name` (which the node has): of another kind, 0 or empty.
  int64_t Int(std::string_view name) const { return Of(name, AttrArg::Kind::kInt)->i; }
  double Float(std::string_view name) const { return Of(name, AttrArg::Kind::kFloat)->f; }
  std::string_view Str(std::string_view name) const { return Of(name, AttrArg::Kind::kStr)->s; }
  std::span<const int64_t> Ints(std::string_view name) const {
    return Of(name, AttrArg::Kind::kInts)->ints;
  }
  // The string attribute `name`, or `fallback` when the node has none.
  std::string_view StrOr(std::string_view name, std::string_view fallback) const {
    const AttrArg* a = Find(name);
    return a ? Of(name, AttrArg::Kind::kStr)->s : fallback;
  }
  std::span<const AttrArg> items() const { return items_; }

 private:
  // The attribute `name` if it is of `kind`, else a value of `kind` that is 0 or empty. Out of
  // line: read once per kernel call, it would only crowd the kernels' inlining.
  [[gnu::noinline]] const AttrArg* Of(std::string_view name, AttrArg::Kind kind) const {
    static constexpr AttrArg kEmpty[] = {{.kind = AttrArg::Kind::kInt, .i = 0},
                                         {.kind = AttrArg::Kind::kFloat, .f = 0},
                                         {.kind = AttrArg::Kind::kStr, .s = {}},
                                         {.kind = AttrArg::Kind::kInts, .ints = {}}};
    const AttrArg* a = Find(name);
    return a != nullptr && a->kind == kind ? a : &kEmpty[static_cast<int>(kind)];
  }

  std::span<const AttrArg> items_;
};

// Quantisation of a tensor: one scale and zero point, or one per channel.
struct QuantArg {
  std::span<const float> scale;
  std::span<const int64_t> zero_point;
  // Whether the scales are per channel (a filter's). Kernels read only the first scale and zero
  // point (Scale, ZeroPoint); per-channel multipliers are their prepares' work, so the device's
  // tables keep just those (compile/codegen.cc).
  bool per_channel_scales = false;
  bool per_channel() const { return per_channel_scales; }
};

// A tensor as a kernel sees it: its type and where its bytes are.
struct TensorArg {
  bool present = false;  // false for an absent optional input
  DType dtype = DType::kF32;
  ShapeView shape;
  QuantArg quant;
  std::byte* data = nullptr;
  // A value laid out in rows inside a concat's output (see Out in kernels/access.h), in
  // elements; 0 = contiguous. Kernels write outputs through it; the only input that can have
  // it is a concat's, placed in its output already (the concat skips it).
  std::ptrdiff_t row = 0;
  std::ptrdiff_t row_stride = 0;
  // The bytes are the model's shared constant data (weights in flash on a device): kernels that
  // update state in place must leave them alone.
  bool read_only = false;

  template <typename T>
  T* ptr() const {
    return reinterpret_cast<T*>(data);
  }
  int64_t elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t bytes() const {
    return dtype == DType::kBit ? (elements() + 7) / 8 : elements() * ElementBytes(dtype);
  }
  explicit operator bool() const { return present; }
};

// Where a kernel reports that its tensors' values cannot be processed, as TFLM's kernels
// return kTfLiteError at run time (GATHER's index outside its axis). The kernel records a
// string literal, stops without reading or writing outside its tensors, and its caller ends the
// run with the message.
struct KernelError {
  const char* message = nullptr;
};

struct KernelContext {
  AttrArgs attrs;
  std::span<const TensorArg> inputs;  // absent optional inputs are not `present`
  std::span<const TensorArg> outputs;
  std::span<std::byte* const> scratch;  // one pointer per size the op's `scratch` asked for
  // What the op's `prepare` computed from the tensors' types before the run (TFLM's OpData:
  // requantisation multipliers per channel, for instance); empty for ops without one.
  std::span<const int32_t> prepared;
  // Null when nobody listens (a safe-overlap trace): a failing kernel still stops in bounds.
  KernelError* error = nullptr;

  // Records the first failure of the run (`message` must outlive it: a literal).
  void Fail(const char* message) const {
    if (error != nullptr && error->message == nullptr) error->message = message;
  }
};

}  // namespace memfold
