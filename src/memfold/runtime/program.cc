#include "memfold/runtime/program.h"

#include <cstring>

namespace memfold::runtime {
namespace {

std::byte* DataOf(const TensorDesc& t, std::byte* arena) {
  if (t.in_arena) return arena + t.offset;
  if (t.state != nullptr) return reinterpret_cast<std::byte*>(t.state);
  // Constants are never written through (kernels write outputs only; read_only marks them).
  return reinterpret_cast<std::byte*>(const_cast<uint8_t*>(t.constant));
}

TensorArg ArgOf(const TensorDesc& t, std::byte* arena) {
  TensorArg arg;
  arg.present = t.present;
  if (!t.present) return arg;
  arg.dtype = t.dtype;
  arg.shape = t.shape;
  arg.quant = t.quant;
  arg.data = DataOf(t, arena);
  arg.row = t.row;
  arg.row_stride = t.row_stride;
  arg.read_only = t.constant != nullptr;
  return arg;
}

// Runs one step: its poison, then its kernel. Returns the kernel's refusal, or null.
const char* RunStep(const StepDesc& step, std::byte* arena, std::span<TensorArg> tensors,
                    std::span<std::byte*> scratch, bool poison) {
  if (poison) Poison(arena, step.poison);
  if (step.kernel == nullptr) return nullptr;
  const size_t n_in = step.inputs.size(), n_out = step.outputs.size();
  for (size_t k = 0; k < n_in; ++k) tensors[k] = ArgOf(step.inputs[k], arena);
  for (size_t k = 0; k < n_out; ++k) tensors[n_in + k] = ArgOf(step.outputs[k], arena);
  for (size_t k = 0; k < step.scratch.size(); ++k) scratch[k] = arena + step.scratch[k];
  KernelError error;
  step.kernel(KernelContext{AttrArgs(step.attrs), tensors.first(n_in), tensors.subspan(n_in, n_out),
                            scratch.first(step.scratch.size()), step.prepared, &error});
  return error.message;
}

}  // namespace

void Poison(std::byte* arena, std::span<const ArenaRange> ranges) {
  for (const ArenaRange& r : ranges) {
    for (uint32_t i = r.begin; i < r.end; ++i) arena[i] = ~arena[i];
  }
}

const char* RunProgram(const ProgramDesc& program, std::byte* arena, const void* const* inputs,
                       void* const* outputs, std::span<TensorArg> tensors,
                       std::span<std::byte*> scratch, bool poison, const StepClock* clock) {
  if (poison) {
    // A fresh arena: NaN for floats, -1 for integers, then the first buffers inverted.
    std::memset(arena, 0xFF, program.arena_bytes);
    Poison(arena, program.poison_at_start);
  }
  for (size_t k = 0; k < program.inputs.size(); ++k) {
    const TensorArg arg = ArgOf(program.inputs[k], arena);
    if (arg.data != nullptr) std::memcpy(arg.data, inputs[k], static_cast<size_t>(arg.bytes()));
  }
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const uint32_t start = clock != nullptr ? clock->now() : 0;
    const char* refused = RunStep(program.steps[s], arena, tensors, scratch, poison);
    if (clock != nullptr) clock->elapsed[s] = clock->now() - start;
    if (refused != nullptr) return refused;
  }
  for (size_t k = 0; k < program.outputs.size(); ++k) {
    const TensorArg arg = ArgOf(program.outputs[k], arena);
    std::memcpy(outputs[k], arg.data, static_cast<size_t>(arg.bytes()));
  }
  return nullptr;
}

}  // namespace memfold::runtime
