// The op registry: one table row per operator, the single source of truth for what an op
// accepts (arity, attributes with defaults), what it produces (shape/dtype inference), what it
// costs (FLOPs, bytes), how its memory may be shared (in-place, alias, scratch), how it runs
// (CPU kernels per element type, traced forms for safe-overlap analysis), its safe-overlap
// models and its gradient builder. Importers, passes, planners and the executor all read
// memory and execution behaviour from here.
//
// Exceptions, where code outside the table still asks for operators by name because the rule
// is about that operator's meaning, not a memory property a row could carry: plan/liveness and
// passes/best_plan (which concat and slice nodes may become copy-free views), passes/split (the
// row-window ops it can band), passes/quantize (TFLite's int8 rules per operator),
// passes/binarize (masks with a 1-bit encoding), passes/recompute (dropout is never re-drawn),
// exec/training (the inputs of gather and the loss are indices, not data), zoo (a model's own
// head) and the TFLite reader (names are how a file spells operators).
//
// Lookup by name is O(log ops). AddOp is O(inputs + attributes + inference).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"
#include "memfold/ops/kernels/kernel_context.h"

namespace memfold {

struct TensorType {
  DType dtype = DType::kF32;
  Shape shape;
};

// The inputs of a node as inference sees them (null for an absent optional input).
struct InferContext {
  const Node& node;
  std::vector<const Value*> inputs;
  const Value& in(size_t k) const { return *inputs[k]; }
  bool has(size_t k) const { return k < inputs.size() && inputs[k] != nullptr; }
};
using InferFn = Status (*)(const InferContext& ctx, std::vector<TensorType>* outputs);

struct Cost {
  double flops = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
};
using CostFn = Cost (*)(const Graph& graph, const Node& node);

using KernelFn = void (*)(const KernelContext& ctx);
// Sizes in bytes of the scratch buffers a node's kernel needs while it runs (TFLM kernels
// request them with RequestScratchBufferInArena). They are planned in the arena.
using ScratchFn = std::vector<int64_t> (*)(const Graph& graph, const Node& node);

// What an op computes from its tensors' types before a run (KernelContext::prepared); the
// context's data pointers are not read.
using PrepareFn = std::vector<int32_t> (*)(const KernelContext& ctx);

struct KernelEntry {
  DType dtype;  // the element type of the node's first input
  KernelFn run;
  KernelFn traced = nullptr;  // the same kernel recording its accesses (safe-overlap trace)
  // The C++ expression naming `run` (generated device code calls it by this name).
  std::string_view symbol;
  // Freestanding: declared in ops/kernels/ and compiled into device trees (compile/). Host-only
  // kernels (training, in ops/kernels/host/) are not.
  bool device = true;
};
// Both instantiations of a kernel template.
#define MF_KERNEL(dtype, kernel) \
  ::memfold::KernelEntry { dtype, &kernel<Direct>, &kernel<Traced>, #kernel "<memfold::Direct>" }
// A kernel of ops/kernels/host/, which device trees do not carry.
#define MF_HOST_KERNEL(dtype, kernel)                                                      \
  ::memfold::KernelEntry {                                                                 \
    dtype, &kernel<Direct>, &kernel<Traced>, #kernel "<memfold::Direct>", /*device=*/false \
  }
#define MF_KERNEL_T(dtype, kernel, T)                                                  \
  ::memfold::KernelEntry {                                                             \
    dtype, &kernel<Direct, T>, &kernel<Traced, T>, #kernel "<memfold::Direct, " #T ">" \
  }

// The safe overlap O_s, in bytes, of output 0 over input `input` (diagonal memory
// optimisation, REFERENCE.md §1), or nullopt when the method has no model of this op.
using OverlapFn = std::optional<int64_t> (*)(const Graph& graph, const Node& node, int input);

class GradEmitter;  // ops/gradient.h
// Reverse-mode gradient of one node: given dL/d(output k) in `dy` (kNoValue where an output
// has none), emits backward nodes through `emit` and sets (*dx)[k] = dL/d(input k), kNoValue
// for inputs that get none (integer indices, constants).
using GradientFn = Status (*)(GradEmitter& emit, const Node& node, std::span<const ValueId> dy,
                              std::vector<ValueId>* dx);

struct AttrSpec {
  std::string_view name;
  AttrValue default_value;  // also fixes the attribute's type
  bool required = false;
};

// How operation splitting (passes/split.h) computes a band of an op's NHWC output from bands of
// its inputs along H and W.
enum class TileRule : uint8_t {
  kNone,        // not splittable
  kConvWindow,  // a sliding window over input 0; kernel size from the filter (input 1,
                // [O or 1, kh, kw, I or C]); explicit zero padding folds into it
  kPoolWindow,  // a sliding window over input 0; kernel size from the "filter" attribute
  kUnary,       // output element i = f(input element i)
  kBinary,      // output element i = f(input 0 element i, input 1 element i), same shapes
  kPad,         // zero padding (attribute "paddings")
  kSlice,       // a box of input 0 (attributes "begin", "size")
};

// A copy-free view the planner may make of an op instead of copying (plan/liveness.h).
enum class ViewRule : uint8_t {
  kNone,
  kConcatRows,  // inputs written in place as rows of the output
  kSliceRows,   // the output read in place as rows of input 0
};

// Post-training int8 quantisation (passes/quantize.h): how the op's int8 form is quantised.
enum class Int8Rule : uint8_t {
  kNone,          // no int8 form the quantiser makes
  kOwnScale,      // the output gets its own calibrated quantisation
  kSameScale,     // the output shares input 0's quantisation (the kernel moves stored bytes)
  kSameScaleAll,  // the output shares every input's quantisation (concatenation)
  kPadFill,       // as kSameScale; the fill value becomes the stored zero point
  kFixedSoftmax,  // scale 1/256, zero point -128 (TFLM's softmax requirement)
  kLinear,        // input 1 a filter (per channel along int8_filter_axis, or per tensor when
                  // it is -1), input 2 an int32 bias of scale input x filter
};

// Training: an output whose every backward reader needs only which elements are set, so it
// may be kept in one bit per element (passes/binarize.h).
struct BitMaskRule {
  int output = -1;          // -1: none
  std::string_view reader;  // the gradient op that reads it, as input `reader_input`
  int reader_input = 1;
  double (*set_value)(const Node& node) = nullptr;  // what a set bit decodes to; null: 1
};

// Training: an integer input that indexes a dimension of input 0 (an embedding lookup's ids,
// a loss's labels), so values fed to it must lie in [0, that dimension).
struct IndexRule {
  int input = -1;  // -1: none
  int axis = 0;    // the dimension of input 0 it indexes; -1 the last
};

struct OpDef {
  std::string_view name;
  int min_inputs = 1;
  int max_inputs = 1;  // kVariadic for any number
  int num_outputs = 1;
  std::vector<AttrSpec> attrs;
  InferFn infer = nullptr;
  CostFn cost = nullptr;
  // Memory-access models of the kernels' loop order: a closed-form lower bound and an exact
  // replay of the loop nest that computes offsets only. (The trace method needs no model: it
  // runs KernelEntry::traced.)
  OverlapFn overlap_analytic = nullptr;
  OverlapFn overlap_algorithmic = nullptr;
  // Output 0 may take the buffer of this input when the input dies here (MXNet-style
  // in-place); -1 = never.
  int inplace_input = -1;
  // Output 0 is a view of input 0: same bytes, no copy, no buffer of its own (reshape).
  bool alias = false;
  // An operator of the framework a joint graph was traced in (joint/): memfold plans its memory
  // and may choose to recompute it there, but never runs it. Its output types are the traced
  // ones (not inferred) and its FLOPs the node's "flops" attribute.
  bool traced = false;
  std::vector<KernelEntry> kernels;
  ScratchFn scratch = nullptr;
  PrepareFn prepare = nullptr;
  // Training. Per output, the input whose storage the output updates in place (optimizer
  // steps on persistent weights and state), -1 for a fresh output; empty = all fresh.
  std::vector<int> updates_input;
  // Reverse-mode gradient, and which forward values the nodes it emits read: bit k of
  // grad_reads_inputs = input k, of grad_reads_outputs = output k (fully-connected reads X and
  // W, not Y; tanh reads Y only). Null for ops with no gradient.
  GradientFn gradient = nullptr;
  uint32_t grad_reads_inputs = 0;
  uint32_t grad_reads_outputs = 0;
  BitMaskRule bit_mask;
  IndexRule index;
  // Draws random numbers: running it again would draw anew, so it is never recomputed.
  bool random = false;

  // Rules of the passes that act on an op's meaning rather than on a memory property.
  TileRule tile = TileRule::kNone;
  ViewRule view = ViewRule::kNone;
  Int8Rule int8 = Int8Rule::kNone;
  int int8_filter_axis = -1;

  KernelFn FindKernel(DType dtype) const;
  const KernelEntry* FindKernelEntry(DType dtype) const;
};
inline constexpr int kVariadic = 1 << 20;

// The row named `name` (O(log ops)), or null.
const OpDef* FindOp(std::string_view name);
// Every row, by name.
std::span<const OpDef> AllOps();
// The row of a node: the one CheckAndFillAttrs resolved (O(1)), or, for a node made without
// the registry (a file's opaque operator, a hand-built test graph), found by name; null if none.
const OpDef* OpOf(const Node& node);
// The row of a node, or for an op memfold does not know an empty row (no rules, no kernels):
// what passes ask for an op's rules.
const OpDef& RulesOf(const Node& node);

// Checks arity and attributes of `node` against its row, fills attribute defaults, records the
// row in node->op_row, and infers the output types. Errors name the node and say what to
// change.
Status CheckAndFillAttrs(const OpDef& def, Node* node);
Result<std::vector<TensorType>> InferNode(const Graph& graph, const Node& node);

// Builds a node: validates it, creates its output values (role activation) and appends it to
// the schedule. Returns the new output ids.
Result<std::vector<ValueId>> AddOp(Graph* graph, std::string_view op, std::vector<ValueId> inputs,
                                   Attrs attrs = {}, std::string name = "");

// Re-infers every node in schedule order and checks the stored output types agree. Nodes
// whose op is not in the registry (opaque imported ops) are taken as they are.
Status CheckShapes(const Graph& graph);

Cost NodeCost(const Graph& graph, const Node& node);

}  // namespace memfold
