#include "memfold/ops/builder.h"

#include <cmath>
#include <cstring>
#include <memory>

#include "memfold/base/splitmix.h"
#include "memfold/ir/verify.h"
#include "memfold/ops/registry.h"

namespace memfold {
namespace {}  // namespace

GraphBuilder::GraphBuilder(std::string name, uint64_t seed) : seed_(seed) {
  graph_.name = std::move(name);
}

ValueId GraphBuilder::Input(const std::string& name, Shape shape, DType dtype) {
  Value v;
  v.name = name;
  v.shape = std::move(shape);
  v.dtype = dtype;
  v.role = Role::kInput;
  const ValueId id = graph_.AddValue(std::move(v));
  graph_.inputs.push_back(id);
  return id;
}

ValueId GraphBuilder::Weight(const std::string& name, Shape shape, float scale) {
  const int64_t n = NumElements(shape);
  auto data = std::make_shared<Bytes>(static_cast<size_t>(n) * sizeof(float));
  const uint64_t stream = SplitMix64(seed_ ^ SplitMix64(++weights_made_));
  for (int64_t k = 0; k < n; ++k) {
    const uint64_t bits = SplitMix64(stream + static_cast<uint64_t>(k));
    // 24 random bits -> [0, 1) exactly representable, then to [-scale, scale).
    const float unit = static_cast<float>(bits >> 40) / static_cast<float>(1 << 24);
    const float value = (2.0f * unit - 1.0f) * scale;
    std::memcpy(data->data() + k * 4, &value, 4);
  }
  Value v;
  v.name = name;
  v.shape = std::move(shape);
  v.role = Role::kWeight;
  v.data = std::move(data);
  return graph_.AddValue(std::move(v));
}

ValueId GraphBuilder::LayerWeight(const std::string& name, Shape shape, int64_t fan_in) {
  return Weight(name, std::move(shape),
                std::sqrt(3.0f / static_cast<float>(std::max<int64_t>(1, fan_in))));
}

ValueId GraphBuilder::Constant(const std::string& name, Shape shape, std::vector<float> values,
                               Role role) {
  const int64_t n = NumElements(shape);
  auto data = std::make_shared<Bytes>(static_cast<size_t>(n) * sizeof(float));
  if (values.size() != 1 && static_cast<int64_t>(values.size()) != n) {
    if (status_.ok()) {
      status_ = Status::Error("constant '" + name + "' of shape " + ShapeString(shape) + " got " +
                              std::to_string(values.size()) + " values");
    }
    return kNoValue;
  }
  for (int64_t k = 0; k < n; ++k) {
    std::memcpy(data->data() + k * 4, &values[values.size() == 1 ? 0 : static_cast<size_t>(k)], 4);
  }
  Value v;
  v.name = name;
  v.shape = std::move(shape);
  v.role = role;
  v.data = std::move(data);
  return graph_.AddValue(std::move(v));
}

ValueId GraphBuilder::IntConstant(const std::string& name, Shape shape,
                                  const std::vector<int32_t>& values) {
  if (static_cast<int64_t>(values.size()) != NumElements(shape)) {
    if (status_.ok()) {
      status_ = Status::Error("constant '" + name + "' of shape " + ShapeString(shape) + " got " +
                              std::to_string(values.size()) + " values");
    }
    return kNoValue;
  }
  auto data = std::make_shared<Bytes>(values.size() * sizeof(int32_t));
  if (!values.empty()) std::memcpy(data->data(), values.data(), data->size());
  Value v;
  v.name = name;
  v.dtype = DType::kI32;
  v.shape = std::move(shape);
  v.role = Role::kWeight;
  v.data = std::move(data);
  return graph_.AddValue(std::move(v));
}

ValueId GraphBuilder::Op(const std::string& op, std::vector<ValueId> inputs, Attrs attrs,
                         const std::string& name, const std::string& layer) {
  if (!status_.ok()) return kNoValue;
  for (ValueId in : inputs) {
    if (in == kNoValue) return kNoValue;  // an earlier error; keep the first message
  }
  Result<std::vector<ValueId>> outputs =
      AddOp(&graph_, op, std::move(inputs), std::move(attrs), name);
  if (!outputs.ok()) {
    status_ = outputs.status();
    return kNoValue;
  }
  graph_.node(graph_.num_nodes() - 1).layer = layer;
  return outputs->front();
}

Result<Graph> GraphBuilder::Finish(std::vector<ValueId> outputs) {
  MF_RETURN_IF_ERROR(status_);
  for (ValueId v : outputs) graph_.value(v).role = Role::kOutput;
  graph_.outputs = std::move(outputs);
  MF_RETURN_IF_ERROR(VerifyGraph(graph_));
  return std::move(graph_);
}

Attrs ConvAttrs(int64_t stride, const std::string& activation, const std::string& padding) {
  Attrs attrs;
  attrs.Set("stride", std::vector<int64_t>{stride, stride});
  attrs.Set("activation", activation);
  attrs.Set("padding", padding);
  return attrs;
}

Attrs PoolAttrs(int64_t filter_h, int64_t filter_w, int64_t stride, const std::string& padding) {
  Attrs attrs;
  attrs.Set("filter", std::vector<int64_t>{filter_h, filter_w});
  attrs.Set("stride", std::vector<int64_t>{stride, stride});
  attrs.Set("padding", padding);
  return attrs;
}

}  // namespace memfold
