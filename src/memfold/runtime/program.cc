#include "memfold/runtime/program.h"

#include <cstring>

namespace memfold::runtime {
namespace {

// What a run reads and writes: the arena and the caller's input buffers.
struct Memory {
  std::byte* arena;
  const void* const* inputs;
};

std::byte* DataOf(const TensorDesc& t, const Memory& memory) {
  if (t.in_arena) return memory.arena + t.offset;
  if (t.streamed_input >= 0) {  // read only, by fetch steps
    const void* buffer = memory.inputs[t.streamed_input];
    return reinterpret_cast<std::byte*>(const_cast<void*>(buffer));
  }
  if (t.state != nullptr) return reinterpret_cast<std::byte*>(t.state);
  // Constants are never written through (kernels write outputs only; read_only marks them).
  return reinterpret_cast<std::byte*>(const_cast<uint8_t*>(t.constant));
}

TensorArg ArgOf(const TensorDesc& t, const Memory& memory) {
  TensorArg arg;
  arg.present = t.present;
  if (!t.present) return arg;
  arg.dtype = t.dtype;
  arg.shape = t.shape;
  arg.quant = t.quant;
  arg.data = DataOf(t, memory);
  arg.row = t.row;
  arg.row_stride = t.row_stride;
  arg.read_only = t.constant != nullptr || t.streamed_input >= 0;
  return arg;
}

// A fetch step through the caller's source: the box, packed at the step's output.
const char* Fetch(const StepDesc& step, const Memory& memory, const InputSource& source) {
  const TensorDesc& out = step.outputs[0];
  int32_t begin[4], size[4];
  for (size_t d = 0; d < 4; ++d) {
    begin[d] = static_cast<int32_t>(step.fetch_begin[d]);
    size[d] = static_cast<int32_t>(out.shape[d]);
  }
  const int failed = source.fetch(source.user, static_cast<uint32_t>(step.fetch_input), begin, size,
                                  DataOf(out, memory));
  return failed != 0 ? "the input source could not deliver a box" : nullptr;
}

// Runs one step: its poison, then its kernel. Returns the kernel's refusal, or null.
const char* RunStep(const StepDesc& step, const Memory& memory, std::span<TensorArg> tensors,
                    std::span<std::byte*> scratch, bool poison, const InputSource* source) {
  if (poison) Poison(memory.arena, step.poison);
  if (step.fetch_input >= 0 && source != nullptr) return Fetch(step, memory, *source);
  if (step.kernel == nullptr) return nullptr;
  const size_t n_in = step.inputs.size(), n_out = step.outputs.size();
  for (size_t k = 0; k < n_in; ++k) tensors[k] = ArgOf(step.inputs[k], memory);
  for (size_t k = 0; k < n_out; ++k) tensors[n_in + k] = ArgOf(step.outputs[k], memory);
  for (size_t k = 0; k < step.scratch.size(); ++k) scratch[k] = memory.arena + step.scratch[k];
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
                       std::span<std::byte*> scratch, bool poison, const StepClock* clock,
                       const InputSource* source) {
  const Memory memory{arena, inputs};
  if (poison) {
    // A fresh arena: NaN for floats, -1 for integers, then the first buffers inverted.
    std::memset(arena, 0xFF, program.arena_bytes);
    Poison(arena, program.poison_at_start);
  }
  for (size_t k = 0; k < program.inputs.size(); ++k) {
    if (!program.inputs[k].in_arena) continue;  // streamed, or of no bytes
    const TensorArg arg = ArgOf(program.inputs[k], memory);
    std::memcpy(arg.data, inputs[k], static_cast<size_t>(arg.bytes()));
  }
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const uint32_t start = clock != nullptr ? clock->now() : 0;
    const char* refused = RunStep(program.steps[s], memory, tensors, scratch, poison, source);
    if (clock != nullptr) clock->elapsed[s] = clock->now() - start;
    if (refused != nullptr) return refused;
  }
  for (size_t k = 0; k < program.outputs.size(); ++k) {
    const TensorArg arg = ArgOf(program.outputs[k], memory);
    std::memcpy(outputs[k], arg.data, static_cast<size_t>(arg.bytes()));
  }
  return nullptr;
}

}  // namespace memfold::runtime
