#include "memfold/ops/gradient.h"

#include <cstring>
#include <memory>

namespace memfold {
namespace {

using Ints = std::vector<int64_t>;

Attrs Ints1(const char* name, Ints values) {
  Attrs a;
  a.Set(name, std::move(values));
  return a;
}

// The forward node's attributes minus the ones its backward ops do not take.
Attrs CopyAttrs(const Node& n, std::initializer_list<const char*> drop = {}) {
  Attrs a;
  for (const auto& [name, value] : n.attrs.items()) {
    bool keep = true;
    for (const char* d : drop) keep = keep && name != d;
    if (keep) a.Set(name, value);
  }
  return a;
}

Status RequireNoActivation(GradEmitter& e, const Node& n) {
  const AttrValue* act = n.attrs.Find("activation");
  if (act != nullptr && std::get<std::string>(*act) != "none") {
    return Status::Error(
        "node '" + n.name + "' (" + n.op + ") fuses activation '" + std::get<std::string>(*act) +
        "', which has no gradient; use a separate activation op in training graphs");
  }
  return Status::Ok();
}

void Resize(const Node& n, std::vector<ValueId>* dx) { dx->assign(n.inputs.size(), kNoValue); }

// dx = op(dy, y) for the element-wise activations whose gradient reads their output.
Status FromOutput(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                  std::vector<ValueId>* dx, const char* op) {
  Resize(n, dx);
  (*dx)[0] = e.Op(op, {dy[0], n.outputs[0]});
  return e.status();
}

}  // namespace

GradEmitter::GradEmitter(Graph* graph, const Node& forward)
    : graph_(graph), name_(forward.name + "/grad"), layer_(forward.layer) {}

std::vector<ValueId> GradEmitter::Emit(const std::string& op, std::vector<ValueId> inputs,
                                       Attrs attrs) {
  if (!status_.ok()) return {};
  for (ValueId v : inputs) {
    if (v == kNoValue) return {};
  }
  const std::string name = name_ + (emitted_ == 0 ? "" : "_" + std::to_string(emitted_));
  ++emitted_;
  Result<std::vector<ValueId>> out = AddOp(graph_, op, std::move(inputs), std::move(attrs), name);
  if (!out.ok()) {
    status_ = out.status();
    return {};
  }
  graph_->node(graph_->num_nodes() - 1).layer = layer_;
  for (ValueId v : *out) graph_->value(v).role = Role::kGradient;
  return *out;
}

ValueId GradEmitter::Reshape(ValueId v, const Shape& shape) {
  if (v == kNoValue || graph_->value(v).shape == shape) return v;
  return Op("reshape", {v}, Ints1("shape", shape));
}

ValueId GradEmitter::Scalar(float value) {
  Value v;
  v.name = name_ + "/scalar" + std::to_string(emitted_++);
  v.role = Role::kWeight;
  auto data = std::make_shared<Bytes>(4);
  std::memcpy(data->data(), &value, 4);
  v.data = std::move(data);
  return graph_->AddValue(std::move(v));
}

ValueId GradEmitter::ReduceTo(ValueId grad, const Shape& shape) {
  if (grad == kNoValue) return kNoValue;
  const Shape& from = graph_->value(grad).shape;
  if (from == shape) return grad;
  Ints axes;
  const size_t extra = from.size() - shape.size();
  for (size_t d = 0; d < from.size(); ++d) {
    if (d < extra || (shape[d - extra] == 1 && from[d] != 1))
      axes.push_back(static_cast<int64_t>(d));
  }
  Attrs a = Ints1("axes", axes);
  a.Set("keepdims", int64_t{1});
  return Reshape(Op("reduce_sum", {grad}, a), shape);
}

Status GradRelu(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                std::vector<ValueId>* dx) {
  return FromOutput(e, n, dy, dx, "relu_grad");
}
Status GradTanh(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                std::vector<ValueId>* dx) {
  return FromOutput(e, n, dy, dx, "tanh_grad");
}
Status GradSigmoid(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                   std::vector<ValueId>* dx) {
  return FromOutput(e, n, dy, dx, "sigmoid_grad");
}
Status GradSoftmax(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                   std::vector<ValueId>* dx) {
  return FromOutput(e, n, dy, dx, "softmax_grad");
}
Status GradExp(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
               std::vector<ValueId>* dx) {
  return FromOutput(e, n, dy, dx, "mul");
}

Status GradNeg(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
               std::vector<ValueId>* dx) {
  Resize(n, dx);
  (*dx)[0] = e.Op("neg", {dy[0]});
  return e.status();
}

Status GradAdd(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
               std::vector<ValueId>* dx) {
  MF_RETURN_IF_ERROR(RequireNoActivation(e, n));
  Resize(n, dx);
  for (size_t k = 0; k < 2; ++k) (*dx)[k] = e.ReduceTo(dy[0], e.shape(n.inputs[k]));
  return e.status();
}

Status GradSub(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
               std::vector<ValueId>* dx) {
  MF_RETURN_IF_ERROR(RequireNoActivation(e, n));
  Resize(n, dx);
  (*dx)[0] = e.ReduceTo(dy[0], e.shape(n.inputs[0]));
  (*dx)[1] = e.ReduceTo(e.Op("neg", {dy[0]}), e.shape(n.inputs[1]));
  return e.status();
}

Status GradMul(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
               std::vector<ValueId>* dx) {
  MF_RETURN_IF_ERROR(RequireNoActivation(e, n));
  Resize(n, dx);
  (*dx)[0] = e.ReduceTo(e.Op("mul", {dy[0], n.inputs[1]}), e.shape(n.inputs[0]));
  (*dx)[1] = e.ReduceTo(e.Op("mul", {dy[0], n.inputs[0]}), e.shape(n.inputs[1]));
  return e.status();
}

Status GradFullyConnected(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                          std::vector<ValueId>* dx) {
  MF_RETURN_IF_ERROR(RequireNoActivation(e, n));
  Resize(n, dx);
  const ValueId x = n.inputs[0], w = n.inputs[1];
  const int64_t out_c = e.shape(w)[0], depth = e.shape(w)[1];
  const int64_t rows = e.value(x).elements() / depth;
  const ValueId dy2 = e.Reshape(dy[0], {rows, out_c});
  (*dx)[0] = e.Reshape(e.Op("matmul", {dy2, w}), e.shape(x));  // dX = dY W
  Attrs ta;
  ta.Set("transpose_a", int64_t{1});
  (*dx)[1] = e.Op("matmul", {dy2, e.Reshape(x, {rows, depth})}, ta);  // dW = dY^T X
  if (n.inputs.size() > 2 && n.inputs[2] != kNoValue) {
    (*dx)[2] = e.Op("reduce_sum", {dy2}, Ints1("axes", {0}));
  }
  return e.status();
}

// Y = op(A) op(B) with op = transpose or not: each gradient is a product of dY with the other
// operand, transposed as the four cases require.
Status GradMatMul(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                  std::vector<ValueId>* dx) {
  Resize(n, dx);
  const bool ta = n.attrs.Int("transpose_a") != 0, tb = n.attrs.Int("transpose_b") != 0;
  const ValueId a = n.inputs[0], b = n.inputs[1], g = dy[0];
  auto product = [&](ValueId l, ValueId r, bool tl, bool tr) {
    Attrs attrs;
    attrs.Set("transpose_a", int64_t{tl});
    attrs.Set("transpose_b", int64_t{tr});
    return e.Op(n.op, {l, r}, attrs);
  };
  ValueId da, db;
  if (!ta && !tb) {
    da = product(g, b, false, true);
    db = product(a, g, true, false);
  } else if (!ta && tb) {
    da = product(g, b, false, false);
    db = product(g, a, true, false);
  } else if (ta && !tb) {
    da = product(b, g, false, true);
    db = product(a, g, false, false);
  } else {
    da = product(b, g, true, true);
    db = product(g, a, true, true);
  }
  (*dx)[0] = e.ReduceTo(da, e.shape(a));
  (*dx)[1] = e.ReduceTo(db, e.shape(b));
  return e.status();
}

Status GradConv2D(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                  std::vector<ValueId>* dx) {
  MF_RETURN_IF_ERROR(RequireNoActivation(e, n));
  Resize(n, dx);
  Attrs in = CopyAttrs(n);
  in.Set("input_shape", e.shape(n.inputs[0]));
  (*dx)[0] = e.Op("conv2d_backprop_input", {dy[0], n.inputs[1]}, in);
  Attrs filter = CopyAttrs(n);
  filter.Set("filter_shape", e.shape(n.inputs[1]));
  (*dx)[1] = e.Op("conv2d_backprop_filter", {n.inputs[0], dy[0]}, filter);
  if (n.inputs.size() > 2 && n.inputs[2] != kNoValue)
    (*dx)[2] = e.Op("reduce_sum", {dy[0]}, Ints1("axes", {0, 1, 2}));
  return e.status();
}

Status GradDepthwise(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                     std::vector<ValueId>* dx) {
  MF_RETURN_IF_ERROR(RequireNoActivation(e, n));
  Resize(n, dx);
  Attrs in = CopyAttrs(n, {"multiplier"});
  in.Set("input_shape", e.shape(n.inputs[0]));
  (*dx)[0] = e.Op("depthwise_conv2d_backprop_input", {dy[0], n.inputs[1]}, in);
  Attrs filter = CopyAttrs(n, {"multiplier"});
  filter.Set("filter_shape", e.shape(n.inputs[1]));
  (*dx)[1] = e.Op("depthwise_conv2d_backprop_filter", {n.inputs[0], dy[0]}, filter);
  if (n.inputs.size() > 2 && n.inputs[2] != kNoValue)
    (*dx)[2] = e.Op("reduce_sum", {dy[0]}, Ints1("axes", {0, 1, 2}));
  return e.status();
}

Status GradMaxPool(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                   std::vector<ValueId>* dx) {
  MF_RETURN_IF_ERROR(RequireNoActivation(e, n));
  Resize(n, dx);
  (*dx)[0] = e.Op("max_pool2d_grad", {dy[0], n.inputs[0]}, CopyAttrs(n));
  return e.status();
}

Status GradAvgPool(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                   std::vector<ValueId>* dx) {
  MF_RETURN_IF_ERROR(RequireNoActivation(e, n));
  Resize(n, dx);
  Attrs a = CopyAttrs(n);
  a.Set("input_shape", e.shape(n.inputs[0]));
  (*dx)[0] = e.Op("avg_pool2d_grad", {dy[0]}, a);
  return e.status();
}

Status GradReshape(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                   std::vector<ValueId>* dx) {
  Resize(n, dx);
  (*dx)[0] = e.Op("reshape", {dy[0]}, Ints1("shape", e.shape(n.inputs[0])));
  return e.status();
}

Status GradConcat(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                  std::vector<ValueId>* dx) {
  Resize(n, dx);
  const Shape& out = e.shape(n.outputs[0]);
  int64_t axis = n.attrs.Int("axis");
  if (axis < 0) axis += static_cast<int64_t>(out.size());
  int64_t offset = 0;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    Ints begin(out.size(), 0);
    begin[static_cast<size_t>(axis)] = offset;
    Attrs a = Ints1("begin", begin);
    a.Set("size", e.shape(n.inputs[k]));
    (*dx)[k] = e.Op("slice", {dy[0]}, a);
    offset += e.shape(n.inputs[k])[static_cast<size_t>(axis)];
  }
  return e.status();
}

