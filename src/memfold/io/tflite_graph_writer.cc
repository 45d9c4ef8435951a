#include "memfold/io/tflite_graph_writer.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <optional>
#include <span>

#include "memfold/io/tflite_ops.h"
#include "memfold/io/tflite_schema.h"

namespace memfold {
namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;
using tflite::Slot;
using Ints = std::vector<int64_t>;

constexpr char kIdentifier[] = "TFL3";
constexpr uint32_t kSchemaVersion = 3;

// One field of an options table: a scalar of `width` bytes (its bits), or an int32 vector.
struct OptionField {
  int slot;
  int width;  // 1, 4 or 8; 0 for `ints`
  uint64_t bits = 0;
  std::vector<int32_t> ints;
};

OptionField Scalar(int slot, int width, int64_t value) {
  return {slot, width, static_cast<uint64_t>(value), {}};
}

// A constant tensor the file needs beyond the graph's values (an operator's parameter input).
struct ExtraTensor {
  std::string name;
  DType dtype;
  Shape shape;
  Bytes data;
};

// What one operator becomes: its code, options and inputs (tensor indices).
struct EncodedOp {
  const TfliteOpMapping* mapping = nullptr;
  std::vector<OptionField> options;
  std::vector<int32_t> inputs;
};

// The file being assembled: extra tensors get indices after the graph's values.
struct Encoder {
  const Graph& graph;
  std::vector<ExtraTensor> extra;

