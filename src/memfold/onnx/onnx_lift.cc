#include "memfold/onnx/onnx_lift.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace memfold {
namespace {

constexpr std::string_view kTo2d = "memfold__shape_to_2d";  // [0, 0, 1, -1]: [N, C, 1, L]
constexpr std::string_view kTo1d = "memfold__shape_to_1d";  // [0, 0, -1]: back to [N, C, L]

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& node, std::string_view name) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

onnx::AttributeProto* MutableAttr(onnx::NodeProto* node, std::string_view name) {
  for (onnx::AttributeProto& a : *node->mutable_attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// What the rewrite needs to know of the graph: who makes and who reads each tensor.
struct Index {
  std::map<std::string, int, std::less<>> initializer_rank;
  std::map<std::string, int, std::less<>> producer;              // node positions
  std::map<std::string, std::vector<int>, std::less<>> readers;  // node positions
  std::set<std::string, std::less<>> graph_outputs;
};

Index IndexOf(const onnx::GraphProto& g) {
  Index index;
  for (const onnx::TensorProto& t : g.initializer())
    index.initializer_rank[t.name()] = t.dims_size();
  for (int i = 0; i < g.node_size(); ++i) {
    for (const std::string& in : g.node(i).input()) index.readers[in].push_back(i);
    for (const std::string& out : g.node(i).output()) index.producer[out] = i;
  }
  for (const onnx::ValueInfoProto& o : g.output()) index.graph_outputs.insert(o.name());
  return index;
}

bool IsWindowOp(const onnx::NodeProto& node) {
  const std::string& op = node.op_type();
  const bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
  return default_domain && (op == "Conv" || op == "ConvTranspose" || op == "QLinearConv" ||
                            op == "MaxPool" || op == "AveragePool");
}

// Which input holds a convolution's weights; -1 for a pool.
int WeightInput(const onnx::NodeProto& node) {
  if (node.op_type() == "QLinearConv") return 3;
  return node.op_type() == "Conv" || node.op_type() == "ConvTranspose" ? 1 : -1;
}

// The DequantizeLinear that makes `tensor`, or -1.
int DequantizerOf(const onnx::GraphProto& g, const Index& index, std::string_view tensor) {
  auto p = index.producer.find(tensor);
  return p != index.producer.end() && g.node(p->second).op_type() == "DequantizeLinear" &&
                 g.node(p->second).input_size() > 0
             ? p->second
             : -1;
}

// The 3-D initializer a Conv's weights are (directly or through a DequantizeLinear).
bool HasThreeDimensionalWeights(const onnx::GraphProto& g, const onnx::NodeProto& node,
                                const Index& index) {
  const int k = WeightInput(node);
  if (k < 0 || node.input_size() <= k) return false;
  std::string_view w = node.input(k);
  if (const int dq = DequantizerOf(g, index, w); dq >= 0) w = g.node(dq).input(0);
  auto r = index.initializer_rank.find(w);
  return r != index.initializer_rank.end() && r->second == 3;
}

bool IsOneDimensional(const onnx::GraphProto& g, const onnx::NodeProto& node, const Index& index) {
  // MaxPool's indices would come out 4-D: left to the opaque node of the file's shapes.
  const bool second_output = node.output_size() > 1 && !node.output(1).empty();
  if (!IsWindowOp(node) || node.input_size() <= std::max(0, WeightInput(node)) ||
      node.output_size() < 1 || second_output)
    return false;
  if (const onnx::AttributeProto* k = FindAttr(node, "kernel_shape")) return k->ints_size() == 1;
  return HasThreeDimensionalWeights(g, node, index);
}

// Gives every 1-entry spatial attribute a leading axis: `fill` before it (pads: [b, e] ->
// [0, b, 0, e]).
void LiftAttributes(onnx::NodeProto* node) {
  const std::pair<std::string_view, int64_t> leading[] = {{"kernel_shape", 1},
                                                          {"strides", 1},
                                                          {"dilations", 1},
                                                          {"output_padding", 0},
                                                          {"output_shape", 1}};
  for (const auto& [name, fill] : leading) {
    onnx::AttributeProto* a = MutableAttr(node, name);
    if (a == nullptr || a->ints_size() != 1) continue;
    const int64_t v = a->ints(0);
    a->clear_ints();
    a->add_ints(fill);
    a->add_ints(v);
  }
  if (onnx::AttributeProto* pads = MutableAttr(node, "pads"); pads && pads->ints_size() == 2) {
    const int64_t begin = pads->ints(0), end = pads->ints(1);
    pads->clear_ints();
    for (int64_t v : {int64_t{0}, begin, int64_t{0}, end}) pads->add_ints(v);
  }
}

onnx::NodeProto ReshapeNode(const std::string& in, std::string_view shape, const std::string& out) {
  onnx::NodeProto r;
  r.set_op_type("Reshape");
  r.set_name(out + "__reshape");
  r.add_input(in);
  r.add_input(std::string(shape));
  r.add_output(out);
  return r;
}

// Whether `reader` may run on the 4-D form [N, C, 1, L] of `tensor` in place of [N, C, L]:
// elementwise, batch norm, or a quantisation whose axis (default 1, the channels) is not L.
bool RunsOn4d(const onnx::NodeProto& reader, const std::string& tensor) {
  static const std::set<std::string_view> kPerElementOrChannel = {"Relu",
                                                                  "Clip",
                                                                  "LeakyRelu",
                                                                  "Sigmoid",
                                                                  "Tanh",
                                                                  "HardSwish",
                                                                  "HardSigmoid",
                                                                  "Elu",
                                                                  "Selu",
                                                                  "Gelu",
                                                                  "Mish",
                                                                  "Softplus",
                                                                  "Erf",
                                                                  "Abs",
                                                                  "Neg",
                                                                  "Exp",
                                                                  "Sqrt",
                                                                  "Identity",
                                                                  "BatchNormalization",
                                                                  "QuantizeLinear",
                                                                  "DequantizeLinear"};
  const bool default_domain = reader.domain().empty() || reader.domain() == "ai.onnx";
  if (!default_domain || !kPerElementOrChannel.count(reader.op_type()) || reader.input_size() < 1 ||
      reader.input(0) != tensor || reader.output_size() != 1)
    return false;
  for (int k = 1; k < reader.input_size(); ++k) {
    if (reader.input(k) == tensor) return false;
  }
  const onnx::AttributeProto* axis = FindAttr(reader, "axis");
  return FindAttr(reader, "block_size") == nullptr &&
         (axis == nullptr || axis->i() == 0 || axis->i() == 1);
}

// Whether every reader of `tensor` is a 1-D window op reading it as its data input, so the
// 4-D form serves them all and the 1-D one is never needed.
bool OnlyLiftedReaders(const onnx::GraphProto& g, const Index& index, const std::string& tensor) {
  if (index.graph_outputs.count(tensor)) return false;
  auto readers = index.readers.find(tensor);
  if (readers == index.readers.end()) return false;
  return std::all_of(readers->second.begin(), readers->second.end(), [&](int r) {
    const onnx::NodeProto& reader = g.node(r);
    return IsOneDimensional(g, reader, index) &&
           std::count(reader.input().begin(), reader.input().end(), tensor) == 1 &&
           reader.input(0) == tensor;
  });
}

bool SoleReader(const Index& index, const std::string& tensor, int node) {
  auto readers = index.readers.find(tensor);
  return !index.graph_outputs.count(tensor) && readers != index.readers.end() &&
         readers->second == std::vector<int>{node};
}

// Node i's weights [O, I, k] made [O, I, 1, k] where they are stored: a 3-D initializer only it
// reads, directly or through a DequantizeLinear only it reads (a quantized constant keeps its
// quantisation that way; a Reshape of it would fold into a plain constant). The
// DequantizeLinear's output is renamed, as the file may state its 3-D shape. False when the
// weights are shared or computed.
bool LiftWeightsInPlace(onnx::GraphProto* g, const Index& index, int i, int k,
                        const std::string& suffix) {
  onnx::NodeProto* node = g->mutable_node(i);
  if (node->input_size() <= k) return false;
  const std::string w = node->input(k);
  if (!SoleReader(index, w, i)) return false;
  onnx::NodeProto* dequantize = nullptr;
  std::string stored = w;
  if (const int dq = DequantizerOf(*g, index, w); dq >= 0) {
    dequantize = g->mutable_node(dq);
    stored = dequantize->input(0);
    // Its axis names O or I of [O, I, k] (a negative one counts from the end, so it is made
    // positive); blocked quantisation is left alone.
    onnx::AttributeProto* axis = MutableAttr(dequantize, "axis");
    if (!SoleReader(index, stored, dq) || FindAttr(*dequantize, "block_size") != nullptr ||
        (axis != nullptr && (axis->i() < -3 || axis->i() > 1 || axis->i() == -1)))
      return false;
    if (axis != nullptr && axis->i() < 0) axis->set_i(axis->i() + 3);
  }
  for (onnx::TensorProto& t : *g->mutable_initializer()) {
    if (t.name() != stored || t.dims_size() != 3) continue;
    const int64_t length = t.dims(2);
    t.set_dims(2, 1);
    t.add_dims(length);
    if (dequantize != nullptr) {
      dequantize->set_output(0, w + suffix);
      node->set_input(k, w + suffix);
    }
    return true;
  }
  return false;
}

// What the file states of a 1-D tensor, restated for its 4-D form `to` (a 1 before the
// length), so that an operator the importer leaves opaque still has its shapes.
void StateLifted(onnx::GraphProto* g, const std::map<std::string, onnx::ValueInfoProto>& stated,
                 const std::string& from, const std::string& to) {
  auto it = stated.find(from);
  if (it == stated.end() || !it->second.type().has_tensor_type() ||
      it->second.type().tensor_type().shape().dim_size() != 3)
    return;
  onnx::ValueInfoProto* lifted = g->add_value_info();
  *lifted = it->second;
  lifted->set_name(to);
  onnx::TensorShapeProto* shape = lifted->mutable_type()->mutable_tensor_type()->mutable_shape();
  *shape->add_dim() = shape->dim(2);
  shape->mutable_dim(2)->Clear();
  shape->mutable_dim(2)->set_dim_value(1);
}

void AddShapeConstant(onnx::GraphProto* g, std::string_view name, std::vector<int64_t> dims) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(std::string(name));
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(dims.size()));
  for (int64_t d : dims) t->add_int64_data(d);
}

}  // namespace

