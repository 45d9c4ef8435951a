// Helpers shared by the kernel tests (ops/kernels_test.cc, kernels/int_kernels_test.cc,
// kernels/convert_kernels_test.cc): tensor bytes from and to typed vectors, attribute lists,
// per-tensor or per-channel quantisation, and a small graph run through the unplanned
// executor. Header-only, for test targets (uses gtest); all O(size) but TestNet::RunBytes,
// which runs the graph.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memfold/exec/executor.h"
#include "memfold/ir/graph.h"
#include "memfold/ops/registry.h"

namespace memfold {

// The bytes of `values`, element by element in memory order.
template <typename T>
Bytes ToBytes(const std::vector<T>& values) {
  Bytes bytes(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// `bytes` read as elements of type T (a trailing partial element is dropped).
template <typename T>
std::vector<T> FromBytes(const Bytes& bytes) {
  std::vector<T> values(bytes.size() / sizeof(T));
  if (!values.empty()) std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

inline Attrs MakeAttrs(std::initializer_list<std::pair<std::string, AttrValue>> items) {
  Attrs attrs;
  for (const auto& [name, value] : items) attrs.Set(name, value);
  return attrs;
}

// Quantisation with one scale per channel along `axis` (one scale: per tensor), all sharing
// `zero_point`.
inline Quantization Quant(std::vector<float> scales, int64_t zero_point = 0, int32_t axis = 0) {
  Quantization q;
  q.zero_point.assign(scales.size(), zero_point);
  q.scale = std::move(scales);
  q.axis = axis;
  return q;
}

// A graph under construction plus the bytes to feed its inputs. Registry and executor errors
// are recorded as test failures and give kNoValue or empty results, so that a test goes on to
// fail on its results instead of crashing.
class TestNet {
 public:
  // Adds graph input "inN" fed with `bytes`.
  ValueId AddInput(const Shape& shape, DType dtype, Bytes bytes,
                   std::optional<Quantization> quant = std::nullopt) {
    Value v;
    v.name = "in" + std::to_string(graph_.inputs.size());
    v.dtype = dtype;
    v.shape = shape;
    v.role = Role::kInput;
    v.quant = std::move(quant);
    const ValueId id = graph_.AddValue(std::move(v));
    graph_.inputs.push_back(id);
    feeds_.push_back(std::move(bytes));
    return id;
  }

  // Adds weight "wN" holding `bytes`.
  ValueId AddConstant(const Shape& shape, DType dtype, Bytes bytes,
                      std::optional<Quantization> quant = std::nullopt) {
    Value v;
    v.name = "w" + std::to_string(graph_.num_values());
    v.dtype = dtype;
    v.shape = shape;
    v.role = Role::kWeight;
    v.quant = std::move(quant);
    v.data = std::make_shared<Bytes>(std::move(bytes));
    return graph_.AddValue(std::move(v));
  }

  // Adds a node; returns its first output.
  ValueId AddNode(std::string_view op, std::vector<ValueId> inputs, Attrs attrs) {
    Result<std::vector<ValueId>> out = AddOp(&graph_, op, std::move(inputs), std::move(attrs));
    if (!out.ok()) {
      ADD_FAILURE() << out.status().message();
      return kNoValue;
    }
    return out->front();
  }

  // The graph, for ops with several outputs (AddOp directly).
  Graph& graph() { return graph_; }

  // Sets the quantisation of a computed value (as a file's tensor carries it).
  void SetQuant(ValueId id, Quantization quant) { graph_.value(id).quant = std::move(quant); }

  Shape ShapeOf(ValueId id) const { return id == kNoValue ? Shape{-1} : graph_.value(id).shape; }

  // Runs the graph with `output` as its only output; returns the output's bytes.
  Bytes RunBytes(ValueId output) {
    if (output == kNoValue) return {};
    graph_.outputs = {output};
    Result<RunOutputs> run = RunUnplanned(graph_, feeds_);
    if (!run.ok()) {
      ADD_FAILURE() << run.status().message();
      return {};
    }
    return run->outputs.front();
  }

 protected:
  Graph graph_;
  std::vector<Bytes> feeds_;
};

}  // namespace memfold
