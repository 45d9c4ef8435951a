#include "memfold/onnx/onnx_importer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>

#include "memfold/exec/executor.h"
#include "memfold/ops/registry.h"

namespace memfold::onnx_import {
namespace {

double ReadElement(DType dtype, const Bytes& bytes, int64_t k) {
  double out = 0;
  VisitElementType(dtype, [&](auto zero) {
    decltype(zero) element;
    std::memcpy(&element, bytes.data() + k * static_cast<int64_t>(sizeof(element)),
                sizeof(element));
    out = static_cast<double>(element);
  });
  return out;
}

// Converts as a C++ cast would after clamping to the type's range (no undefined behaviour).
void WriteElement(DType dtype, Bytes* bytes, int64_t k, double value) {
  VisitElementType(dtype, [&](auto zero) {
    using T = decltype(zero);
    T element;
    if constexpr (std::is_floating_point_v<T>) {
      element = static_cast<T>(value);
    } else if (dtype == DType::kBool) {
      element = static_cast<T>(value != 0);
    } else {
      const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
      const double hi = static_cast<double>(std::numeric_limits<T>::max());
      element = std::isnan(value) ? T{0}
                : value <= lo     ? std::numeric_limits<T>::lowest()
                : value >= hi     ? std::numeric_limits<T>::max()
                                  : static_cast<T>(value);
    }
    std::memcpy(bytes->data() + k * static_cast<int64_t>(sizeof(T)), &element, sizeof(T));
  });
}

// The element of `shape` (broadcast to `out`) that output element `k` reads.
int64_t BroadcastIndex(const Shape& shape, const Shape& out, int64_t k) {
  int64_t index = 0, stride = 1;
  const auto offset = static_cast<int64_t>(out.size() - shape.size());
  for (auto d = static_cast<int64_t>(out.size()) - 1; d >= 0; --d) {
    const int64_t coord = k % out[static_cast<size_t>(d)];
    k /= out[static_cast<size_t>(d)];
    if (d < offset) continue;
    const int64_t dim = shape[static_cast<size_t>(d - offset)];
    if (dim != 1) index += coord * stride;
    stride *= dim;
  }
  return index;
}

// Elementwise operators the double-precision folding evaluates, by registry name.
std::optional<double> Elementwise(std::string_view op, const std::vector<double>& x) {
  const double a = x[0], b = x.size() > 1 ? x[1] : 0;
  if (op == "add") return a + b;
  if (op == "sub") return a - b;
  if (op == "mul") return a * b;
  if (op == "div") return b == 0 ? 0 : a / b;
  if (op == "max") return std::max(a, b);
  if (op == "min") return std::min(a, b);
  if (op == "neg") return -a;
  if (op == "abs") return std::abs(a);
  if (op == "sqrt") return std::sqrt(a);
  if (op == "exp") return std::exp(a);
  if (op == "log") return std::log(a);
  if (op == "floor") return std::floor(a);
  if (op == "ceil") return std::ceil(a);
  if (op == "square") return a * a;
  if (op == "cast") return a;
  if (op == "equal") return a == b;
  if (op == "not_equal") return a != b;
  if (op == "less") return a < b;
  if (op == "less_equal") return a <= b;
  if (op == "greater") return a > b;
  if (op == "greater_equal") return a >= b;
  if (op == "logical_and") return (a != 0) && (b != 0);
  if (op == "logical_or") return (a != 0) || (b != 0);
  if (op == "logical_not") return a == 0;
  if (op == "select_v2") return a != 0 ? b : x[2];
  if (op == "pow") return std::pow(a, b);
  if (op == "mod") return b == 0 ? 0 : a - b * std::floor(a / b);  // the divisor's sign
  if (op == "fmod") return b == 0 ? 0 : std::fmod(a, b);
  return std::nullopt;
}

// Data movement keeps a quantised tensor's parameters (a transpose moves a per-channel axis).
void CarryQuantization(std::string_view op, const Attrs& attrs, const Value& in, Value* out) {
  static constexpr std::string_view kMoves[] = {"transpose",     "reshape",   "slice",
                                                "strided_slice", "split",     "gather_axis",
                                                "broadcast_to",  "max_pool2d"};
  if (!in.quant || out->quant || out->dtype != in.dtype ||
      std::find(std::begin(kMoves), std::end(kMoves), op) == std::end(kMoves))
    return;
  Quantization q = *in.quant;
  if (q.per_channel() && op == "transpose") {
    const AttrValue* perm = attrs.Find("perm");
    if (perm == nullptr) return;
    const auto& p = std::get<std::vector<int64_t>>(*perm);
    q.axis = static_cast<int32_t>(std::find(p.begin(), p.end(), q.axis) - p.begin());
  } else if (q.per_channel() && op == "reshape") {
    // The channel axis survives a reshape where an axis of its size has the same elements
    // after it (each element keeps its channel): [O, I, k] -> [O, I, 1, k].
    const auto a = static_cast<size_t>(q.axis);
    if (a >= in.shape.size()) return;
    auto after = [](const Shape& shape, size_t d) {
      return std::accumulate(shape.begin() + static_cast<std::ptrdiff_t>(d) + 1, shape.end(),
                             int64_t{1}, std::multiplies<>());
    };
    std::optional<int32_t> axis;
    for (size_t d = 0; d < out->shape.size(); ++d) {
      if (out->shape[d] == in.shape[a] && after(out->shape, d) == after(in.shape, a))
        axis = static_cast<int32_t>(d);
    }
    if (!axis) return;
    q.axis = *axis;
  } else if (q.per_channel()) {
    return;
  }
  out->quant = std::move(q);
}

}  // namespace

std::optional<DType> DTypeOfOnnx(int32_t onnx_type) {
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT:
      return DType::kF32;
    case onnx::TensorProto::UINT8:
      return DType::kU8;
    case onnx::TensorProto::INT8:
      return DType::kI8;
    case onnx::TensorProto::INT16:
      return DType::kI16;
    case onnx::TensorProto::INT32:
      return DType::kI32;
    case onnx::TensorProto::INT64:
      return DType::kI64;
    case onnx::TensorProto::BOOL:
      return DType::kBool;
    case onnx::TensorProto::UINT32:
      return DType::kU32;
    default:
      return std::nullopt;
  }
}

