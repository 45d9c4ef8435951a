// The host side of the kernel interface: builds the freestanding views of
// ops/kernels/kernel_context.h from the IR (a Value's type and quantisation, a Node's
// attributes) and runs an op's `prepare`. The views point into the Graph, which must outlive
// them. O(attributes + inputs + outputs) per node, plus the op's prepare.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "memfold/ir/graph.h"
#include "memfold/ops/kernels/kernel_context.h"
#include "memfold/ops/kernels/quant_math.h"

namespace memfold {

// A tensor of `value`'s type whose bytes are at `data`.
TensorArg TensorArgOf(const Value& value, std::byte* data = nullptr);

// Scale and zero point of a per-tensor quantised value (1 and 0 if it has none).
inline float Scale(const Value& value) { return Scale(TensorArgOf(value)); }
inline int32_t ZeroPoint(const Value& value) { return ZeroPoint(TensorArgOf(value)); }

// Views of every attribute of `attrs`, sorted by name.
std::vector<AttrArg> AttrArgsOf(const Attrs& attrs);

// Everything a node's kernel is called with, owning the arrays the views point into.
struct NodeKernelArgs {
  std::vector<AttrArg> attrs;
  std::vector<TensorArg> inputs, outputs;  // absent optional inputs are not `present`
  std::vector<int32_t> prepared;           // what the op's prepare computed; empty if none

  KernelContext Context(std::span<std::byte* const> scratch = {}) const {
    return KernelContext{AttrArgs(attrs), inputs, outputs, scratch, prepared};
  }
};

// The arguments of `node` over the given tensors (a kernel called outside a graph), prepared
// data included.
NodeKernelArgs KernelArgsFor(const Node& node, std::vector<TensorArg> inputs,
                             std::vector<TensorArg> outputs);

// The arguments of `node` with each value's bytes at where[value] (null everywhere when
// `where` is empty: a context for prepare or code generation), prepared data included.
NodeKernelArgs KernelArgsOf(const Graph& graph, const Node& node,
                            const std::vector<std::byte*>& where = {});

}  // namespace memfold