  int32_t AddIntTensor(const std::string& name, Shape shape, const Ints& values) {
    ExtraTensor t{name, DType::kI32, std::move(shape), Bytes(values.size() * 4)};
    for (size_t k = 0; k < values.size(); ++k) {
      const auto v = static_cast<int32_t>(values[k]);
      std::memcpy(t.data.data() + 4 * k, &v, 4);
    }
    extra.push_back(std::move(t));
    return graph.num_values() + static_cast<int32_t>(extra.size()) - 1;
  }
};

Result<int8_t> TensorType(DType type) {
  switch (type) {
    case DType::kF32:
      return int8_t{0};
    case DType::kI32:
      return int8_t{2};
    case DType::kU8:
      return int8_t{3};
    case DType::kI64:
      return int8_t{4};
    case DType::kBool:
      return int8_t{6};
    case DType::kI16:
      return int8_t{7};
    case DType::kI8:
      return int8_t{9};
    case DType::kU32:
      return int8_t{15};
    case DType::kBit:
      break;
  }
  return Status::Error("has a packed 1-bit type, which TFLite has no type for");
}

Result<int64_t> ActivationCode(const Node& node) {
  const std::string& name = node.attrs.Has("activation") ? node.attrs.Str("activation") : "none";
  static const std::map<std::string, int64_t, std::less<>> kCodes = {
      {"none", 0}, {"relu", 1}, {"relu_n1_to_1", 2}, {"relu6", 3}};
  const auto it = kCodes.find(name);
  if (it == kCodes.end())
    return Status::Error("has activation '" + name + "', which TFLite cannot fuse");
  return it->second;
}

Result<int64_t> PaddingCode(const Node& node) {
  const std::string& padding = node.attrs.Str("padding");
  if (padding == "same") return int64_t{0};
  if (padding == "valid") return int64_t{1};
  return Status::Error("has padding '" + padding + "'; TFLite has only SAME and VALID");
}

// Padding (slot 0), stride width (1) and height (2): how the window ops' options begin.
Result<std::vector<OptionField>> WindowFields(const Node& node) {
  MF_ASSIGN_OR_RETURN(int64_t padding, PaddingCode(node));
  const Ints& stride = node.attrs.Ints("stride");
  return std::vector<OptionField>{Scalar(0, 1, padding), Scalar(1, 4, stride[1]),
                                  Scalar(2, 4, stride[0])};
}

Status EncodeConv(const Node& node, EncodedOp* op) {
  MF_ASSIGN_OR_RETURN(op->options, WindowFields(node));
  MF_ASSIGN_OR_RETURN(int64_t activation, ActivationCode(node));
  const Ints& dilation = node.attrs.Ints("dilation");
  op->options.push_back(Scalar(3, 1, activation));
  op->options.push_back(Scalar(4, 4, dilation[1]));
  op->options.push_back(Scalar(5, 4, dilation[0]));
  return Status::Ok();
}

Status EncodeDepthwise(const Graph& g, const Node& node, EncodedOp* op) {
  MF_ASSIGN_OR_RETURN(op->options, WindowFields(node));
  MF_ASSIGN_OR_RETURN(int64_t activation, ActivationCode(node));
  const Ints& dilation = node.attrs.Ints("dilation");
  const int64_t in_channels = g.value(node.inputs[0]).shape.back();
  const int64_t multiplier =
      in_channels > 0 ? g.value(node.outputs[0]).shape.back() / in_channels : 1;
  op->options.push_back(Scalar(3, 4, multiplier));
  op->options.push_back(Scalar(4, 1, activation));
  op->options.push_back(Scalar(5, 4, dilation[1]));
  op->options.push_back(Scalar(6, 4, dilation[0]));
  return Status::Ok();
}

Status EncodePool(const Node& node, EncodedOp* op) {
  MF_ASSIGN_OR_RETURN(op->options, WindowFields(node));
  MF_ASSIGN_OR_RETURN(int64_t activation, ActivationCode(node));
  const Ints& filter = node.attrs.Ints("filter");
  op->options.push_back(Scalar(3, 4, filter[1]));
  op->options.push_back(Scalar(4, 4, filter[0]));
  op->options.push_back(Scalar(5, 1, activation));
  return Status::Ok();
}

Status EncodeActivationOnly(const Node& node, EncodedOp* op) {
  MF_ASSIGN_OR_RETURN(int64_t activation, ActivationCode(node));
  op->options = {Scalar(0, 1, activation)};
  return Status::Ok();
}

Status EncodeFullyConnected(const Node& node, EncodedOp* op) {
  MF_ASSIGN_OR_RETURN(int64_t activation, ActivationCode(node));
  op->options = {Scalar(0, 1, activation), Scalar(2, 1, node.attrs.Int("keep_num_dims"))};
  return Status::Ok();
}

Status EncodeSoftmax(const Graph& g, const Node& node, EncodedOp* op) {
  const int64_t axis = node.attrs.Int("axis");
  const auto rank = static_cast<int64_t>(g.value(node.inputs[0]).shape.size());
  if (axis != -1 && axis != rank - 1)
    return Status::Error("is a softmax over axis " + std::to_string(axis) +
                         "; TFLite's is over the last axis");
  const auto beta = static_cast<float>(node.attrs.Float("beta"));
  op->options = {OptionField{0, 4, std::bit_cast<uint32_t>(beta), {}}};
  return Status::Ok();
}

Status EncodeConcat(const Graph& g, const Node& node, EncodedOp* op) {
  int64_t axis = node.attrs.Int("axis");
  if (axis < 0) axis += static_cast<int64_t>(g.value(node.outputs[0]).shape.size());
  op->options = {Scalar(0, 4, axis), Scalar(1, 1, 0)};
  return Status::Ok();
}

Status EncodeReshape(const Graph& g, const Node& node, EncodedOp* op) {
  OptionField shape{0, 0, 0, {}};
  for (int64_t d : g.value(node.outputs[0]).shape) shape.ints.push_back(static_cast<int32_t>(d));
  op->options = {std::move(shape)};
  return Status::Ok();
}

Status EncodeMean(Encoder& e, const Node& node, EncodedOp* op) {
  const Ints& axes = node.attrs.Ints("axes");
  op->inputs.push_back(
      e.AddIntTensor(node.name + "/axes", {static_cast<int64_t>(axes.size())}, axes));
  op->options = {Scalar(0, 1, node.attrs.Int("keepdims"))};
  return Status::Ok();
}

Status EncodeTranspose(Encoder& e, const Node& node, EncodedOp* op) {
  const Ints& perm = node.attrs.Ints("perm");
  op->inputs.push_back(
      e.AddIntTensor(node.name + "/perm", {static_cast<int64_t>(perm.size())}, perm));
  return Status::Ok();
}

Status EncodeReverse(Encoder& e, const Node& node, EncodedOp* op) {
  const Ints& axes = node.attrs.Ints("axes");
  op->inputs.push_back(
      e.AddIntTensor(node.name + "/axis", {static_cast<int64_t>(axes.size())}, axes));
  return Status::Ok();
}

// PAD fills with the output's zero point (0 for float); any other fill needs PADV2 and a
// constant scalar value of the output's type.
Status EncodePad(Encoder& e, const Node& node, EncodedOp* op) {
  const Ints& pads = node.attrs.Ints("paddings");
  op->inputs.push_back(
      e.AddIntTensor(node.name + "/paddings", {static_cast<int64_t>(pads.size() / 2), 2}, pads));
  const Value& out = e.graph.value(node.outputs[0]);
  const double fill = node.attrs.Float("value");
  const double implied = out.quant && !out.quant->zero_point.empty()
                             ? static_cast<double>(out.quant->zero_point[0])
                             : 0.0;
  if (fill == implied) return Status::Ok();
  ExtraTensor value{node.name + "/value", out.dtype, {}, {}};
  if (out.dtype == DType::kF32) {
    const auto f = static_cast<float>(fill);
    value.data.resize(4);
    std::memcpy(value.data.data(), &f, 4);
  } else if (out.dtype == DType::kI8) {
    value.data = {static_cast<std::byte>(static_cast<int8_t>(fill))};
  } else {
    return Status::Error("pads with " + std::to_string(fill) +
                         "; TFLite's PADV2 value is written for float32 and int8 only");
  }
  e.extra.push_back(std::move(value));
  op->inputs.push_back(e.graph.num_values() + static_cast<int32_t>(e.extra.size()) - 1);
  op->mapping = FindTfliteOp(60);  // PADV2
  return Status::Ok();
}

Status EncodeSvdf(const Node& node, EncodedOp* op) {
  MF_ASSIGN_OR_RETURN(int64_t activation, ActivationCode(node));
  op->options = {Scalar(0, 4, node.attrs.Int("rank")), Scalar(1, 1, activation)};
  return Status::Ok();
}

// UnidirectionalSequenceLSTMOptions {fused_activation_function (0): TANH = 4, cell_clip (1),
// proj_clip (2), time_major (3)}.
Status EncodeLstm(const Node& node, EncodedOp* op) {
  if (node.attrs.Str("cell_activation") != "tanh")
    return Status::Error("has a sigmoid cell activation, which TFLite's LSTM options cannot say");
  const auto clip = static_cast<float>(node.attrs.Float("cell_clip"));
  op->options = {Scalar(0, 1, 4), OptionField{1, 4, std::bit_cast<uint32_t>(clip), {}},
                 Scalar(3, 1, node.attrs.Int("time_major"))};
  return Status::Ok();
}

Status EncodeLeakyRelu(const Node& node, EncodedOp* op) {
  const auto alpha = static_cast<float>(node.attrs.Float("alpha"));
  op->options = {OptionField{0, 4, std::bit_cast<uint32_t>(alpha), {}}};
  return Status::Ok();
}

Status EncodeResizeNearest(Encoder& e, const Node& node, EncodedOp* op) {
  const Ints& size = node.attrs.Ints("size");
  op->inputs.push_back(e.AddIntTensor(node.name + "/size", {2}, size));
  op->options = {Scalar(0, 1, node.attrs.Int("align_corners")),
                 Scalar(1, 1, node.attrs.Int("half_pixel_centers"))};
  return Status::Ok();
}

// RESIZE_BILINEAR: the size tensor; the flags after ResizeBilinearOptions' deprecated fields.
Status EncodeResizeBilinear(Encoder& e, const Node& node, EncodedOp* op) {
  const Ints& size = node.attrs.Ints("size");
  op->inputs.push_back(
      e.AddIntTensor(node.name + "/size", {static_cast<int64_t>(size.size())}, size));
  op->options = {Scalar(2, 1, node.attrs.Int("align_corners")),
                 Scalar(3, 1, node.attrs.Int("half_pixel_centers"))};
  return Status::Ok();
}

// TRANSPOSE_CONV: (output_shape, weights, input[, bias]) with TransposeConvOptions {padding,
// stride_w, stride_h, fused_activation_function}.
Status EncodeTransposeConv(Encoder& e, const Node& node, EncodedOp* op) {
  MF_ASSIGN_OR_RETURN(op->options, WindowFields(node));
  MF_ASSIGN_OR_RETURN(int64_t activation, ActivationCode(node));
  op->options.push_back(Scalar(3, 1, activation));
  const Ints& shape = node.attrs.Ints("output_shape");
  std::vector<int32_t> inputs = {
      e.AddIntTensor(node.name + "/output_shape", {static_cast<int64_t>(shape.size())}, shape),
      op->inputs[1], op->inputs[0]};
  if (op->inputs.size() > 2) inputs.push_back(op->inputs[2]);
  op->inputs = std::move(inputs);
  return Status::Ok();
}

// MIRROR_PAD: the paddings tensor [rank, 2] and the mode.
Status EncodeMirrorPad(Encoder& e, const Node& node, EncodedOp* op) {
  const Ints& pads = node.attrs.Ints("paddings");
  op->inputs.push_back(
      e.AddIntTensor(node.name + "/paddings", {static_cast<int64_t>(pads.size() / 2), 2}, pads));
  op->options = {Scalar(0, 1, node.attrs.Str("mode") == "reflect" ? 0 : 1)};
  return Status::Ok();
}

// BATCH_TO_SPACE_ND / SPACE_TO_BATCH_ND: the block shape [spatial] and the crops or paddings
// [spatial, 2]; their options tables are empty.
Status EncodeBlocks(Encoder& e, const Node& node, EncodedOp* op, const char* amounts) {
  const Ints& block = node.attrs.Ints("block_shape");
  const Ints& pairs = node.attrs.Ints(amounts);
  op->inputs.push_back(
      e.AddIntTensor(node.name + "/block_shape", {static_cast<int64_t>(block.size())}, block));
  op->inputs.push_back(e.AddIntTensor(node.name + "/" + amounts,
                                      {static_cast<int64_t>(pairs.size() / 2), 2}, pairs));
  return Status::Ok();
}

Status EncodeSlice(Encoder& e, const Node& node, EncodedOp* op) {
  const Ints& begin = node.attrs.Ints("begin");
  const Ints& size = node.attrs.Ints("size");
  op->inputs.push_back(
      e.AddIntTensor(node.name + "/begin", {static_cast<int64_t>(begin.size())}, begin));
  op->inputs.push_back(
      e.AddIntTensor(node.name + "/size", {static_cast<int64_t>(size.size())}, size));
  return Status::Ok();
}

// Equal parts are SPLIT (axis first); others SPLIT_V (input, size_splits, axis).
Status EncodeSplit(Encoder& e, const Node& node, EncodedOp* op) {
  const Ints& sizes = node.attrs.Ints("sizes");
  const auto count = static_cast<int64_t>(sizes.size());
  const ValueId axis = e.AddIntTensor(node.name + "/axis", {1}, {node.attrs.Int("axis")});
  op->options = {Scalar(0, 4, count)};
  if (std::all_of(sizes.begin(), sizes.end(), [&](int64_t s) { return s == sizes[0]; })) {
    op->inputs.insert(op->inputs.begin(), axis);
    return Status::Ok();
  }
  op->inputs.push_back(e.AddIntTensor(node.name + "/size_splits", {count}, sizes));
  op->inputs.push_back(axis);
  op->mapping = FindTfliteOp(102);  // SPLIT_V
  return Status::Ok();
}

// ARG_MAX or ARG_MIN: the axis tensor and the index type (TensorType int32 2, int64 4).
Status EncodeArgMinMax(Encoder& e, const Node& node, EncodedOp* op) {
  op->inputs.push_back(e.AddIntTensor(node.name + "/axis", {1}, {node.attrs.Int("axis")}));
  const int64_t index_type = node.attrs.Str("output_dtype") == "i64" ? 4 : 2;
  op->options = {Scalar(0, 1, index_type)};
  if (node.attrs.Int("max") == 0) op->mapping = FindTfliteOp(79);  // ARG_MIN
  return Status::Ok();
}

// FILL: (dims, value).
Status EncodeFill(Encoder& e, const Node& node, EncodedOp* op) {
  const Ints& shape = node.attrs.Ints("shape");
  op->inputs.insert(
      op->inputs.begin(),
      e.AddIntTensor(node.name + "/dims", {static_cast<int64_t>(shape.size())}, shape));
  return Status::Ok();
}

// Options and parameter inputs per registry op; ops with neither need no entry.
Status EncodeOptions(Encoder& e, const Node& node, EncodedOp* op) {
  const std::string& name = node.op;
  if (name == "conv2d" || name == "depthwise_conv2d") {
    const Ints& pads = node.attrs.Ints("pads");
    for (int64_t p : pads) {
      if (p != 0) return Status::Error("has explicit pads; TFLite has only SAME and VALID padding");
    }
    return name == "conv2d" ? EncodeConv(node, op) : EncodeDepthwise(e.graph, node, op);
  }
  if (name == "max_pool2d" || name == "avg_pool2d") return EncodePool(node, op);
  if (name == "add" || name == "sub" || name == "mul" || name == "div" ||
      name == "l2_normalization")
    return EncodeActivationOnly(node, op);
  if (name == "leaky_relu") return EncodeLeakyRelu(node, op);
  if (name == "slice") return EncodeSlice(e, node, op);
  if (name == "split") return EncodeSplit(e, node, op);
  if (name == "pack") {
    op->options = {Scalar(0, 4, static_cast<int64_t>(node.inputs.size())),
                   Scalar(1, 4, node.attrs.Int("axis"))};
    return Status::Ok();
  }
  if (name == "unpack") {
    op->options = {Scalar(0, 4, static_cast<int64_t>(node.outputs.size())),
                   Scalar(1, 4, node.attrs.Int("axis"))};
    return Status::Ok();
  }
  if (name == "resize_nearest_neighbor") return EncodeResizeNearest(e, node, op);
  if (name == "resize_bilinear") return EncodeResizeBilinear(e, node, op);
  if (name == "transpose_conv") return EncodeTransposeConv(e, node, op);
  if (name == "mirror_pad") return EncodeMirrorPad(e, node, op);
  if (name == "tflite_batch_matmul") {
    op->options = {Scalar(0, 1, node.attrs.Int("adj_x")), Scalar(1, 1, node.attrs.Int("adj_y"))};
    return Status::Ok();
  }
  if (name == "cumsum") {
    op->inputs.push_back(e.AddIntTensor(node.name + "/axis", {1}, {node.attrs.Int("axis")}));
    op->options = {Scalar(0, 1, node.attrs.Int("exclusive")),
                   Scalar(1, 1, node.attrs.Int("reverse"))};
    return Status::Ok();
  }
  if (name == "gather_axis") {
    op->options = {Scalar(0, 4, node.attrs.Int("axis")),
                   Scalar(1, 4, node.attrs.Int("batch_dims"))};
    return Status::Ok();
  }
  if (name == "batch_to_space_nd") return EncodeBlocks(e, node, op, "crops");
  if (name == "space_to_batch_nd") return EncodeBlocks(e, node, op, "paddings");
  if (name == "depth_to_space" || name == "space_to_depth") {
    op->options = {Scalar(0, 4, node.attrs.Int("block_size"))};
    return Status::Ok();
  }
  if (name == "fully_connected") return EncodeFullyConnected(node, op);
  if (name == "softmax") return EncodeSoftmax(e.graph, node, op);
  if (name == "concat") return EncodeConcat(e.graph, node, op);
  if (name == "reshape") return EncodeReshape(e.graph, node, op);
  if (name == "mean" || name == "sum" || name == "reduce_max" || name == "reduce_min")
    return EncodeMean(e, node, op);
  if (name == "arg_min_max") return EncodeArgMinMax(e, node, op);
  if (name == "fill") return EncodeFill(e, node, op);
  if (name == "transpose") return EncodeTranspose(e, node, op);
  if (name == "reverse") return EncodeReverse(e, node, op);
  if (name == "pad") return EncodePad(e, node, op);
  if (name == "svdf") return EncodeSvdf(node, op);
  if (name == "unidirectional_sequence_lstm") return EncodeLstm(node, op);
  return Status::Ok();
}

Result<EncodedOp> EncodeNode(Encoder& e, const Node& node) {
  EncodedOp op;
  op.mapping = FindTfliteOpFor(node.op);
  if (op.mapping == nullptr)
    return Status::Error("op '" + node.op + "' has no TFLite operator memfold can write");
  op.inputs.assign(node.inputs.begin(), node.inputs.end());
  MF_RETURN_IF_ERROR(EncodeOptions(e, node, &op));
  return op;
}

// ---- flatbuffer assembly -------------------------------------------------------------------

Offset<flatbuffers::Vector<int32_t>> IntVector(FlatBufferBuilder& fbb,
                                               const std::vector<int32_t>& v) {
  return fbb.CreateVector(v);
}

std::vector<int32_t> Int32s(std::span<const int64_t> values) {
  return std::vector<int32_t>(values.begin(), values.end());
}

// Buffer {data: [ubyte] (16-byte aligned)}; an empty buffer has no data field.
Offset<tflite::Buffer> PutBuffer(FlatBufferBuilder& fbb, const Bytes* data) {
  Offset<flatbuffers::Vector<uint8_t>> bytes;
  if (data != nullptr && !data->empty()) {
    fbb.ForceVectorAlignment(data->size(), 1, 16);
    bytes = fbb.CreateVector(reinterpret_cast<const uint8_t*>(data->data()), data->size());
  }
  const auto start = fbb.StartTable();
  if (!bytes.IsNull()) fbb.AddOffset(Slot(0), bytes);
  return Offset<tflite::Buffer>(fbb.EndTable(start));
}

// Quantization {scale: [float] (2), zero_point: [long] (3), quantized_dimension: int (6)}.
Offset<void> PutQuantization(FlatBufferBuilder& fbb, const Quantization& q) {
  const auto scale = fbb.CreateVector(q.scale);
  const auto zero_point = fbb.CreateVector(q.zero_point);
  const auto start = fbb.StartTable();
  fbb.AddOffset(Slot(2), scale);
  fbb.AddOffset(Slot(3), zero_point);
  fbb.AddElement<int32_t>(Slot(6), q.axis, 0);
  return Offset<void>(fbb.EndTable(start));
}

// Tensor {shape (0), type (1), buffer (2), name (3), quantization (4), is_variable (5)}.
Result<Offset<tflite::Tensor>> PutTensor(FlatBufferBuilder& fbb, const std::string& name,
                                         DType dtype, const Shape& shape,
                                         const std::optional<Quantization>& quant, uint32_t buffer,
                                         bool variable) {
  Result<int8_t> type = TensorType(dtype);
  if (!type.ok()) return Status::Error("tensor '" + name + "' " + type.status().message());
  const auto shape_vector = IntVector(fbb, Int32s(shape));
  const auto name_string = fbb.CreateString(name);
  const Offset<void> quantization = quant ? PutQuantization(fbb, *quant) : Offset<void>();
  const auto start = fbb.StartTable();
  fbb.AddOffset(Slot(0), shape_vector);
  fbb.AddElement<int8_t>(Slot(1), *type, 0);
  fbb.AddElement<uint32_t>(Slot(2), buffer, 0);
  fbb.AddOffset(Slot(3), name_string);
  if (!quantization.IsNull()) fbb.AddOffset(Slot(4), quantization);
  if (variable) fbb.AddElement<uint8_t>(Slot(5), 1, 0);
  return Offset<tflite::Tensor>(fbb.EndTable(start));
}

Offset<void> PutOptions(FlatBufferBuilder& fbb, const std::vector<OptionField>& fields) {
  std::vector<Offset<flatbuffers::Vector<int32_t>>> vectors;
  for (const OptionField& f : fields) {
    vectors.push_back(f.width == 0 ? IntVector(fbb, f.ints)
                                   : Offset<flatbuffers::Vector<int32_t>>());
  }
  const auto start = fbb.StartTable();
  for (size_t k = 0; k < fields.size(); ++k) {
    const OptionField& f = fields[k];
    const auto slot = Slot(f.slot);
    switch (f.width) {
      case 0:
        fbb.AddOffset(slot, vectors[k]);
        break;
      case 1:
        fbb.AddElement<uint8_t>(slot, static_cast<uint8_t>(f.bits), 0);
        break;
      case 4:
        fbb.AddElement<uint32_t>(slot, static_cast<uint32_t>(f.bits), 0);
        break;
      default:
        fbb.AddElement<uint64_t>(slot, f.bits, 0);
        break;
    }
  }
  return Offset<void>(fbb.EndTable(start));
}

// Operator {opcode_index (0), inputs (1), outputs (2), builtin_options_type (3), builtin_options
// (4)}.
Offset<tflite::Operator> PutOperator(FlatBufferBuilder& fbb, const EncodedOp& op, uint32_t opcode,
                                     const std::vector<ValueId>& outputs) {
  const auto inputs = IntVector(fbb, op.inputs);
  const auto output_vector = IntVector(fbb, std::vector<int32_t>(outputs.begin(), outputs.end()));
  const bool has_options = op.mapping->options_type != 0;
  const Offset<void> options = has_options ? PutOptions(fbb, op.options) : Offset<void>();
  const auto start = fbb.StartTable();
  fbb.AddElement<uint32_t>(Slot(0), opcode, 0);
  fbb.AddOffset(Slot(1), inputs);
  fbb.AddOffset(Slot(2), output_vector);
  if (has_options) {
    fbb.AddElement<uint8_t>(Slot(3), op.mapping->options_type, 0);
    fbb.AddOffset(Slot(4), options);
  }
  return Offset<tflite::Operator>(fbb.EndTable(start));
}

// OperatorCode {deprecated_builtin_code (0), version (2), builtin_code (3)}.
Offset<tflite::OperatorCode> PutOperatorCode(FlatBufferBuilder& fbb, int32_t code) {
  const auto start = fbb.StartTable();
  fbb.AddElement<int8_t>(Slot(0), static_cast<int8_t>(code < 127 ? code : 127), 0);
  fbb.AddElement<int32_t>(Slot(2), 1, 0);
  fbb.AddElement<int32_t>(Slot(3), code, 0);
  return Offset<tflite::OperatorCode>(fbb.EndTable(start));
}

}  // namespace