Importer::Importer(Graph* graph, std::string label, int64_t opset)
    : graph_(graph), label_(std::move(label)), opset_(opset) {}

void Importer::Begin(const onnx::NodeProto& node, int index) {
  node_ = &node;
  index_ = index;
  first_new_value_ = graph_->num_values();
  first_new_node_ = graph_->num_nodes();
  stand_inputs_.reset();
  stand_output_.reset();
}

std::string Importer::NodeLabel() const {
  std::string text = "node " + std::to_string(index_) + " (" + node_->op_type();
  if (!node_->name().empty()) text += " \"" + node_->name() + "\"";
  return text + ")";
}

std::string Importer::NodeName() const {
  return node_->name().empty() ? node_->op_type() + "_" + std::to_string(index_) : node_->name();
}

Status Importer::Error(const std::string& what) const {
  return Status::Error(label_ + ": " + NodeLabel() + ": " + what);
}

bool Importer::HasInput(int k) const {
  if (stand_inputs_)
    return k < num_inputs() && (*stand_inputs_)[static_cast<size_t>(k)].has_value();
  return k < node_->input_size() && !node_->input(k).empty();
}

void Importer::StandFor(std::vector<std::optional<Tensor>> inputs, QuantizedOutput output) {
  stand_inputs_ = std::move(inputs);
  output.quantized_name = node_->output_size() > 0 ? node_->output(0) : "";
  output.real_names.clear();
  stand_output_ = std::move(output);
}

