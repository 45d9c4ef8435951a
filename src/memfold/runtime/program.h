// A compiled model as static tables, and the loop that runs it: what `memfold compile` emits and
// what runs on the device. Every tensor has a fixed home (an offset in the one arena, a constant
// in flash, or a persistent state array), every node its kernel, attributes, prepared data,
// scratch offsets and the arena ranges to poison before it (checking builds only). RunProgram
// builds each node's KernelContext on the stack and calls the same kernel the host executor
// calls, so the device follows exactly the access order the safe overlaps were proven for.
//
// Freestanding: no heap, no exceptions, no iostream; the tables are constant-initialised (they
// hold only address constants), so they live in flash. Time: the kernels' work plus
// O(arguments) per node. Preconditions: the tables come from memfold's code generator
// (compile/codegen.h), which checked every kernel, shape and offset on the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "memfold/ops/kernels/kernel_context.h"

namespace memfold::runtime {

using Kernel = void (*)(const KernelContext& ctx);

// One tensor argument. Its bytes are `arena + offset` (in_arena), or `constant` (model weights),
// or `state` (persistent), or the caller's buffer of graph input `streamed_input` (a streamed
// input, never in the arena: its fetch steps read boxes of it), or nowhere (absent optional
// input: present = false). Ordered for size (the tables are flash): 52 bytes on a 32-bit core.
struct TensorDesc {
  bool present = false;
  bool in_arena = false;
  DType dtype = DType::kF32;
  int8_t streamed_input = -1;
  ShapeView shape;
  QuantArg quant;
  uint32_t offset = 0;
  const uint8_t* constant = nullptr;
  uint8_t* state = nullptr;
  std::ptrdiff_t row = 0;  // row layout inside a concat's output, in elements (0: contiguous)
  std::ptrdiff_t row_stride = 0;
};

// A byte range [begin, end) of the arena.
struct ArenaRange {
  uint32_t begin, end;
};

struct StepDesc {
  Kernel kernel;  // null for steps that move no data (aliases, copy-free views)
  std::span<const AttrArg> attrs;
  std::span<const TensorDesc> inputs;
  std::span<const TensorDesc> outputs;
  std::span<const uint32_t> scratch;  // arena offsets
  std::span<const int32_t> prepared;
  std::span<const ArenaRange> poison;  // inverted before the step when poisoning
  // A fetch of a streamed graph input's box (begin: NHWC; size: the output's shape): with an
  // InputSource the source delivers it, without one the kernel (a slice) copies it out of the
  // caller's buffer of that input.
  int32_t fetch_input = -1;
  std::span<const int64_t> fetch_begin;
};

// Where the boxes of streamed graph inputs come from (a camera delivering rows, a decoder):
// fetch writes the box [begin, begin + size) of graph input `input` (rank 4, NHWC; begin and
// size have 4 entries) densely packed at `dst`, and returns 0 (anything else stops the run).
struct InputSource {
  int (*fetch)(void* user, uint32_t input, const int32_t* begin, const int32_t* size, void* dst);
  void* user;
};

struct ProgramDesc {
  uint32_t arena_bytes;
  std::span<const StepDesc> steps;
  std::span<const ArenaRange> poison_at_start;  // before the inputs are copied in
  std::span<const TensorDesc> inputs;
  std::span<const TensorDesc> outputs;
  size_t max_tensors;  // the most inputs + outputs of any step
  size_t max_scratch;  // the most scratch buffers of any step
};

// A clock read after every step, for per-step timing on the device: elapsed[k] receives the
// ticks step k took (the clock is read once per step, so the cost of one read lands in each).
struct StepClock {
  uint32_t (*now)();
  uint32_t* elapsed;  // one entry per step
};

// Inverts every byte of each range (the host executor's poison: always differs from what it
// replaces).
void Poison(std::byte* arena, std::span<const ArenaRange> ranges);

// Copies the inputs into their homes (streamed ones stay where the caller holds them, or with
// `source` are fetched box by box from it), runs every step and copies the outputs out. `arena`
// must be the program's arena; `tensors` and `scratch` must hold max_tensors and max_scratch
// entries. When `poison` is set, the arena is filled with 0xFF first and each step's ranges are
// inverted before it runs, exactly as the host executor's checking mode does. Returns null, or
// the message of a kernel that refused its input (kernel_context.h KernelError), after which
// no further step runs and the outputs are not copied. `clock`, when given, times every step.
const char* RunProgram(const ProgramDesc& program, std::byte* arena, const void* const* inputs,
                       void* const* outputs, std::span<TensorArg> tensors,
                       std::span<std::byte*> scratch, bool poison, const StepClock* clock = nullptr,
                       const InputSource* source = nullptr);

}  // namespace memfold::runtime