void LiftOneDimensionalWindows(onnx::ModelProto* model) {
  onnx::GraphProto* g = model->mutable_graph();
  const Index index = IndexOf(*g);
  // Per original node: nodes to put before it, and after it.
  std::map<int, std::vector<onnx::NodeProto>> before, after;
  std::map<std::string, std::string, std::less<>> held_4d;  // a 1-D tensor -> its 4-D form
  std::map<std::string, onnx::ValueInfoProto> stated;
  for (const onnx::ValueInfoProto& info : g->value_info()) stated[info.name()] = info;
  for (int i = 0; i < g->node_size(); ++i) {
    onnx::NodeProto* node = g->mutable_node(i);
    if (!IsOneDimensional(*g, *node, index)) continue;
    const std::string suffix = "__2d_" + std::to_string(i);
    const std::string x = node->input(0);
    if (auto held = held_4d.find(x); held != held_4d.end()) {
      node->set_input(0, held->second);
    } else {
      before[i].push_back(ReshapeNode(x, kTo2d, x + suffix));
      node->set_input(0, x + suffix);
    }
    if (const int k = WeightInput(*node); k >= 0 && !LiftWeightsInPlace(g, index, i, k, suffix)) {
      const std::string w = node->input(k);
      before[i].push_back(ReshapeNode(w, kTo2d, w + suffix));
      node->set_input(k, w + suffix);
    }
    LiftAttributes(node);
    // The chain that runs 4-D: the node, then single readers that do not care (each output
    // renamed, as the file's stated shapes for it are 1-D).
    int last = i;
    onnx::NodeProto* end = node;
    for (;;) {
      const std::string y = end->output(0);
      auto readers = index.readers.find(y);
      if (index.graph_outputs.count(y) || readers == index.readers.end() ||
          readers->second.size() != 1)
        break;
      const int next = readers->second.front();
      onnx::NodeProto* reader = g->mutable_node(next);
      if (next <= last || !RunsOn4d(*reader, y)) break;
      end->set_output(0, y + suffix);
      reader->set_input(0, y + suffix);
      StateLifted(g, stated, y, y + suffix);
      end = reader;
      last = next;
    }
    const std::string y = end->output(0);
    end->set_output(0, y + suffix);
    StateLifted(g, stated, y, y + suffix);
    held_4d[y] = y + suffix;
    if (!OnlyLiftedReaders(*g, index, y)) after[last].push_back(ReshapeNode(y + suffix, kTo1d, y));
  }
  if (before.empty()) return;
  AddShapeConstant(g, kTo2d, {0, 0, 1, -1});
  AddShapeConstant(g, kTo1d, {0, 0, -1});
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int i = 0; i < g->node_size(); ++i) {
    for (onnx::NodeProto& n : before[i]) *nodes.Add() = std::move(n);
    *nodes.Add() = g->node(i);
    for (onnx::NodeProto& n : after[i]) *nodes.Add() = std::move(n);
  }
  g->mutable_node()->Swap(&nodes);
}

}  // namespace memfold
