#include "memfold/onnx/onnx_reader.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "memfold/io/file.h"
#include "memfold/io/text.h"
#include "memfold/onnx/onnx_importer.h"
#include "memfold/onnx/onnx_lift.h"

namespace memfold {
namespace {

using onnx_import::Importer;
using onnx_import::Tensor;

constexpr int64_t kMinOpset = 11;
constexpr int64_t kMaxOpset = 23;

std::string TypeName(int32_t onnx_type) {
  const std::string& name = onnx::TensorProto::DataType_Name(onnx_type);
  return name.empty() ? "type " + std::to_string(onnx_type) : name;
}

// Elements of a tensor the file declares, within TFLM's 32-bit sizes.
Result<int64_t> Elements(const Shape& shape, DType dtype, const std::string& what) {
  const int64_t limit = onnx_import::kMaxTensorBytes / std::max(1, ElementBytes(dtype));
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return Status::Error(what + " has a negative dimension");
    if (d != 0 && n > limit / d) return Status::Error(what + " has more than 2^31 bytes");
    n *= d;
  }
  return n;
}

// The data of an initializer (or a Constant's tensor), in memfold's little-endian layout.
template <typename Field>
void Narrow(const Field& field, DType dtype, Bytes* bytes) {
  for (int64_t k = 0; k < static_cast<int64_t>(field.size()); ++k) {
    VisitElementType(dtype, [&](auto zero) {
      const auto element = static_cast<decltype(zero)>(field.Get(static_cast<int>(k)));
      std::memcpy(bytes->data() + k * static_cast<int64_t>(sizeof(element)), &element,
                  sizeof(element));
    });
  }
}

}  // namespace

namespace onnx_import {

// The bytes an external-data tensor names: `location` (a file beside the model; no absolute
// path, no "..") from `offset`, `length` bytes (to the end when absent).
Result<std::string> ExternalData(const onnx::TensorProto& t, const std::string& directory,
                                 const std::string& what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& entry : t.external_data()) {
    char* end = nullptr;
    if (entry.key() == "location") location = entry.value();
    if (entry.key() == "offset") offset = std::strtoll(entry.value().c_str(), &end, 10);
    if (entry.key() == "length") length = std::strtoll(entry.value().c_str(), &end, 10);
  }
  if (directory.empty()) {
    return Status::Error(what +
                         " keeps its data in an external file, and the model was given as "
                         "bytes; give its path, or save it with the weights inside");
  }
  const std::filesystem::path path(location);
  const bool escapes =
      location.empty() || path.is_absolute() ||
      std::any_of(path.begin(), path.end(), [](const auto& p) { return p == ".."; });
  if (escapes) {
    return Status::Error(what + " names external data '" + location +
                         "' outside the model's directory; memfold reads only files beside it");
  }
  if (offset < 0) return Status::Error(what + " has a negative external-data offset");
  const std::string file = (std::filesystem::path(directory) / path).string();
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::Error(what + ": cannot open its external data file '" + file + "'");
  in.seekg(0, std::ios::end);
  const auto file_size = static_cast<int64_t>(in.tellg());
  if (length < 0) length = file_size - offset;
  if (offset > file_size || length < 0 || length > file_size - offset) {
    return Status::Error(what + ": its external data (" + std::to_string(length) + " bytes at " +
                         std::to_string(offset) + ") lies beyond the end of '" + file + "' (" +
                         std::to_string(file_size) + " bytes)");
  }
  std::string data(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(data.data(), length);
  if (!in) return Status::Error(what + ": cannot read its external data from '" + file + "'");
  return data;
}

Result<std::pair<Value, Bytes>> TensorOfProto(const onnx::TensorProto& t, const std::string& where,
                                              const std::string& directory) {
  const std::string what = where + " '" + t.name() + "'";
  const std::optional<DType> dtype = DTypeOfOnnx(t.data_type());
  if (!dtype) {
    return Status::Error(what + " has element type " + TypeName(t.data_type()) +
                         ", which memfold does not store; export it as float32 or an integer type");
  }
  if (t.has_segment()) return Status::Error(what + " is segmented, which memfold does not read");
  Value v;
  v.name = t.name();
  v.dtype = *dtype;
  v.shape.assign(t.dims().begin(), t.dims().end());
  MF_ASSIGN_OR_RETURN(const int64_t n, Elements(v.shape, *dtype, what));
  const auto size = static_cast<size_t>(StorageBytes(*dtype, n));
  auto count_error = [&](int64_t has) {
    return Status::Error(what + " is " + ShapeString(v.shape) + " " + TypeName(t.data_type()) +
                         " but holds " + std::to_string(has) + " values");
  };
  const int64_t element = std::max(1, ElementBytes(*dtype));
  // The data's own size is checked first: dimensions that claim more than the file holds
  // allocate nothing.
  Bytes bytes;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    MF_ASSIGN_OR_RETURN(std::string data, ExternalData(t, directory, what));
    if (data.size() != size) return count_error(static_cast<int64_t>(data.size()) / element);
    const auto* begin = reinterpret_cast<const std::byte*>(data.data());
    bytes.assign(begin, begin + size);
  } else if (t.has_raw_data()) {
    if (t.raw_data().size() != size)
      return count_error(static_cast<int64_t>(t.raw_data().size()) / element);
    const auto* begin = reinterpret_cast<const std::byte*>(t.raw_data().data());
    bytes.assign(begin, begin + size);
  } else if (*dtype == DType::kF32) {
    if (t.float_data_size() != n) return count_error(t.float_data_size());
    bytes.resize(size);
    if (size > 0) std::memcpy(bytes.data(), t.float_data().data(), size);
  } else if (*dtype == DType::kI64) {
    if (t.int64_data_size() != n) return count_error(t.int64_data_size());
    bytes.resize(size);
    if (size > 0) std::memcpy(bytes.data(), t.int64_data().data(), size);
  } else if (*dtype == DType::kU32) {
    if (t.uint64_data_size() != n) return count_error(t.uint64_data_size());
    bytes.resize(size);
    Narrow(t.uint64_data(), *dtype, &bytes);
  } else {
    if (t.int32_data_size() != n) return count_error(t.int32_data_size());
    bytes.resize(size);
    Narrow(t.int32_data(), *dtype, &bytes);
  }
  return std::pair{std::move(v), std::move(bytes)};
}

}  // namespace onnx_import