namespace {

// TFLite has only SAME and VALID padding: a convolution or max pool with explicit pads (ONNX's
// symmetric pads before a strided window) is written as the converter writes it, a PAD (or
// PADV2) before the window op, which then pads VALID. The pad fills with what the window op's
// padding stands for: zero (the input's zero point in int8) before a convolution, the lowest
// value before a max pool, which never picks it. An explicitly padded average pool (it divides
// by the taps it reads) stays an error. The new values follow the graph's own.
Graph WithPadOperators(const Graph& graph) {
  Graph out;
  out.name = graph.name;
  for (const Value& v : graph.values()) {
    Value copy = v;
    copy.producer = kNoNode;
    out.AddValue(std::move(copy));
  }
  for (NodeId n : graph.schedule) {
    Node node = graph.node(n);
    const bool window =
        node.op == "conv2d" || node.op == "depthwise_conv2d" || node.op == "max_pool2d";
    const AttrValue* padding = node.attrs.Find("padding");
    const AttrValue* pads_attr = node.attrs.Find("pads");
    if (window && padding != nullptr && std::get<std::string>(*padding) == "explicit" &&
        pads_attr != nullptr) {
      const Ints pads = std::get<Ints>(*pads_attr);  // top, bottom, left, right
      const Value& in = out.value(node.inputs[0]);
      Value padded;
      padded.name = node.name + "/padded";
      padded.dtype = in.dtype;
      padded.quant = in.quant;
      padded.shape = {in.shape[0], in.shape[1] + pads[0] + pads[1], in.shape[2] + pads[2] + pads[3],
                      in.shape[3]};
      const bool max = node.op == "max_pool2d";
      const bool int8 = in.dtype == DType::kI8;
      const double zero = int8 && in.quant && !in.quant->zero_point.empty()
                              ? static_cast<double>(in.quant->zero_point[0])
                              : 0.0;
      const double fill = max ? (int8 ? -128.0 : -3.4028234663852886e38) : zero;
      Node pad;
      pad.op = "pad";
      pad.name = node.name + "/pad";
      pad.inputs = {node.inputs[0]};
      pad.outputs = {out.AddValue(std::move(padded))};
      pad.attrs = {{"paddings", Ints{0, 0, pads[0], pads[1], pads[2], pads[3], 0, 0}},
                   {"value", fill}};
      node.inputs[0] = pad.outputs[0];
      node.attrs.Set("padding", std::string("valid"));
      node.attrs.Set("pads", Ints{0, 0, 0, 0});
      out.AddNode(std::move(pad));
    }
    out.AddNode(std::move(node));
  }
  out.inputs = graph.inputs;
  out.outputs = graph.outputs;
  return out;
}

}  // namespace