Status GradSlice(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                 std::vector<ValueId>* dx) {
  Resize(n, dx);
  const Shape& in = e.shape(n.inputs[0]);
  const Shape& out = e.shape(n.outputs[0]);
  const auto& begin = n.attrs.Ints("begin");
  Ints pads;
  for (size_t d = 0; d < in.size(); ++d) {
    pads.push_back(begin[d]);
    pads.push_back(in[d] - begin[d] - out[d]);
  }
  (*dx)[0] = e.Op("pad", {dy[0]}, Ints1("paddings", pads));
  return e.status();
}

Status GradTranspose(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                     std::vector<ValueId>* dx) {
  Resize(n, dx);
  const auto& perm = n.attrs.Ints("perm");
  Ints inverse(perm.size());
  for (size_t d = 0; d < perm.size(); ++d)
    inverse[static_cast<size_t>(perm[d])] = static_cast<int64_t>(d);
  (*dx)[0] = e.Op("transpose", {dy[0]}, Ints1("perm", inverse));
  return e.status();
}

Status GradPad(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
               std::vector<ValueId>* dx) {
  Resize(n, dx);
  const auto& pads = n.attrs.Ints("paddings");
  Ints begin;
  for (size_t d = 0; d < pads.size() / 2; ++d) begin.push_back(pads[2 * d]);
  Attrs a = Ints1("begin", begin);
  a.Set("size", e.shape(n.inputs[0]));
  (*dx)[0] = e.Op("slice", {dy[0]}, a);
  return e.status();
}

