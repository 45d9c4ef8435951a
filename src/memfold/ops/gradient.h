// Gradient builders: for each differentiable op, the backward nodes reverse-mode autodiff
// emits (the registry rows point here through OpDef::gradient). GradEmitter appends nodes to
// the graph through the op registry (validated, shape-inferred), tags them with the forward
// node's layer type and marks their outputs as gradients. Builders never see the pass that
// calls them; they only map dL/d(outputs) to dL/d(inputs).
//
// The first error is kept (later emits become no-ops), as in GraphBuilder.
#pragma once

#include <string>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"
#include "memfold/ops/registry.h"

namespace memfold {

class GradEmitter {
 public:
  GradEmitter(Graph* graph, const Node& forward);

  // Appends a node; returns its outputs (empty after an error).
  std::vector<ValueId> Emit(const std::string& op, std::vector<ValueId> inputs, Attrs attrs = {});
  ValueId Op(const std::string& op, std::vector<ValueId> inputs, Attrs attrs = {}) {
    std::vector<ValueId> out = Emit(op, std::move(inputs), std::move(attrs));
    return out.empty() ? kNoValue : out[0];
  }
  // Sums a gradient of a broadcast result back to `shape` (undoes numpy broadcasting).
  ValueId ReduceTo(ValueId grad, const Shape& shape);
  ValueId Reshape(ValueId v, const Shape& shape);
  // A float32 scalar constant.
  ValueId Scalar(float value);

  // Copies, not references: emitting nodes grows the value table, and a reference taken while
  // evaluating one argument would dangle once another argument emits a node.
  Value value(ValueId v) const { return graph_->value(v); }
  Shape shape(ValueId v) const { return graph_->value(v).shape; }
  Status status() const { return status_; }
  void Fail(std::string message) {
    if (status_.ok()) status_ = Status::Error(std::move(message));
  }

 private:
  Graph* graph_;
  std::string name_;
  std::string layer_;
  int emitted_ = 0;
  Status status_;
};

// Builders (bits of grad_reads in op_table.cc must match what each reads).
Status GradRelu(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                std::vector<ValueId>* dx);
Status GradTanh(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                std::vector<ValueId>* dx);
Status GradSigmoid(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                   std::vector<ValueId>* dx);
Status GradExp(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
               std::vector<ValueId>* dx);
Status GradNeg(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
               std::vector<ValueId>* dx);
Status GradAdd(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
               std::vector<ValueId>* dx);
Status GradSub(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
               std::vector<ValueId>* dx);
Status GradMul(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
               std::vector<ValueId>* dx);
Status GradFullyConnected(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                          std::vector<ValueId>* dx);
Status GradMatMul(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                  std::vector<ValueId>* dx);
Status GradConv2D(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                  std::vector<ValueId>* dx);
Status GradDepthwise(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                     std::vector<ValueId>* dx);
Status GradMaxPool(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                   std::vector<ValueId>* dx);
Status GradAvgPool(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                   std::vector<ValueId>* dx);
Status GradSoftmax(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                   std::vector<ValueId>* dx);
Status GradReshape(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                   std::vector<ValueId>* dx);
Status GradConcat(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                  std::vector<ValueId>* dx);
Status GradSlice(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                 std::vector<ValueId>* dx);
Status GradTranspose(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                     std::vector<ValueId>* dx);
Status GradPad(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
               std::vector<ValueId>* dx);
Status GradBroadcastTo(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                       std::vector<ValueId>* dx);
Status GradReduceSum(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                     std::vector<ValueId>* dx);
Status GradMean(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                std::vector<ValueId>* dx);
Status GradGather(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                  std::vector<ValueId>* dx);
Status GradBatchNorm(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                     std::vector<ValueId>* dx);
Status GradLayerNorm(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                     std::vector<ValueId>* dx);
Status GradDropout(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                   std::vector<ValueId>* dx);
Status GradSoftmaxCrossEntropy(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                               std::vector<ValueId>* dx);
Status GradMse(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
               std::vector<ValueId>* dx);

}  // namespace memfold