Result<Bytes> GraphToTflite(const Graph& original) {
  const Graph graph = WithPadOperators(original);
  Encoder encoder{graph, {}};
  std::vector<EncodedOp> ops;
  for (NodeId n : graph.schedule) {
    const Node& node = graph.node(n);
    Result<EncodedOp> op = EncodeNode(encoder, node);
    if (!op.ok())
      return Status::Error(graph.name + ": node '" + node.name + "' " + op.status().message());
    ops.push_back(std::move(op).value());
  }
  FlatBufferBuilder fbb;
  fbb.ForceDefaults(true);  // an option equal to the schema default is still written
  std::vector<Offset<tflite::Buffer>> buffers = {PutBuffer(fbb, nullptr)};
  std::vector<Offset<tflite::Tensor>> tensors;
  for (const Value& v : graph.values()) {
    uint32_t buffer = 0;
    if (v.is_constant()) {
      buffer = static_cast<uint32_t>(buffers.size());
      buffers.push_back(PutBuffer(fbb, v.data.get()));
    }
    MF_ASSIGN_OR_RETURN(auto tensor, PutTensor(fbb, v.name, v.dtype, v.shape, v.quant, buffer,
                                               v.role == Role::kState && !v.is_constant()));
    tensors.push_back(tensor);
  }
  for (const ExtraTensor& t : encoder.extra) {
    const auto buffer = static_cast<uint32_t>(buffers.size());
    buffers.push_back(PutBuffer(fbb, &t.data));
    MF_ASSIGN_OR_RETURN(auto tensor,
                        PutTensor(fbb, t.name, t.dtype, t.shape, std::nullopt, buffer, false));
    tensors.push_back(tensor);
  }
  std::map<int32_t, uint32_t> opcode_of;  // TFLite code -> index in operator_codes
  std::vector<Offset<tflite::OperatorCode>> codes;
  std::vector<Offset<tflite::Operator>> operators;
  for (size_t k = 0; k < ops.size(); ++k) {
    const int32_t code = ops[k].mapping->code;
    if (!opcode_of.contains(code)) {
      opcode_of[code] = static_cast<uint32_t>(codes.size());
      codes.push_back(PutOperatorCode(fbb, code));
    }
    operators.push_back(
        PutOperator(fbb, ops[k], opcode_of[code], graph.node(graph.schedule[k]).outputs));
  }
  const auto tensor_vector = fbb.CreateVector(tensors);
  const auto inputs =
      IntVector(fbb, std::vector<int32_t>(graph.inputs.begin(), graph.inputs.end()));
  const auto outputs =
      IntVector(fbb, std::vector<int32_t>(graph.outputs.begin(), graph.outputs.end()));
  const auto operator_vector = fbb.CreateVector(operators);
  const auto subgraph_name = fbb.CreateString(graph.name);
  auto start = fbb.StartTable();  // SubGraph {tensors, inputs, outputs, operators, name}
  fbb.AddOffset(Slot(0), tensor_vector);
  fbb.AddOffset(Slot(1), inputs);
  fbb.AddOffset(Slot(2), outputs);
  fbb.AddOffset(Slot(3), operator_vector);
  fbb.AddOffset(Slot(4), subgraph_name);
  const Offset<tflite::SubGraph> subgraph(fbb.EndTable(start));
  const auto code_vector = fbb.CreateVector(codes);
  const auto subgraphs = fbb.CreateVector(std::vector<Offset<tflite::SubGraph>>{subgraph});
  const auto description = fbb.CreateString("written by memfold");
  const auto buffer_vector = fbb.CreateVector(buffers);
  start = fbb.StartTable();  // Model {version, operator_codes, subgraphs, description, buffers}
  fbb.AddElement<uint32_t>(Slot(0), kSchemaVersion, 0);
  fbb.AddOffset(Slot(1), code_vector);
  fbb.AddOffset(Slot(2), subgraphs);
  fbb.AddOffset(Slot(3), description);
  fbb.AddOffset(Slot(4), buffer_vector);
  fbb.Finish(Offset<tflite::Model>(fbb.EndTable(start)), kIdentifier);
  const auto* begin = reinterpret_cast<const std::byte*>(fbb.GetBufferPointer());
  return Bytes(begin, begin + fbb.GetSize());
}

}  // namespace memfold
