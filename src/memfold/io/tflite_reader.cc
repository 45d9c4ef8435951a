#include "memfold/io/tflite_reader.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "memfold/io/file.h"
#include "memfold/io/text.h"
#include "memfold/io/tflite_ops.h"
#include "memfold/io/tflite_schema.h"
#include "memfold/ops/registry.h"

namespace memfold {
namespace {

constexpr char kIdentifier[] = "TFL3";
constexpr uint32_t kSchemaVersion = 3;
constexpr int64_t kMaxTensorBytes = (int64_t{1} << 31) - 1;  // TFLM sizes are 32-bit
constexpr char kOfflinePlanName[] = "OfflineMemoryAllocation";

// The reader's state: the verified model and where messages point.
struct Reader {
  const tflite::Model* model;
  const uint8_t* base;
  size_t size;
  std::string label;

  Status Error(const std::string& what) const { return Status::Error(label + ": " + what); }
};

std::string Str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

// A name from the file with each control character replaced by U+FFFD (the Unicode
// replacement character), so that messages and tables that quote it stay one line each
// (found by the fuzzer: a tensor name holding a newline).
std::string PrintableStr(const flatbuffers::String* s) { return PrintableText(Str(s)); }

Result<DType> ConvertType(int8_t type) {
  switch (type) {
    case 0:
      return DType::kF32;
    case 2:
      return DType::kI32;
    case 3:
      return DType::kU8;
    case 4:
      return DType::kI64;
    case 6:
      return DType::kBool;
    case 7:
      return DType::kI16;
    case 9:
      return DType::kI8;
    case 15:
      return DType::kU32;  // TFLM's signal-processing front end
    default:
      return Status::Error(
          "tensor type " + std::to_string(type) +
          " is not supported (float32, int8, uint8, int16, int32, uint32, int64, bool are)");
  }
}

// Constant contents of a buffer, or an empty span when the buffer holds none.
Result<std::pair<const uint8_t*, size_t>> BufferBytes(const Reader& r, uint32_t index) {
  const auto* buffers = r.model->buffers();
  if (buffers == nullptr || index >= buffers->size()) {
    if (index == 0) return std::pair<const uint8_t*, size_t>{nullptr, 0};
    return Status::Error("names buffer " + std::to_string(index) + ", past the buffer table (" +
                         std::to_string(buffers == nullptr ? 0 : buffers->size()) + " buffers)");
  }
  const tflite::Buffer* buffer = buffers->Get(index);
  if (buffer->data() != nullptr && buffer->data()->size() > 0) {
    return std::pair<const uint8_t*, size_t>{buffer->data()->data(), buffer->data()->size()};
  }
  if (buffer->offset() > 1) {  // data stored after the flatbuffer (models over 2 GB)
    if (buffer->offset() > r.size || buffer->size() > r.size - buffer->offset()) {
      return Status::Error("names buffer " + std::to_string(index) +
                           ", whose data lies past the end of the file");
    }
    return std::pair<const uint8_t*, size_t>{r.base + buffer->offset(),
                                             static_cast<size_t>(buffer->size())};
  }
  return std::pair<const uint8_t*, size_t>{nullptr, 0};
}

Result<std::optional<Quantization>> ConvertQuant(const tflite::Quantization* q,
                                                 const Shape& shape) {
  if (q == nullptr || q->scale() == nullptr || q->scale()->size() == 0)
    return std::optional<Quantization>();
  Quantization quant;
  quant.scale.assign(q->scale()->begin(), q->scale()->end());
  if (const auto* zero_points = q->zero_point(); zero_points != nullptr) {
    // Copied bytewise: the verifier aligns vectors to 4 bytes only, and these are int64 (found
    // by the fuzzer with UBSan: a misaligned 8-byte load).
    quant.zero_point.resize(zero_points->size());
    if (zero_points->size() > 0)
      std::memcpy(quant.zero_point.data(), zero_points->Data(),
                  zero_points->size() * sizeof(int64_t));
  }
  if (quant.zero_point.empty()) quant.zero_point.assign(quant.scale.size(), 0);
  quant.axis = q->quantized_dimension();
  // Per-channel scales may be negative, as TFLM accepts them (a real MCUNet model has tiny
  // negative filter scales): their multipliers are negative or round to zero, and the int8
  // kernels then run the reference loops (int8_simd.h HasSimdRecords). A per-tensor scale must
  // be positive or zero.
  for (float scale : quant.scale) {
    if (!std::isfinite(scale) || (scale < 0.0f && quant.scale.size() == 1)) {
      char text[32];
      std::snprintf(text, sizeof(text), "%g", static_cast<double>(scale));
      return Status::Error("has quantisation scale " + std::string(text) +
                           (quant.scale.size() == 1
                                ? "; a per-tensor scale must be finite and not negative"
                                : "; scales must be finite"));
    }
  }
  for (int64_t zero_point : quant.zero_point) {
    if (zero_point < -32768 || zero_point > 65535)
      return Status::Error("has zero point " + std::to_string(zero_point) +
                           ", outside any integer tensor's range");
  }
  if (quant.zero_point.size() != quant.scale.size())
    return Status::Error("has " + std::to_string(quant.scale.size()) + " scales but " +
                         std::to_string(quant.zero_point.size()) + " zero points");
  // Some converters store the filter's channel axis on 1-D bias tensors; TFLM ignores it there.
  if (quant.per_channel() && shape.size() == 1) quant.axis = 0;
  if (quant.per_channel() &&
      (quant.axis < 0 || static_cast<size_t>(quant.axis) >= shape.size() ||
       shape[static_cast<size_t>(quant.axis)] != static_cast<int64_t>(quant.scale.size()))) {
    return Status::Error("per-channel quantisation does not match dimension " +
                         std::to_string(quant.axis));
  }
  return std::optional<Quantization>(std::move(quant));
}

// A dimension that shape_signature marks dynamic (-1) takes the size `shape` gives it (the
// converter's default, usually batch 1), as TFLM does. A signature that disagrees with the
// shape elsewhere, or a dynamic tensor without a concrete shape, is an error.
Status CheckShapeSignature(const flatbuffers::Vector<int32_t>* signature, const Shape& shape) {
  if (signature == nullptr || signature->size() == 0) return Status::Ok();
  if (signature->size() != shape.size()) {
    return Status::Error("has a shape_signature of rank " + std::to_string(signature->size()) +
                         " but a shape of rank " + std::to_string(shape.size()) +
                         "; memfold needs every tensor's concrete shape: re-convert the model with "
                         "fixed input shapes");
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    const int32_t dim = (*signature)[static_cast<flatbuffers::uoffset_t>(d)];
    if (dim == -1 || dim == shape[d]) continue;
    return Status::Error("has shape_signature dimension " + std::to_string(d) + " = " +
                         std::to_string(dim) + " but shape " + ShapeString(shape) +
                         "; the file contradicts itself: re-convert the model");
  }
  return Status::Ok();
}

Result<Value> ConvertTensor(const Reader& r, const tflite::Tensor& t, int32_t index) {
  const std::string where = "tensor " + std::to_string(index) + " '" + PrintableStr(t.name()) + "'";
  Value v;
  v.name = PrintableStr(t.name());
  Result<DType> dtype = ConvertType(t.type());
  if (!dtype.ok()) return r.Error(where + ": " + dtype.status().message());
  v.dtype = *dtype;
  if (t.has_sparsity()) return r.Error(where + " is sparse; sparse tensors are not supported");
  int64_t elements = 1;
  if (t.shape() != nullptr) {
    for (int32_t dim : *t.shape()) {
      if (dim < 0)
        return r.Error(where + " has a dynamic dimension (" + std::to_string(dim) +
                       ") in its shape; re-convert the model with fixed input shapes");
      v.shape.push_back(dim);
      if (dim != 0 && elements > kMaxTensorBytes / dim)
        return r.Error(where + " is impossibly large");
      elements *= dim;
    }
  }
  Status signature = CheckShapeSignature(t.shape_signature(), v.shape);
  if (!signature.ok()) return r.Error(where + " " + signature.message());
  if (v.bytes() > kMaxTensorBytes)
    return r.Error(where + " is impossibly large (" + std::to_string(v.bytes()) + " bytes)");
  Result<std::optional<Quantization>> quant = ConvertQuant(t.quantization(), v.shape);
  if (!quant.ok()) return r.Error(where + " " + quant.status().message());
  v.quant = std::move(*quant);
  Result<std::pair<const uint8_t*, size_t>> buffer = BufferBytes(r, t.buffer());
  if (!buffer.ok())
    return r.Error(where + " " + buffer.status().message() + "; the file is corrupted");
  const auto data = *buffer;
  if (t.is_variable()) {
    // TFLM gives variable tensors memory of their own and resets them to zero (int8: the zero
    // point) when it allocates tensors, whatever data the file holds for them.
    v.role = Role::kState;
  } else if (data.first != nullptr) {
    if (static_cast<int64_t>(data.second) != v.bytes()) {
      return r.Error(where + " has " + std::to_string(data.second) +
                     " bytes of data but its shape needs " + std::to_string(v.bytes()));
    }
    v.data = std::make_shared<Bytes>(reinterpret_cast<const std::byte*>(data.first),
                                     reinterpret_cast<const std::byte*>(data.first) + data.second);
    v.role = Role::kWeight;
  }
  return v;
}

Result<std::vector<ValueId>> TensorList(const Reader& r, const flatbuffers::Vector<int32_t>* list,
                                        int32_t tensors, bool allow_absent,
                                        const std::string& where) {
  std::vector<ValueId> ids;
  if (list == nullptr) return ids;
  for (int32_t t : *list) {
    if (t == -1 && allow_absent) {
      ids.push_back(kNoValue);
    } else if (t < 0 || t >= tensors) {
      return r.Error(where + " names tensor " + std::to_string(t) + "; the subgraph has " +
                     std::to_string(tensors));
    } else {
      ids.push_back(t);
    }
  }
  return ids;
}

Result<Node> ConvertOperator(const Reader& r, const Graph& graph, const tflite::Operator& op,
                             int32_t index) {
  const auto* codes = r.model->operator_codes();
  const std::string where = "operator " + std::to_string(index);
  if (codes == nullptr || op.opcode_index() >= codes->size()) {
    return r.Error(where + " names operator code " + std::to_string(op.opcode_index()) +
                   ", past the code table");
  }
  const tflite::OperatorCode* code = codes->Get(op.opcode_index());
  const std::string label = TfliteOpLabel(code->code(), PrintableStr(code->custom_code()));
  Node node;
  node.name = where;
  MF_ASSIGN_OR_RETURN(node.inputs, TensorList(r, op.inputs(), graph.num_values(), true,
                                              where + " (" + label + ")"));
  MF_ASSIGN_OR_RETURN(node.outputs, TensorList(r, op.outputs(), graph.num_values(), false,
                                               where + " (" + label + ")"));
  if (node.outputs.empty()) return r.Error(where + " (" + label + ") has no outputs");
  node.name = graph.value(node.outputs[0]).name.empty() ? where : graph.value(node.outputs[0]).name;
  const TfliteOpMapping* mapping = FindTfliteOp(code->code());
  if (mapping == nullptr || FindOp(mapping->op) == nullptr) {
    node.op = "tflite:" + label;  // opaque: loads and plans, cannot run
    return node;
  }
  node.op = std::string(mapping->op);
  const tflite::Options* options = nullptr;
  if (mapping->options_type != 0 && op.has_builtin_options()) {
    if (op.builtin_options_type() != mapping->options_type) {
      return r.Error(where + " (" + label + ") carries options of type " +
                     std::to_string(op.builtin_options_type()) + ", expected " +
                     std::to_string(mapping->options_type));
    }
    options = op.builtin_options();
    flatbuffers::Verifier verifier(r.base, r.size);
    if (!options->Verify(verifier, mapping->option_widths)) {
      return r.Error(where + " (" + label + ") has corrupted options");
    }
  }
  Status converted = mapping->convert({options, graph}, &node);
  if (!converted.ok()) return r.Error(where + " (" + label + ") " + converted.message());
  const OpDef* def = OpOf(node);
  Status attrs = CheckAndFillAttrs(*def, &node);
  if (!attrs.ok()) return r.Error(where + " (" + label + "): " + attrs.message());
  return node;
}

// Hybrid models (float activations, int8 weights; TFLM refuses them) run here as float models:
// each such constant weight is dequantised once at load, real = scale[c] * (q - zero_point[c]).
// TFLite's own hybrid kernels quantise the activations on the fly instead, so results agree
// only within quantisation error.
void DequantizeHybridWeights(Graph* g) {
  for (NodeId n : g->schedule) {
    const Node& node = g->node(n);
    if (node.inputs.size() < 2 || node.inputs[0] == kNoValue || node.inputs[1] == kNoValue)
      continue;
    if (node.op != "conv2d" && node.op != "depthwise_conv2d" && node.op != "fully_connected")
      continue;
    Value& w = g->value(node.inputs[1]);
    if (g->value(node.inputs[0]).dtype != DType::kF32 || w.dtype != DType::kI8 ||
        !w.is_constant() || !w.quant)
      continue;
    const Quantization& q = *w.quant;
    int64_t inner = 1;
    for (size_t d = static_cast<size_t>(q.axis) + 1; d < w.shape.size(); ++d) inner *= w.shape[d];
    auto real = std::make_shared<Bytes>(static_cast<size_t>(w.elements()) * 4);
    for (int64_t k = 0; k < w.elements(); ++k) {
      const size_t c = q.per_channel()
                           ? static_cast<size_t>((k / inner) % w.shape[static_cast<size_t>(q.axis)])
                           : 0;
      const float value =
          q.scale[c] * static_cast<float>(static_cast<int8_t>((*w.data)[static_cast<size_t>(k)]) -
                                          q.zero_point[c]);
      std::memcpy(real->data() + 4 * k, &value, 4);
    }
    w.dtype = DType::kF32;
    w.data = std::move(real);
    w.quant.reset();
  }
}

// Tensors that operators read but nothing produces or fills (e.g. Ethos-U scratch tensors) are
// workspace: TFLM gives them arena memory from their first use.
void MarkScratchTensors(Graph* g) {
  for (NodeId n : g->schedule) {
    for (ValueId in : g->node(n).inputs) {
      if (in == kNoValue) continue;
      Value& v = g->value(in);
      if (v.producer == kNoNode && v.role == Role::kActivation) v.role = Role::kWorkspace;
    }
  }
}

std::optional<std::vector<int32_t>> OfflinePlan(const Reader& r) {
  const auto* metadata = r.model->metadata();
  if (metadata == nullptr) return std::nullopt;
  for (const tflite::Metadata* m : *metadata) {
    if (Str(m->name()) != kOfflinePlanName) continue;
    Result<std::pair<const uint8_t*, size_t>> bytes = BufferBytes(r, m->buffer());
    if (!bytes.ok() || bytes->first == nullptr || bytes->second % 4 != 0 || bytes->second < 12)
      return std::nullopt;
    std::vector<int32_t> words(bytes->second / 4);
    std::memcpy(words.data(), bytes->first, bytes->second);
    const auto n = static_cast<size_t>(words[2] < 0 ? 0 : words[2]);
    if (words[0] != 0 || words.size() < 3 + n) return std::nullopt;
    return std::vector<int32_t>(words.begin() + 3,
                                words.begin() + 3 + static_cast<std::ptrdiff_t>(n));
  }
  return std::nullopt;
}

}  // namespace

Result<TfliteModel> ParseTflite(Bytes file, const std::string& label) {
  const auto* base = reinterpret_cast<const uint8_t*>(file.data());
  if (file.size() < 8)
    return Status::Error(label + ": too short to be a TFLite model (" +
                         std::to_string(file.size()) + " bytes)");
  // TFLM reads files without the "TFL3" identifier too (it checks the schema version only):
  // such a file must verify as a Model and say version 3.
  const bool identified = flatbuffers::BufferHasIdentifier(base, kIdentifier);
  flatbuffers::Verifier verifier(base, file.size());
  if (!verifier.VerifyBuffer<tflite::Model>(identified ? kIdentifier : nullptr)) {
    return Status::Error(label + (identified ? ": the flatbuffer verifier rejects the file "
                                               "(truncated or corrupted)"
                                             : ": not a TFLite model (no TFL3 identifier, and "
                                               "not a flatbuffer of TFLite's schema)"));
  }
  const auto* model = flatbuffers::GetRoot<tflite::Model>(base);
  if (!identified && model->version() != kSchemaVersion) {
    return Status::Error(label + ": not a TFLite model (no TFL3 identifier, and schema version " +
                         std::to_string(model->version()) + ", not " +
                         std::to_string(kSchemaVersion) + ")");
  }
  Reader r{model, base, file.size(), label};
  const auto* subgraphs = r.model->subgraphs();
  if (subgraphs == nullptr || subgraphs->size() == 0) return r.Error("has no subgraph");
  TfliteModel result;
  result.subgraphs = static_cast<int32_t>(subgraphs->size());
  for (const tflite::SubGraph* sg : *subgraphs)
    result.total_tensors += sg->tensors() ? static_cast<int32_t>(sg->tensors()->size()) : 0;
  const tflite::SubGraph& sg = *subgraphs->Get(0);
  Graph& g = result.graph;
  g.name = label;
  const int32_t tensors = sg.tensors() ? static_cast<int32_t>(sg.tensors()->size()) : 0;
  for (int32_t t = 0; t < tensors; ++t) {
    MF_ASSIGN_OR_RETURN(
        Value v, ConvertTensor(r, *sg.tensors()->Get(static_cast<flatbuffers::uoffset_t>(t)), t));
    g.AddValue(std::move(v));
  }
  MF_ASSIGN_OR_RETURN(g.inputs,
                      TensorList(r, sg.inputs(), tensors, false, "the subgraph's input list"));
  MF_ASSIGN_OR_RETURN(g.outputs,
                      TensorList(r, sg.outputs(), tensors, false, "the subgraph's output list"));
  if (g.outputs.empty())
    return r.Error(
        "has no outputs, so there is nothing to plan or run; export the model with its outputs");
  for (ValueId v : g.inputs) {
    if (g.value(v).is_constant())
      return r.Error("input tensor " + std::to_string(v) + " is a constant");
    g.value(v).role = Role::kInput;
  }
  for (ValueId v : g.outputs) {
    if (g.value(v).role == Role::kActivation) g.value(v).role = Role::kOutput;
  }
  const int32_t operators = sg.operators() ? static_cast<int32_t>(sg.operators()->size()) : 0;
  for (int32_t i = 0; i < operators; ++i) {
    MF_ASSIGN_OR_RETURN(
        Node node,
        ConvertOperator(r, g, *sg.operators()->Get(static_cast<flatbuffers::uoffset_t>(i)), i));
    for (ValueId out : node.outputs) {
      if (g.value(out).producer != kNoNode || g.value(out).is_constant() ||
          g.value(out).role == Role::kInput) {
        return r.Error("operator " + std::to_string(i) + " writes tensor " + std::to_string(out) +
                       ", which is already a constant, an input or another operator's output");
      }
    }
    g.AddNode(std::move(node));
  }
  MarkScratchTensors(&g);
  DequantizeHybridWeights(&g);
  result.offline_offsets = OfflinePlan(r);
  if (result.offline_offsets) {
    if (static_cast<int32_t>(result.offline_offsets->size()) != result.total_tensors) {
      return r.Error("the OfflineMemoryAllocation metadata lists " +
                     std::to_string(result.offline_offsets->size()) + " offsets for " +
                     std::to_string(result.total_tensors) + " tensors");
    }
    g.offline_offsets.assign(result.offline_offsets->begin(),
                             result.offline_offsets->begin() + tensors);
  }
  result.file = std::move(file);
  return result;
}

Result<TfliteModel> ReadTfliteFile(const std::string& path) {
  MF_ASSIGN_OR_RETURN(const std::string data, ReadWholeFile(path));
  const auto* begin = reinterpret_cast<const std::byte*>(data.data());
  return ParseTflite(Bytes(begin, begin + data.size()), path);
}

}  // namespace memfold