namespace {

// A value_info's static type, or nullopt when its type or any dimension is not known.
std::optional<std::pair<DType, Shape>> StaticType(const onnx::ValueInfoProto& info) {
  if (!info.type().has_tensor_type()) return std::nullopt;
  const auto& tensor = info.type().tensor_type();
  const std::optional<DType> dtype = onnx_import::DTypeOfOnnx(tensor.elem_type());
  if (!dtype || !tensor.has_shape()) return std::nullopt;
  Shape shape;
  for (const auto& dim : tensor.shape().dim()) {
    if (!dim.has_dim_value() || dim.dim_value() < 0) return std::nullopt;
    shape.push_back(dim.dim_value());
  }
  return std::pair{*dtype, shape};
}

// Every name and string memfold reads from the file, with control characters replaced
// (io/text.h PrintableText), so that messages and tables quoting them stay one line each. The
// same replacement everywhere keeps references between names intact.
void MakePrintable(onnx::ModelProto* model) {
  auto fix = [](std::string* text) { *text = PrintableText(*text); };
  onnx::GraphProto& g = *model->mutable_graph();
  for (auto* list : {g.mutable_input(), g.mutable_output(), g.mutable_value_info()}) {
    for (onnx::ValueInfoProto& info : *list) fix(info.mutable_name());
  }
  for (onnx::TensorProto& t : *g.mutable_initializer()) {
    fix(t.mutable_name());
    for (auto& entry : *t.mutable_external_data()) fix(entry.mutable_value());
  }
  for (onnx::NodeProto& node : *g.mutable_node()) {
    for (std::string* text : {node.mutable_name(), node.mutable_op_type(), node.mutable_domain()})
      fix(text);
    for (std::string& name : *node.mutable_input()) fix(&name);
    for (std::string& name : *node.mutable_output()) fix(&name);
    for (onnx::AttributeProto& a : *node.mutable_attribute()) {
      fix(a.mutable_name());
      if (a.has_s()) fix(a.mutable_s());
      if (a.has_t()) fix(a.mutable_t()->mutable_name());
    }
  }
}

Result<int64_t> DefaultOpset(const onnx::ModelProto& model, const std::string& label) {
  for (const auto& opset : model.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") {
      const int64_t v = opset.version();
      if (v < kMinOpset || v > kMaxOpset) {
        return Status::Error(label + ": opset " + std::to_string(v) + " of the default domain; " +
                             "memfold reads opsets " + std::to_string(kMinOpset) + "-" +
                             std::to_string(kMaxOpset) +
                             " (re-export with torch.onnx.export(..., opset_version=17))");
      }
      return v;
    }
  }
  return Status::Error(label + ": imports no opset of the default ONNX domain");
}

