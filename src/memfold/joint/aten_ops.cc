#include "memfold/joint/aten_ops.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

namespace memfold {
namespace {

using Json = nlohmann::json;

// The value id of tensor argument k, or kNoValue when it is absent, None or not a tensor.
ValueId TensorArg(const Json& args, size_t k) {
  if (k >= args.size() || !args[k].is_object() || !args[k].contains("value")) return kNoValue;
  const Json& id = args[k]["value"];
  return id.is_number_integer() ? id.get<ValueId>() : kNoValue;
}

// Argument k when it is a number (bools count), else `fallback`.
double NumberArg(const Json& args, size_t k, double fallback) {
  if (k >= args.size()) return fallback;
  if (args[k].is_number()) return args[k].get<double>();
  if (args[k].is_boolean()) return args[k].get<bool>() ? 1.0 : 0.0;
  return fallback;
}

// Argument k as a list of integers (a single integer is a list of one), or nullopt.
std::optional<std::vector<int64_t>> IntsArg(const Json& args, size_t k) {
  if (k >= args.size()) return std::nullopt;
  if (args[k].is_number_integer()) return std::vector<int64_t>{args[k].get<int64_t>()};
  if (!args[k].is_array()) return std::nullopt;
  std::vector<int64_t> ints;
  for (const Json& item : args[k]) {
    if (!item.is_number_integer()) return std::nullopt;
    ints.push_back(item.get<int64_t>());
  }
  return ints;
}

// A float32 scalar constant holding `number` (a scalar operand of an element-wise op).
ValueId ScalarConstant(Graph* graph, double number) {
  const auto f = static_cast<float>(number);
  auto bytes = std::make_shared<Bytes>(sizeof(float));
  std::memcpy(bytes->data(), &f, sizeof(float));
  Value v;
  v.name = "scalar " + std::to_string(f);
  v.shape = {};
  v.role = Role::kWeight;
  v.data = std::move(bytes);
  return graph->AddValue(std::move(v));
}

// Operand k of an element-wise op: a tensor, or a number made a constant.
ValueId Operand(Graph* graph, const Json& args, size_t k) {
  const ValueId id = TensorArg(args, k);
  if (id != kNoValue || k >= args.size() || !args[k].is_number()) return id;
  return ScalarConstant(graph, args[k].get<double>());
}

struct Call {
  Graph* graph;
  const Json& args;
  const std::vector<ValueId>& outputs;
};
using Translate = std::optional<AtenTranslation> (*)(const Call& c);

template <const char* kOp>
std::optional<AtenTranslation> Unary(const Call& c) {
  const ValueId x = TensorArg(c.args, 0);
  if (x == kNoValue) return std::nullopt;
  return AtenTranslation{kOp, {x}, {}};
}

// hardtanh(x, 0, 6) is ReLU6 (MobileNet v2's activation); other bounds have no memfold op.
std::optional<AtenTranslation> HardTanh(const Call& c) {
  const ValueId x = TensorArg(c.args, 0);
  if (x == kNoValue || NumberArg(c.args, 1, -1.0) != 0.0 || NumberArg(c.args, 2, 1.0) != 6.0) {
    return std::nullopt;
  }
  return AtenTranslation{"relu6", {x}, {}};
}

// gelu(x, approximate="none"): the exact (erf) form; the tanh approximation has no memfold op.
std::optional<AtenTranslation> Gelu(const Call& c) {
  const ValueId x = TensorArg(c.args, 0);
  const bool exact = c.args.size() < 2 || (c.args[1].is_string() && c.args[1] == "none");
  if (x == kNoValue || !exact) return std::nullopt;
  return AtenTranslation{"gelu", {x}, {}};
}

// add/sub with alpha (argument 2) other than 1 are not plain memfold add/sub.
template <const char* kOp>
std::optional<AtenTranslation> Binary(const Call& c) {
  if (NumberArg(c.args, 2, 1.0) != 1.0) return std::nullopt;
  const ValueId a = TensorArg(c.args, 0);
  if (a == kNoValue) return std::nullopt;
  const ValueId b = Operand(c.graph, c.args, 1);
  if (b == kNoValue) return std::nullopt;
  return AtenTranslation{kOp, {a, b}, {}};
}

// A view that keeps the element count: memfold's alias op with the traced shape.
std::optional<AtenTranslation> AliasView(const Call& c) {
  const ValueId x = TensorArg(c.args, 0);
  if (x == kNoValue || c.outputs.size() != 1) return std::nullopt;
  return AtenTranslation{"reshape", {x}, {{"shape", c.graph->value(c.outputs[0]).shape}}};
}

template <const char* kOp>
std::optional<AtenTranslation> Product(const Call& c) {
  const ValueId a = TensorArg(c.args, 0), b = TensorArg(c.args, 1);
  if (a == kNoValue || b == kNoValue) return std::nullopt;
  return AtenTranslation{kOp, {a, b}, {}};
}

// addmm(bias, a, b): the product, when the bias is a parameter (outside the arena, so leaving
// its read out changes no footprint).
std::optional<AtenTranslation> AddMm(const Call& c) {
  const ValueId bias = TensorArg(c.args, 0), a = TensorArg(c.args, 1), b = TensorArg(c.args, 2);
  if (bias == kNoValue || a == kNoValue || b == kNoValue) return std::nullopt;
  if (c.graph->value(bias).role != Role::kWeight) return std::nullopt;
  if (NumberArg(c.args, 3, 1.0) != 1.0 || NumberArg(c.args, 4, 1.0) != 1.0) return std::nullopt;
  return AtenTranslation{"matmul", {a, b}, {}};
}

// clone(x): a copy into new storage, memfold's broadcast to the same shape.
std::optional<AtenTranslation> Clone(const Call& c) {
  const ValueId x = TensorArg(c.args, 0);
  if (x == kNoValue) return std::nullopt;
  return AtenTranslation{"broadcast_to", {x}, {{"shape", c.graph->value(x).shape}}};
}

// embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse): rows of the table.
std::optional<AtenTranslation> Embedding(const Call& c) {
  const ValueId table = TensorArg(c.args, 0), ids = TensorArg(c.args, 1);
  if (table == kNoValue || ids == kNoValue) return std::nullopt;
  return AtenTranslation{"gather", {table, ids}, {}};
}

std::optional<AtenTranslation> Cat(const Call& c) {
  if (c.args.empty() || !c.args[0].is_object() || !c.args[0].contains("values")) {
    return std::nullopt;
  }
  std::vector<ValueId> inputs;
  for (const Json& id : c.args[0]["values"]) {
    if (!id.is_number_integer()) return std::nullopt;
    inputs.push_back(id.get<ValueId>());
  }
  if (inputs.empty()) return std::nullopt;
  const auto axis = static_cast<int64_t>(NumberArg(c.args, 1, 0.0));
  return AtenTranslation{"concat", inputs, {{"axis", axis}}};
}

std::optional<AtenTranslation> Softmax(const Call& c) {
  const ValueId x = TensorArg(c.args, 0);
  if (x == kNoValue || NumberArg(c.args, 2, 0.0) != 0.0) return std::nullopt;  // half_to_float
  return AtenTranslation{
      "softmax", {x}, {{"axis", static_cast<int64_t>(NumberArg(c.args, 1, -1))}}};
}

// mean.dim / sum.dim_IntList (x, dims, keepdim): memfold's reductions over `axes`.
template <const char* kOp>
std::optional<AtenTranslation> Reduce(const Call& c) {
  const ValueId x = TensorArg(c.args, 0);
  const std::optional<std::vector<int64_t>> dims = IntsArg(c.args, 1);
  if (x == kNoValue || !dims || dims->empty()) return std::nullopt;
  if (c.args.size() > 3 && !c.args[3].is_null()) return std::nullopt;  // a dtype cast
  return AtenTranslation{
      kOp, {x}, {{"axes", *dims}, {"keepdims", static_cast<int64_t>(NumberArg(c.args, 2, 0))}}};
}

// native_batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps) in
// training mode with affine parameters and running statistics: memfold's batch_norm_train over
// PyTorch's channel axis 1. PyTorch's momentum weights the new statistic, memfold's the old.
std::optional<AtenTranslation> BatchNorm(const Call& c) {
  std::vector<ValueId> inputs;
  for (size_t k = 0; k < 5; ++k) inputs.push_back(TensorArg(c.args, k));
  if (std::find(inputs.begin(), inputs.end(), kNoValue) != inputs.end()) return std::nullopt;
  if (NumberArg(c.args, 5, 0.0) == 0.0) return std::nullopt;  // inference mode
  return AtenTranslation{"batch_norm_train",
                         inputs,
                         {{"axis", int64_t{1}},
                          {"momentum", 1.0 - NumberArg(c.args, 6, 0.1)},
                          {"epsilon", NumberArg(c.args, 7, 1e-5)}}};
}

// native_layer_norm(x, normalized_shape, weight, bias, eps) over the last axis.
std::optional<AtenTranslation> LayerNorm(const Call& c) {
  const ValueId x = TensorArg(c.args, 0), w = TensorArg(c.args, 2), b = TensorArg(c.args, 3);
  const std::optional<std::vector<int64_t>> normalized = IntsArg(c.args, 1);
  if (x == kNoValue || w == kNoValue || b == kNoValue || !normalized || normalized->size() != 1) {
    return std::nullopt;
  }
  return AtenTranslation{"layer_norm", {x, w, b}, {{"epsilon", NumberArg(c.args, 4, 1e-5)}}};
}

constexpr char kRelu[] = "relu", kTanh[] = "tanh", kSigmoid[] = "sigmoid", kExp[] = "exp",
               kNeg[] = "neg", kHardSwish[] = "hard_swish", kSilu[] = "silu", kAdd[] = "add",
               kSub[] = "sub", kMul[] = "mul", kDiv[] = "div", kMax[] = "max", kMin[] = "min",
               kMatMul[] = "matmul", kBatchMatMul[] = "batch_matmul", kMean[] = "mean",
               kSum[] = "reduce_sum";

const std::map<std::string, Translate, std::less<>>& Table() {
  static const std::map<std::string, Translate, std::less<>> table = {
      {"aten.relu.default", &Unary<kRelu>},
      {"aten.tanh.default", &Unary<kTanh>},
      {"aten.sigmoid.default", &Unary<kSigmoid>},
      {"aten.exp.default", &Unary<kExp>},
      {"aten.neg.default", &Unary<kNeg>},
      {"aten.hardswish.default", &Unary<kHardSwish>},
      {"aten.hardtanh.default", &HardTanh},
      {"aten.silu.default", &Unary<kSilu>},
      {"aten.gelu.default", &Gelu},
      {"aten.add.Tensor", &Binary<kAdd>},
      {"aten.add.Scalar", &Binary<kAdd>},
      {"aten.sub.Tensor", &Binary<kSub>},
      {"aten.sub.Scalar", &Binary<kSub>},
      {"aten.mul.Tensor", &Binary<kMul>},
      {"aten.mul.Scalar", &Binary<kMul>},
      {"aten.div.Tensor", &Binary<kDiv>},
      {"aten.div.Scalar", &Binary<kDiv>},
      {"aten.maximum.default", &Binary<kMax>},
      {"aten.minimum.default", &Binary<kMin>},
      {"aten.mm.default", &Product<kMatMul>},
      {"aten.bmm.default", &Product<kBatchMatMul>},
      {"aten.addmm.default", &AddMm},
      {"aten.cat.default", &Cat},
      {"aten.clone.default", &Clone},
      {"aten.embedding.default", &Embedding},
      {"aten._softmax.default", &Softmax},
      {"aten.mean.dim", &Reduce<kMean>},
      {"aten.sum.dim_IntList", &Reduce<kSum>},
      {"aten.native_batch_norm.default", &BatchNorm},
      {"aten.native_layer_norm.default", &LayerNorm},
      {"aten.view.default", &AliasView},
      {"aten._unsafe_view.default", &AliasView},
      {"aten._reshape_alias.default", &AliasView},
      {"aten.reshape.default", &AliasView},
      {"aten.t.default", &AliasView},
      {"aten.transpose.int", &AliasView},
      {"aten.permute.default", &AliasView},
      {"aten.unsqueeze.default", &AliasView},
      {"aten.squeeze.dim", &AliasView},
      {"aten.squeeze.default", &AliasView},
      {"aten.alias.default", &AliasView},
      {"aten.detach.default", &AliasView},
  };
  return table;
}

}  // namespace

std::optional<AtenTranslation> TranslateAten(Graph* graph, std::string_view target,
                                             const nlohmann::json& args,
                                             const std::vector<ValueId>& outputs) {
  if (!args.is_array()) return std::nullopt;
  const auto row = Table().find(target);
  if (row == Table().end()) return std::nullopt;
  return row->second(Call{graph, args, outputs});
}

std::vector<std::string> MappedAtenTargets() {
  std::vector<std::string> targets;
  for (const auto& [target, translate] : Table()) targets.push_back(target);
  return targets;
}

bool IsAtenAliasView(std::string_view target) {
  const auto row = Table().find(target);
  return row != Table().end() && row->second == &AliasView;
}

}  // namespace memfold