Status Importer::StandOutput(ValueId v, bool channels_last) {
  const QuantizedOutput& q = *stand_output_;
  const Value& value = graph_->value(v);
  ValueId out = v;
  const bool same = value.dtype == q.dtype && value.quant && value.quant->scale == q.quant.scale &&
                    value.quant->zero_point == q.quant.zero_point;
  if (!same) {
    MF_ASSIGN_OR_RETURN(out, Emit("quantize", {v}, {{"dtype", std::string(DTypeName(q.dtype))}}));
    graph_->value(out).quant = q.quant;
  }
  if (out >= first_new_value_) graph_->value(out).name = q.quantized_name;
  return BindName(q.quantized_name, {out, channels_last, false});
}

Result<Tensor> Importer::RawInput(int k) const {
  if (!HasInput(k)) return Error("needs input " + std::to_string(k));
  if (stand_inputs_) return *(*stand_inputs_)[static_cast<size_t>(k)];
  std::optional<Tensor> t = Find(node_->input(k));
  if (!t) {
    return Error("reads '" + node_->input(k) +
                 "', which no earlier node, input or initializer defines (the nodes must be in "
                 "topological order)");
  }
  return *t;
}

Result<Tensor> Importer::Input(int k) {
  MF_ASSIGN_OR_RETURN(Tensor t, RawInput(k));
  if (!t.quantized) return t;
  MF_ASSIGN_OR_RETURN(ValueId real, Dequantized(t));
  return Tensor{real, t.channels_last, false};
}

std::optional<Tensor> Importer::QuantizedInput(int k) const {
  if (!HasInput(k)) return std::nullopt;
  std::optional<Tensor> t =
      stand_inputs_ ? (*stand_inputs_)[static_cast<size_t>(k)] : Find(node_->input(k));
  if (!t || !t->quantized) return std::nullopt;
  return t;
}

Result<ValueId> Importer::Dequantized(Tensor t) {
  if (auto it = real_of_.find(t.id); it != real_of_.end()) return it->second;
  const Value& v = ValueOf(t);
  if (!v.quant) return Error("memfold bug: a quantized tensor without quantisation");
  ValueId real;
  if (v.is_constant()) {  // as ONNX's DequantizeLinear: float(q - zero_point) * scale
    const Quantization q = *v.quant;
    int64_t inner = 1;
    for (size_t d = static_cast<size_t>(q.axis) + 1; d < v.shape.size(); ++d) inner *= v.shape[d];
    std::vector<float> values(static_cast<size_t>(v.elements()));
    for (int64_t k = 0; k < v.elements(); ++k) {
      const size_t c = q.per_channel()
                           ? static_cast<size_t>((k / inner) % v.shape[static_cast<size_t>(q.axis)])
                           : 0;
      const double element = ReadElement(v.dtype, *v.data, k);
      values[static_cast<size_t>(k)] =
          static_cast<float>(element - static_cast<double>(q.zero_point[c])) * q.scale[c];
    }
    real = FloatConstant(v.shape, values);
  } else {
    MF_ASSIGN_OR_RETURN(real, Emit("dequantize", {t.id}));
  }
  real_of_[t.id] = real;
  return real;
}

Shape Importer::OnnxShape(Tensor t) const {
  Shape shape = ValueOf(t).shape;
  if (t.channels_last) std::rotate(shape.begin() + 1, shape.end() - 1, shape.end());
  return shape;
}

Result<std::vector<double>> Importer::ConstDoubles(Tensor t, const std::string& what) const {
  const Value& v = ValueOf(t);
  if (!v.is_constant()) {
    return Error(what + " '" + v.name +
                 "' is computed at run time; memfold needs it constant (static shapes)");
  }
  std::vector<double> out(static_cast<size_t>(v.elements()));
  if (v.dtype == DType::kBit) return Error(what + " has a packed bit type");
  for (int64_t k = 0; k < v.elements(); ++k)
    out[static_cast<size_t>(k)] = ReadElement(v.dtype, *v.data, k);
  return out;
}