Status AddInitializers(const onnx::GraphProto& g, const std::string& label,
                       const std::string& directory, Importer* im) {
  if (g.sparse_initializer_size() > 0)
    return Status::Error(label + ": has sparse initializers, which memfold does not read");
  for (const onnx::TensorProto& t : g.initializer()) {
    Result<std::pair<Value, Bytes>> tensor =
        onnx_import::TensorOfProto(t, "initializer", directory);
    if (!tensor.ok()) return Status::Error(label + ": " + tensor.status().message());
    auto& [v, bytes] = *tensor;
    const ValueId id = im->Constant(v.dtype, v.shape, std::move(bytes), v.name);
    MF_RETURN_IF_ERROR(im->BindName(t.name(), {id, false}));
  }
  return Status::Ok();
}

Status AddInputs(const onnx::GraphProto& g, const std::string& label, Importer* im) {
  for (const onnx::ValueInfoProto& info : g.input()) {
    if (im->Find(info.name())) continue;  // an initializer listed as an input (IR < 4 habit)
    const std::string what = label + ": input '" + info.name() + "'";
    if (!info.type().has_tensor_type())
      return Status::Error(what + " is not a tensor (sequences and maps are not read)");
    const auto& tensor = info.type().tensor_type();
    const std::optional<DType> dtype = onnx_import::DTypeOfOnnx(tensor.elem_type());
    if (!dtype) {
      return Status::Error(what + " has element type " + TypeName(tensor.elem_type()) +
                           ", which memfold does not run; export it as float32 or an integer type");
    }
    if (!tensor.has_shape())
      return Status::Error(what + " has no shape; give it one when exporting");
    Value v;
    v.name = info.name();
    v.dtype = *dtype;
    v.role = Role::kInput;
    for (const auto& dim : tensor.shape().dim())
      v.shape.push_back(dim.has_dim_value() ? dim.dim_value() : 1);  // symbolic: 1, as TFLM
    MF_RETURN_IF_ERROR(Elements(v.shape, v.dtype, what).status());
    const ValueId id = im->graph().AddValue(std::move(v));
    im->graph().inputs.push_back(id);
    MF_RETURN_IF_ERROR(im->BindName(info.name(), {id, false}));
  }
  return Status::Ok();
}

Status ConvertNodes(const onnx::GraphProto& g, Importer* im) {
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& node = g.node(i);
    if (im->Claimed(node)) continue;  // folded into an earlier node's quantized result
    im->Begin(node, i);
    const bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
    const onnx_import::Converter convert = onnx_import::FindConverter(
        default_domain ? node.op_type() : node.domain() + ":" + node.op_type());
    if (convert == nullptr) {
      MF_RETURN_IF_ERROR(im->Opaque(
          default_domain ? "memfold has no converter for " + node.op_type()
                         : "it is of domain '" + node.domain() + "', which memfold does not run"));
      continue;
    }
    MF_RETURN_IF_ERROR(convert(*im));
    for (const std::string& out : node.output()) {
      if (!out.empty() && !im->Find(out))
        return im->Error("memfold bug: the converter left output '" + out + "' unbound");
    }
  }
  return Status::Ok();
}

Status AddOutputs(const onnx::GraphProto& g, const std::string& label, Importer* im) {
  Graph& graph = im->graph();
  for (const onnx::ValueInfoProto& info : g.output()) {
    std::optional<Tensor> t = im->Find(info.name());
    if (!t) return Status::Error(label + ": output '" + info.name() + "' is never computed");
    Tensor real = *t;
    if (t->quantized) {
      Result<ValueId> dequantized = im->Dequantized(*t);
      if (!dequantized.ok()) return dequantized.status();
      real = {*dequantized, t->channels_last, false};
    }
    Result<ValueId> plain = im->Plain(real);
    if (!plain.ok()) return plain.status();
    Value& v = graph.value(*plain);
    if (v.is_constant()) {
      return Status::Error(label + ": output '" + info.name() +
                           "' is a constant (it depends on no input); memfold plans computed "
                           "outputs");
    }
    if (v.role == Role::kActivation) v.role = Role::kOutput;
    v.name = info.name();
    graph.outputs.push_back(*plain);
  }
  if (graph.outputs.empty()) return Status::Error(label + ": the graph has no outputs");
  return Status::Ok();
}