Status GradBroadcastTo(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                       std::vector<ValueId>* dx) {
  Resize(n, dx);
  (*dx)[0] = e.ReduceTo(dy[0], e.shape(n.inputs[0]));
  return e.status();
}

// The reduced axes' gradient: dy spread back over the input shape.
ValueId SpreadOverReducedAxes(GradEmitter& e, const Node& n, ValueId dy) {
  Shape kept = e.shape(n.inputs[0]);
  for (int64_t axis : n.attrs.Ints("axes"))
    kept[static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(kept.size()) : axis)] = 1;
  return e.Op("broadcast_to", {e.Reshape(dy, kept)}, Ints1("shape", e.shape(n.inputs[0])));
}

Status GradReduceSum(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                     std::vector<ValueId>* dx) {
  Resize(n, dx);
  (*dx)[0] = SpreadOverReducedAxes(e, n, dy[0]);
  return e.status();
}

Status GradMean(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                std::vector<ValueId>* dx) {
  Resize(n, dx);
  const int64_t out = e.value(n.outputs[0]).elements();
  const float scale =
      out == 0 ? 0.0f
               : static_cast<float>(out) / static_cast<float>(e.value(n.inputs[0]).elements());
  (*dx)[0] = e.Op("mul", {SpreadOverReducedAxes(e, n, dy[0]), e.Scalar(scale)});
  return e.status();
}