Result<std::vector<int64_t>> Importer::ConstInts(Tensor t, const std::string& what,
                                                 bool bounded) const {
  const Value& v = ValueOf(t);
  if (v.dtype == DType::kI64 && v.is_constant()) {  // exact, INT64_MAX included (Slice ends)
    std::vector<int64_t> out(static_cast<size_t>(v.elements()));
    if (!out.empty()) std::memcpy(out.data(), v.data->data(), out.size() * sizeof(int64_t));
    for (int64_t x : out) {
      if (bounded && (x > kMaxValue || x < -kMaxValue))
        return Error(what + " holds " + std::to_string(x) + ", beyond 2^31");
    }
    return out;
  }
  MF_ASSIGN_OR_RETURN(std::vector<double> values, ConstDoubles(t, what));
  std::vector<int64_t> out;
  for (double x : values) {
    if (!(std::abs(x) < 9.2e18))
      return Error(what + " holds a value out of range: " + std::to_string(x));
    out.push_back(static_cast<int64_t>(x));
  }
  return out;
}

const onnx::AttributeProto* Importer::Attr(std::string_view name) const {
  for (const onnx::AttributeProto& a : node_->attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t Importer::Int(std::string_view name, int64_t fallback) const {
  const onnx::AttributeProto* a = Attr(name);
  return a != nullptr ? std::clamp(a->i(), -kMaxValue, kMaxValue) : fallback;
}

double Importer::Float(std::string_view name, double fallback) const {
  const onnx::AttributeProto* a = Attr(name);
  return a != nullptr ? a->f() : fallback;
}

std::string Importer::Str(std::string_view name, std::string fallback) const {
  const onnx::AttributeProto* a = Attr(name);
  return a != nullptr ? a->s() : fallback;
}

std::vector<int64_t> Importer::Ints(std::string_view name, std::vector<int64_t> fallback) const {
  const onnx::AttributeProto* a = Attr(name);
  if (a == nullptr) return fallback;
  std::vector<int64_t> values;
  for (int64_t v : a->ints()) values.push_back(std::clamp(v, -kMaxValue, kMaxValue));
  return values;
}

Result<int64_t> Importer::CheckedElements(const Shape& shape, DType dtype) const {
  const int64_t limit = kMaxTensorBytes / std::max(1, ElementBytes(dtype));
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return Error("makes a tensor of negative dimension " + ShapeString(shape));
    if (d != 0 && n > limit / d)
      return Error("makes a tensor of more than 2^31 bytes (" + ShapeString(shape) + ")");
    n *= d;
  }
  return n;
}

Result<int64_t> Importer::Axis(int64_t axis, int rank, bool channels_last) const {
  if (axis < -rank || axis >= rank) {
    return Error("axis " + std::to_string(axis) + " is out of range for rank " +
                 std::to_string(rank));
  }
  if (axis < 0) axis += rank;
  if (!channels_last || axis == 0) return axis;
  return axis == 1 ? rank - 1 : axis - 1;
}

Result<ValueId> Importer::Plain(Tensor t) {
  if (!t.channels_last) return t.id;
  if (auto it = plain_of_.find(t.id); it != plain_of_.end()) return it->second;
  const Shape onnx_shape = OnnxShape(t);
  const Shape& shape = ValueOf(t).shape;
  const bool spatial_ones =
      std::all_of(shape.begin() + 1, shape.end() - 1, [](int64_t d) { return d == 1; });
  ValueId plain;
  if (spatial_ones) {
    MF_ASSIGN_OR_RETURN(plain, Emit("reshape", {t.id}, {{"shape", onnx_shape}}));
  } else {
    std::vector<int64_t> perm{0, static_cast<int64_t>(shape.size()) - 1};
    for (int64_t d = 1; d + 1 < static_cast<int64_t>(shape.size()); ++d) perm.push_back(d);
    MF_ASSIGN_OR_RETURN(plain, Emit("transpose", {t.id}, {{"perm", perm}}));
  }
  plain_of_[t.id] = plain;
  channels_last_of_[plain] = t.id;
  return plain;
}

Result<ValueId> Importer::ChannelsLast(Tensor t, int rank) {
  if (t.channels_last && (rank == 0 || rank == Rank(t))) return t.id;
  MF_ASSIGN_OR_RETURN(ValueId plain, Plain(t));
  Shape shape = graph_->value(plain).shape;
  if (rank != 0 && static_cast<int>(shape.size()) < rank) {
    shape.insert(shape.begin(), static_cast<size_t>(rank) - shape.size(), 1);
    MF_ASSIGN_OR_RETURN(plain, Emit("reshape", {plain}, {{"shape", shape}}));
  }
  if (shape.size() < 3) return Error("needs a tensor of rank >= 3, has " + ShapeString(shape));
  if (auto it = channels_last_of_.find(plain); it != channels_last_of_.end()) return it->second;
  std::vector<int64_t> perm{0};
  for (int64_t d = 2; d < static_cast<int64_t>(shape.size()); ++d) perm.push_back(d);
  perm.push_back(1);
  ValueId last;
  const bool spatial_ones =
      std::all_of(shape.begin() + 2, shape.end(), [](int64_t d) { return d == 1; });
  if (spatial_ones) {
    Shape moved = shape;
    std::rotate(moved.begin() + 1, moved.begin() + 2, moved.end());
    MF_ASSIGN_OR_RETURN(last, Emit("reshape", {plain}, {{"shape", moved}}));
  } else {
    MF_ASSIGN_OR_RETURN(last, Emit("transpose", {plain}, {{"perm", perm}}));
  }
  channels_last_of_[plain] = last;
  plain_of_[last] = plain;
  return last;
}

Result<std::vector<ValueId>> Importer::EmitAll(std::string_view op, std::vector<ValueId> inputs,
                                               Attrs attrs) {
  const bool all_constant =
      !inputs.empty() && std::all_of(inputs.begin(), inputs.end(), [&](ValueId v) {
        return v == kNoValue || graph_->value(v).is_constant();
      });
  for (const char* shaped : {"shape", "size", "output_shape"}) {  // products infer may take
    if (const AttrValue* a = attrs.Find(shaped); a != nullptr && std::holds_alternative<Shape>(*a))
      MF_RETURN_IF_ERROR(CheckedElements(std::get<Shape>(*a)).status());
  }
  if (all_constant) return Fold(op, inputs, attrs);
  // Helpers are named "NODE/op_k"; Output gives the node computing the result the ONNX name.
  std::string name = NodeName() + "/" + std::string(op) + "_" + std::to_string(graph_->num_nodes());
  const ValueId first = inputs.empty() ? kNoValue : inputs.front();
  const Attrs kept = attrs;
  Result<std::vector<ValueId>> outs =
      AddOp(graph_, op, std::move(inputs), std::move(attrs), std::move(name));
  if (!outs.ok()) return Error(outs.status().message());
  for (ValueId out : *outs) {
    const Value& v = graph_->value(out);
    MF_RETURN_IF_ERROR(CheckedElements(v.shape, v.dtype).status());
  }
  if (first != kNoValue) {
    for (ValueId out : *outs)
      CarryQuantization(op, kept, graph_->value(first), &graph_->value(out));
  }
  return outs;
}

Result<ValueId> Importer::Emit(std::string_view op, std::vector<ValueId> inputs, Attrs attrs) {
  MF_ASSIGN_OR_RETURN(std::vector<ValueId> outs, EmitAll(op, std::move(inputs), std::move(attrs)));
  return outs.front();
}

// Runs the node alone in a graph of its constant inputs, and adds its outputs as constants. An
// elementwise op without a kernel for the type (or without a registry row: "mod", "pow") is
// evaluated in double precision.
Result<std::vector<ValueId>> Importer::Fold(std::string_view op, const std::vector<ValueId>& inputs,
                                            const Attrs& attrs) {
  Graph mini;
  std::vector<ValueId> mini_inputs;
  for (ValueId v : inputs) {
    if (v == kNoValue) {
      mini_inputs.push_back(kNoValue);
      continue;
    }
    const Value& constant = graph_->value(v);
    Value copy;
    copy.name = constant.name;
    copy.dtype = constant.dtype;
    copy.shape = constant.shape;
    copy.role = constant.role;
    copy.quant = constant.quant;
    copy.data = constant.data;
    mini_inputs.push_back(mini.AddValue(std::move(copy)));
  }
  const DType first_dtype = mini.value(mini_inputs.front()).dtype;  // AddOp moves the values
  const std::shared_ptr<const Bytes> first_data = mini.value(mini_inputs.front()).data;
  const OpDef* def = FindOp(op);
  std::vector<TensorType> types;
  std::vector<Bytes> results;
  if (def == nullptr) {
    TensorType type{first_dtype, {}};
    for (ValueId v : mini_inputs) {
      if (mini.value(v).shape.size() > 8) return Error("folds a constant of rank above 8");
    }
    for (ValueId v : mini_inputs) {
      const Shape& shape = mini.value(v).shape;
      if (shape.size() > type.shape.size())
        type.shape.insert(type.shape.begin(), shape.size() - type.shape.size(), 1);
      for (size_t d = 0; d < shape.size(); ++d) {
        int64_t& out = type.shape[type.shape.size() - shape.size() + d];
        if (out == 1)
          out = shape[d];
        else if (shape[d] != 1 && shape[d] != out)
          return Error("cannot broadcast the constant operands of " + std::string(op));
      }
    }
    types.push_back(std::move(type));
  } else {
    Result<std::vector<ValueId>> outs = AddOp(&mini, op, mini_inputs, attrs);
    if (!outs.ok()) return Error(outs.status().message());
    for (ValueId out : *outs) types.push_back({mini.value(out).dtype, mini.value(out).shape});
    if (def->alias) {
      results.push_back(*first_data);
    } else if (def->FindKernel(first_dtype) != nullptr) {
      mini.outputs = *outs;
      for (ValueId out : *outs) mini.value(out).role = Role::kOutput;
      Result<RunOutputs> run = RunUnplanned(mini, {});
      if (!run.ok())
        return Error("folding a constant " + std::string(op) + ": " + run.status().message());
      results = std::move(run->outputs);
    }
  }
  for (const TensorType& type : types) {
    MF_ASSIGN_OR_RETURN(const int64_t n, CheckedElements(type.shape, type.dtype));
    if (StorageBytes(type.dtype, n) > kMaxConstantBytes)
      return Error("would fold into a constant of more than 256 MiB (" + ShapeString(type.shape) +
                   ")");
  }
  if (results.empty()) {
    const TensorType& out = types.front();
    const int64_t n = NumElements(out.shape);
    Bytes bytes(static_cast<size_t>(StorageBytes(out.dtype, n)));
    std::vector<double> x(inputs.size());
    for (int64_t k = 0; k < n; ++k) {
      for (size_t i = 0; i < mini_inputs.size(); ++i) {
        const Value& in = mini.value(mini_inputs[i]);
        x[i] = ReadElement(in.dtype, *in.data, BroadcastIndex(in.shape, out.shape, k));
      }
      std::optional<double> y = Elementwise(op, x);
      if (!y) {
        return Error("cannot fold a constant " + std::string(op) + " of " +
                     std::string(DTypeName(first_dtype)) + " (no kernel for the type)");
      }
      WriteElement(out.dtype, &bytes, k, *y);
    }
    results.push_back(std::move(bytes));
  }
  std::vector<ValueId> constants;
  for (size_t k = 0; k < types.size(); ++k) {
    constants.push_back(Constant(types[k].dtype, types[k].shape, std::move(results[k])));
    if (inputs.front() != kNoValue)
      CarryQuantization(op, attrs, graph_->value(inputs.front()), &graph_->value(constants.back()));
  }
  return constants;
}

ValueId Importer::Constant(DType dtype, Shape shape, Bytes bytes, const std::string& name) {
  Value v;
  v.name = name.empty() ? "const_" + std::to_string(graph_->num_values()) : name;
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.role = Role::kWeight;
  v.data = std::make_shared<const Bytes>(std::move(bytes));
  return graph_->AddValue(std::move(v));
}

ValueId Importer::FloatConstant(Shape shape, const std::vector<float>& values) {
  Bytes bytes(values.size() * sizeof(float));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return Constant(DType::kF32, std::move(shape), std::move(bytes));
}

Status Importer::Output(int k, ValueId v, bool channels_last) {
  if (k >= node_->output_size() || node_->output(k).empty()) return Status::Ok();
  if (stand_output_ && k == 0) return StandOutput(v, channels_last);
  const std::string& name = node_->output(k);
  const Tensor t{v, channels_last};
  if (auto it = stated_.find(name); it != stated_.end()) {
    const Shape shape = OnnxShape(t);
    const auto& [dtype, stated] = it->second;
    if (stated != shape || dtype != ValueOf(t).dtype) {
      return Error("computes '" + name + "' as " + std::string(DTypeName(ValueOf(t).dtype)) + " " +
                   ShapeString(shape) + " where the file says " + std::string(DTypeName(dtype)) +
                   " " + ShapeString(stated));
    }
  }
  if (v >= first_new_value_) graph_->value(v).name = name;  // made for this node: its name
  const NodeId producer = graph_->value(v).producer;
  if (producer != kNoNode && producer >= first_new_node_) graph_->node(producer).name = NodeName();
  return BindName(name, t);
}

Status Importer::OutputQuantized(int k, ValueId v, bool channels_last) {
  if (k >= node_->output_size() || node_->output(k).empty()) return Status::Ok();
  if (stand_output_ && k == 0) return StandOutput(v, channels_last);
  return BindName(node_->output(k), {v, channels_last, true});
}

const onnx::NodeProto* Importer::SoleReader(const std::string& name) const {
  auto it = readers_.find(name);
  if (Uses(name) != 1 || it == readers_.end() || it->second.size() != 1) return nullptr;
  const onnx::NodeProto* reader = it->second.front();
  const bool default_domain = reader->domain().empty() || reader->domain() == "ai.onnx";
  return default_domain ? reader : nullptr;
}

std::optional<QuantizedOutput> Importer::QuantizedConsumer(int k) const {
  if (stand_output_) {
    if (k != 0 || stand_output_->dtype != DType::kI8) return std::nullopt;  // int8 kernels only
    return stand_output_;
  }
  if (k >= node_->output_size() || node_->output(k).empty()) return std::nullopt;
  QuantizedOutput out;
  std::string name = node_->output(k);
  out.real_names.push_back(name);
  const onnx::NodeProto* reader = SoleReader(name);
  if (reader == nullptr) return std::nullopt;
  auto constant = [&](int input) -> std::optional<std::vector<double>> {
    if (input >= reader->input_size() || reader->input(input).empty()) return std::nullopt;
    std::optional<Tensor> t = Find(reader->input(input));
    if (!t || !IsConstant(*t) || t->quantized) return std::nullopt;
    Result<std::vector<double>> v = ConstDoubles(*t, "a parameter");
    if (!v.ok()) return std::nullopt;
    return *v;
  };
  if (reader->op_type() == "Relu" || reader->op_type() == "Clip") {
    const std::optional<std::vector<double>> lo = constant(1), hi = constant(2);
    if (reader->op_type() == "Relu" || (lo == std::vector<double>{0} && !hi)) {
      out.activation = "relu";
    } else if (lo == std::vector<double>{0} && hi == std::vector<double>{6}) {
      out.activation = "relu6";
    } else {
      return std::nullopt;
    }
    if (reader->output_size() < 1) return std::nullopt;
    name = reader->output(0);
    out.real_names.push_back(name);
    reader = SoleReader(name);
    if (reader == nullptr) return std::nullopt;
  }
  if (reader->op_type() != "QuantizeLinear" || reader->input_size() < 3 ||
      reader->output_size() < 1)
    return std::nullopt;
  const std::optional<std::vector<double>> scale = constant(1), zero = constant(2);
  std::optional<Tensor> zero_tensor = Find(reader->input(2));
  if (!scale || !zero || scale->size() != 1 || zero->size() != 1 || !(scale->front() > 0) ||
      ValueOf(*zero_tensor).dtype != DType::kI8)
    return std::nullopt;
  out.quant.scale = {static_cast<float>(scale->front())};
  out.quant.zero_point = {static_cast<int64_t>(zero->front())};
  out.quantized_name = reader->output(0);
  return out;
}

Status Importer::QuantizedResult(ValueId v, const QuantizedOutput& q, bool channels_last) {
  Value& value = graph_->value(v);
  value.quant = q.quant;
  value.name = q.quantized_name;
  if (value.producer != kNoNode && value.producer >= first_new_node_)
    graph_->node(value.producer).name = NodeName();
  for (const std::string& name : q.real_names) {
    claimed_.insert(name);
    MF_RETURN_IF_ERROR(BindName(name, {v, channels_last, true}));
  }
  claimed_.insert(q.quantized_name);
  return BindName(q.quantized_name, {v, channels_last, false});
}

bool Importer::Claimed(const onnx::NodeProto& node) const {
  return node.output_size() > 0 &&
         std::all_of(node.output().begin(), node.output().end(),
                     [&](const std::string& o) { return claimed_.count(o) > 0; });
}

Status Importer::Opaque(const std::string& why) {
  Node opaque;
  opaque.op = "onnx:" + node_->op_type();
  opaque.name = NodeName();
  for (int k = 0; k < num_inputs(); ++k) {
    if (!HasInput(k)) {
      opaque.inputs.push_back(kNoValue);
      continue;
    }
    MF_ASSIGN_OR_RETURN(Tensor t, Input(k));
    MF_ASSIGN_OR_RETURN(ValueId plain, Plain(t));
    opaque.inputs.push_back(plain);
  }
  std::vector<ValueId> outs;
  for (const std::string& name : node_->output()) {
    auto it = stated_.find(name);
    if (it == stated_.end()) {
      return Error(why + ", and the file states no shape for its output '" + name +
                   "' to plan it as an opaque operator; add shapes with "
                   "onnx.shape_inference.infer_shapes");
    }
    Value v;
    v.name = name;
    v.dtype = it->second.first;
    v.shape = it->second.second;
    outs.push_back(graph_->AddValue(std::move(v)));
  }
  opaque.outputs = outs;
  graph_->AddNode(std::move(opaque));
  for (size_t k = 0; k < outs.size(); ++k)
    MF_RETURN_IF_ERROR(BindName(node_->output(static_cast<int>(k)), {outs[k], false}));
  return Status::Ok();
}

bool Importer::FuseActivation(Tensor x, const std::string& activation) {
  if (stand_inputs_) return false;
  const Value& v = ValueOf(x);
  if (v.producer == kNoNode || Uses(node_->input(0)) != 1 || bindings_[x.id] != 1) return false;
  Node& producer = graph_->node(v.producer);
  static constexpr std::string_view kFusing[] = {
      "conv2d", "depthwise_conv2d", "fully_connected", "add", "sub", "mul", "transpose_conv"};
  if (std::find(std::begin(kFusing), std::end(kFusing), producer.op) == std::end(kFusing) ||
      producer.outputs.size() != 1 || v.dtype != DType::kF32)
    return false;
  const AttrValue* current = producer.attrs.Find("activation");
  if (current == nullptr || std::get<std::string>(*current) != "none") return false;
  producer.attrs.Set("activation", activation);
  return true;
}

Status Importer::BindName(const std::string& name, Tensor t) {
  if (name.empty()) return Status::Ok();
  ++bindings_[t.id];
  if (!names_.emplace(name, t).second) {
    return Status::Error(label_ + ": '" + name +
                         "' is defined twice (ONNX graphs are in static single assignment form)");
  }
  return Status::Ok();
}

int Importer::Uses(const std::string& name) const {
  auto it = uses_.find(name);
  return it == uses_.end() ? 0 : it->second;
}

std::optional<Tensor> Importer::Find(const std::string& name) const {
  auto it = names_.find(name);
  if (it == names_.end()) return std::nullopt;
  return it->second;
}

void Importer::StateType(const std::string& name, DType dtype, Shape shape) {
  stated_[name] = {dtype, std::move(shape)};
}

}  // namespace memfold::onnx_import