// The graph without the values nothing reads or writes (the file's weights that folded into
// transposed or scaled copies, constants of shape arithmetic), so weight counts are the model's.
Graph WithoutUnusedValues(const Graph& g) {
  std::vector<bool> used(static_cast<size_t>(g.num_values()), false);
  auto mark = [&](ValueId v) {
    if (v != kNoValue) used[static_cast<size_t>(v)] = true;
  };
  std::for_each(g.inputs.begin(), g.inputs.end(), mark);
  std::for_each(g.outputs.begin(), g.outputs.end(), mark);
  for (const Node& node : g.nodes()) {
    std::for_each(node.inputs.begin(), node.inputs.end(), mark);
    std::for_each(node.outputs.begin(), node.outputs.end(), mark);
  }
  Graph out;
  out.name = g.name;
  std::vector<ValueId> id(static_cast<size_t>(g.num_values()), kNoValue);
  for (ValueId v = 0; v < g.num_values(); ++v) {
    if (!used[static_cast<size_t>(v)]) continue;
    Value value = g.value(v);
    value.producer = kNoNode;  // AddNode sets it again
    id[static_cast<size_t>(v)] = out.AddValue(std::move(value));
  }
  auto remap = [&](std::vector<ValueId>* ids) {
    for (ValueId& v : *ids) v = v == kNoValue ? kNoValue : id[static_cast<size_t>(v)];
  };
  for (NodeId n : g.schedule) {
    Node node = g.node(n);
    remap(&node.inputs);
    remap(&node.outputs);
    out.AddNode(std::move(node));
  }
  out.inputs = g.inputs;
  out.outputs = g.outputs;
  remap(&out.inputs);
  remap(&out.outputs);
  return out;
}

}  // namespace

Result<Graph> ParseOnnx(std::span<const std::byte> file, const std::string& label,
                        const std::string& directory) {
  if (file.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return Status::Error(label +
                         ": larger than 2 GiB, protobuf's limit; save the weights as "
                         "external data is not supported either, so split the model");
  }
  onnx::ModelProto model;
  if (!model.ParseFromArray(file.data(), static_cast<int>(file.size())) || !model.has_graph() ||
      model.ir_version() <= 0) {
    return Status::Error(label +
                         ": not an ONNX model (protobuf cannot parse it as a ModelProto "
                         "with a graph; truncated or corrupted?)");
  }
  MakePrintable(&model);
  LiftOneDimensionalWindows(&model);
  MF_ASSIGN_OR_RETURN(const int64_t opset, DefaultOpset(model, label));
  const onnx::GraphProto& g = model.graph();
  Graph graph;
  graph.name = label;
  Importer im(&graph, label, opset);
  for (const auto* list : {&g.value_info(), &g.output()}) {
    for (const onnx::ValueInfoProto& info : *list) {
      if (auto type = StaticType(info)) im.StateType(info.name(), type->first, type->second);
    }
  }
  std::map<std::string, int, std::less<>> uses;
  std::map<std::string, std::vector<const onnx::NodeProto*>, std::less<>> readers;
  for (const onnx::NodeProto& node : g.node()) {
    for (const std::string& name : node.input()) {
      ++uses[name];
      readers[name].push_back(&node);
    }
  }
  for (const onnx::ValueInfoProto& info : g.output()) ++uses[info.name()];
  im.CountUses(std::move(uses), std::move(readers));
  MF_RETURN_IF_ERROR(AddInitializers(g, label, directory, &im));
  MF_RETURN_IF_ERROR(AddInputs(g, label, &im));
  MF_RETURN_IF_ERROR(ConvertNodes(g, &im));
  MF_RETURN_IF_ERROR(AddOutputs(g, label, &im));
  return WithoutUnusedValues(graph);
}

Result<Graph> ReadOnnxFile(const std::string& path) {
  MF_ASSIGN_OR_RETURN(const std::string data, ReadWholeFile(path));
  const std::string directory = std::filesystem::path(path).parent_path().string();
  return ParseOnnx(std::as_bytes(std::span(data)), path, directory.empty() ? "." : directory);
}

bool IsOnnxPath(const std::string& path) {
  constexpr std::string_view kExtension = ".onnx";
  if (path.size() < kExtension.size()) return false;
  return std::equal(
      kExtension.begin(), kExtension.end(), path.end() - kExtension.size(),
      [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); });
}

bool LooksLikeOnnx(std::span<const std::byte> file) {
  return !file.empty() && file[0] == std::byte{0x08};  // field 1 (ir_version), a varint
}

}  // namespace memfold