Status GradGather(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                  std::vector<ValueId>* dx) {
  Resize(n, dx);
  Attrs a;
  a.Set("rows", e.shape(n.inputs[0])[0]);
  (*dx)[0] = e.Op("scatter_add", {dy[0], n.inputs[1]}, a);
  return e.status();
}

Status GradBatchNorm(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                     std::vector<ValueId>* dx) {
  Resize(n, dx);
  const std::vector<ValueId> g =
      e.Emit("batch_norm_grad", {dy[0], n.inputs[0], n.inputs[1], n.outputs[1], n.outputs[2]},
             Attrs{{"axis", n.attrs.Int("axis")}});
  if (g.size() == 3) {
    (*dx)[0] = g[0];
    (*dx)[1] = g[1];
    (*dx)[2] = g[2];
  }
  return e.status();
}

Status GradLayerNorm(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                     std::vector<ValueId>* dx) {
  Resize(n, dx);
  const std::vector<ValueId> g =
      e.Emit("layer_norm_grad", {dy[0], n.inputs[0], n.inputs[1], n.outputs[1], n.outputs[2]});
  if (g.size() == 3) {
    (*dx)[0] = g[0];
    (*dx)[1] = g[1];
    (*dx)[2] = g[2];
  }
  return e.status();
}

Status GradDropout(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                   std::vector<ValueId>* dx) {
  Resize(n, dx);
  (*dx)[0] = e.Op("dropout_grad", {dy[0], n.outputs[1]});
  return e.status();
}

Status GradSoftmaxCrossEntropy(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
                               std::vector<ValueId>* dx) {
  Resize(n, dx);
  (*dx)[0] = e.Op("softmax_cross_entropy_grad", {dy[0], n.inputs[0], n.inputs[1]});
  return e.status();
}

Status GradMse(GradEmitter& e, const Node& n, std::span<const ValueId> dy,
               std::vector<ValueId>* dx) {
  Resize(n, dx);
  (*dx)[0] = e.Op("mse_loss_grad", {dy[0], n.inputs[0], n.inputs[1]});
  return e.status();
}

}  // namespace memfold
