#include "memfold/compile/codegen.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>

#include "memfold/compile/embedded_sources.h"
#include "memfold/ops/kernel_args.h"
#include "memfold/ops/registry.h"
#include "memfold/ops/runnable.h"
#include "memfold/plan/planned_layout.h"
#include "memfold/plan/shared_storage.h"

namespace memfold {
namespace {

const char* CType(DType type) {
  switch (type) {
    case DType::kF32:
      return "float";
    case DType::kI8:
      return "int8_t";
    case DType::kI16:
      return "int16_t";
    case DType::kI32:
      return "int32_t";
    case DType::kI64:
      return "int64_t";
    case DType::kU32:
      return "uint32_t";
    default:
      return "uint8_t";  // u8, bool, packed bits
  }
}

std::string DTypeConstant(DType type) {
  static const char* const kNames[] = {"kF32", "kI8",   "kU8",  "kI16", "kI32",
                                       "kI64", "kBool", "kBit", "kU32"};
  static_assert(std::size(kNames) == kNumDTypes);
  return std::string("memfold::DType::") + kNames[static_cast<int>(type)];
}

// A float or double exactly, as a C++ hexadecimal floating literal.
std::string ExactFloat(double value, bool single) {
  if (value != value) return single ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
  if (value == std::numeric_limits<double>::infinity())
    return single ? "__builtin_inff()" : "__builtin_inf()";
  if (value == -std::numeric_limits<double>::infinity())
    return single ? "-__builtin_inff()" : "-__builtin_inf()";
  char text[64];
  std::snprintf(text, sizeof(text), "%a", value);
  return std::string(text) + (single ? "f" : "");
}

std::string Int64(int64_t v) {
  // INT64_MIN has no literal of its own.
  if (v == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807LL - 1)";
  return std::to_string(v) + "LL";
}

// "{a, b, c}" of `values` formatted by `format`, wrapped every `per_line` entries.
template <typename T, typename Format>
std::string ArrayBody(const std::vector<T>& values, Format format, size_t per_line = 16) {
  std::string out = "{";
  for (size_t k = 0; k < values.size(); ++k) {
    if (k % per_line == 0 && values.size() > per_line) out += "\n    ";
    out += format(values[k]);
    if (k + 1 < values.size()) out += ",";
  }
  return out + "}";
}

std::string ByteArray(const Bytes& bytes) {
  static const char* const kHex = "0123456789abcdef";
  std::string out = "{";
  out.reserve(bytes.size() * 5 + 16);
  for (size_t k = 0; k < bytes.size(); ++k) {
    if (k % 24 == 0) out += "\n    ";
    const auto b = static_cast<unsigned>(bytes[k]);
    out += "0x";
    out += kHex[b >> 4];
    out += kHex[b & 15];
    out += ',';
  }
  return out + "}";
}

// The device kernel of `def` for inputs of `dtype`, or null.
const KernelEntry* DeviceKernelEntry(const OpDef& def, DType dtype) {
  if (def.alias) return nullptr;
  const KernelEntry* entry = def.FindKernelEntry(dtype);
  return entry != nullptr && entry->device && !entry->symbol.empty() ? entry : nullptr;
}

// The device kernel of a node that runs one, or null.
const KernelEntry* DeviceKernel(const Graph& graph, const Node& node) {
  const OpDef* def = OpOf(node);
  if (def == nullptr) return nullptr;
  return DeviceKernelEntry(*def, graph.value(node.inputs[0]).dtype);
}

// The index among the graph inputs of `v` when it is a streamed input (passes/stream_inputs.h),
// or -1.
int StreamedInputIndex(const Graph& graph, ValueId v) {
  if (v == kNoValue || graph.value(v).role != Role::kStreamed) return -1;
  const auto at = std::find(graph.inputs.begin(), graph.inputs.end(), v);
  return at == graph.inputs.end() ? -1 : static_cast<int>(at - graph.inputs.begin());
}

bool HasStreamedInput(const Graph& graph) {
  return std::any_of(graph.inputs.begin(), graph.inputs.end(),
                     [&](ValueId v) { return StreamedInputIndex(graph, v) >= 0; });
}

// An #include of every kernel header the tree carries (each kernel is declared in one).
std::string KernelIncludes() {
  std::string out;
  for (const EmbeddedFile& f : EmbeddedSources()) {
    if (f.path.starts_with("memfold/ops/kernels/") && f.path.ends_with(".h"))
      out += "#include \"" + std::string(f.path) + "\"\n";
  }
  return out;
}

// Writes model/<name>.cc: the tables of runtime/program.h for one planned graph. Every table is
// `constinit`: the compiler must initialise it statically, so it lands in flash (.rodata), never
// in RAM with a copy made at start-up.
class ModelWriter {
 public:
  ModelWriter(const Graph& graph, const Liveness& live, const Plan& plan,
              const CodegenOptions& options)
      : graph_(graph),
        live_(live),
        plan_(plan),
        options_(options),
        homes_(PlannedHomes(graph, live, plan)) {}

  std::string Source() {
    std::string steps = "constinit const StepDesc kSteps[] = {\n";
    size_t max_tensors = 1, max_scratch = 1;
    for (size_t pos = 0; pos < graph_.schedule.size(); ++pos) {
      const NodeId id = graph_.schedule[pos];
      const Node& node = graph_.node(id);
      max_tensors = std::max(max_tensors, node.inputs.size() + node.outputs.size());
      max_scratch = std::max(max_scratch, live_.scratch_of[static_cast<size_t>(id)].size());
      steps += "    " + Step(pos) + ",  // " + node.op + " '" + Comment(node.name) + "'\n";
    }
    steps += "};\n";
    const std::string start_poison = PoisonList(0);
    const std::string inputs = DescList(graph_.inputs), outputs = DescList(graph_.outputs);
    std::ostringstream out;
    out << "// Generated by `memfold compile` from " << Comment(options_.source) << " ("
        << options_.planner << " plan): " << plan_.arena_bytes << "-byte arena. Do not edit.\n"
        << "#include \"" << options_.name << ".h\"\n\n"
        << "#include <cstddef>\n#include <cstdint>\n#include <span>\n\n"
        << KernelIncludes() << "#include \"memfold/runtime/program.h\"\n\n"
        << "#ifndef MEMFOLD_POISON\n#define MEMFOLD_POISON 0\n#endif\n"
        << "#if MEMFOLD_POISON\n#define MF_POISON(ranges) ranges\n#else\n"
        << "#define MF_POISON(ranges) {}\n#endif\n\n"
        << "namespace {\n\nusing memfold::AttrArg;\nusing memfold::Direct;\n"
        << "using memfold::runtime::ArenaRange;\nusing memfold::runtime::StepDesc;\n"
        << "using memfold::runtime::TensorDesc;\n\n"
        << "// The one arena: every activation, every scratch buffer.\n"
        << "alignas(16) std::byte g_arena[" << std::max<int64_t>(1, plan_.arena_bytes)
        << "] __attribute__((section(\".memfold_arena\")));\n\n"
        << decls_ << "\n"
        << steps << "\n"
        << "[[maybe_unused]] constinit const ArenaRange kPoisonAtStart[] = " << start_poison
        << ";\n"
        << "constinit const TensorDesc kInputs[] = " << inputs << ";\n"
        << "constinit const TensorDesc kOutputs[] = " << outputs << ";\n\n"
        << "constexpr size_t kMaxTensors = " << max_tensors << ";\n"
        << "constexpr size_t kMaxScratch = " << max_scratch << ";\n"
        << "constinit const memfold::runtime::ProgramDesc kProgram = {\n"
        << "    " << plan_.arena_bytes << "u, kSteps, MF_POISON(kPoisonAtStart),\n"
        << "    {kInputs, " << graph_.inputs.size() << "}, {kOutputs, " << graph_.outputs.size()
        << "}, kMaxTensors, kMaxScratch};\n\n"
        << "// Runs the program; streamed inputs come from `source`, or without one from the\n"
        << "// caller's buffers in `inputs`.\n"
        << "int Run(const void* const* inputs, void* const* outputs, uint32_t (*now)(void),\n"
        << "        uint32_t* step_ticks, const memfold::runtime::InputSource* source) {\n"
        << "  memfold::TensorArg tensors[kMaxTensors];\n"
        << "  std::byte* scratch[kMaxScratch];\n"
        << "  const memfold::runtime::StepClock clock{now, step_ticks};\n"
        << "  const char* refused = memfold::runtime::RunProgram(\n"
        << "      kProgram, g_arena, inputs, outputs, tensors, scratch, MEMFOLD_POISON != 0,\n"
        << "      now != nullptr ? &clock : nullptr, source);\n"
        << "  return refused == nullptr ? 0 : 1;\n}\n\n"
        << "}  // namespace\n\n"
        << Entry(Invoke::kBuffers, true) << Entry(Invoke::kBuffers, false);
    if (HasStreamedInput(graph_))
      out << Entry(Invoke::kSource, true) << Entry(Invoke::kSource, false);
    return out.str();
  }

  // Whether an entry point takes every input as a buffer, or streamed ones from a source.
  enum class Invoke { kBuffers, kSource };

  // One entry point's definition: the timed one calls Run, the plain one the timed one.
  std::string Entry(Invoke kind, bool timed) const {
    const bool from = kind == Invoke::kSource;
    std::string body = InvokeSignature(timed, kind) + " {\n";
    if (!timed) {
      return body + "  return memfold_" + options_.name +
             (from ? "_invoke_from_timed(" : "_invoke_timed(") +
             (from ? std::string("source, ") : std::string()) + Arguments(kind) +
             "nullptr, nullptr);\n}\n\n";
    }
    std::string inputs = "{";
    for (size_t k = 0; k < graph_.inputs.size(); ++k) {
      const bool fetched = from && StreamedInputIndex(graph_, graph_.inputs[k]) >= 0;
      inputs +=
          (k > 0 ? ", " : "") + (fetched ? std::string("nullptr") : "input" + std::to_string(k));
    }
    body += "  const void* const inputs[] = " +
            (graph_.inputs.empty() ? std::string("{nullptr}") : inputs + "}") +
            ";\n  void* const outputs[] = " + Pointers("output", graph_.outputs.size()) + ";\n";
    if (from) {
      body +=
          "  const memfold::runtime::InputSource fetched{source->fetch, source->user};\n"
          "  return Run(inputs, outputs, now, step_ticks, &fetched);\n}\n\n";
    } else {
      body += "  return Run(inputs, outputs, now, step_ticks, nullptr);\n}\n\n";
    }
    return body;
  }

  // An entry point; `timed` adds a clock read around every step and where the ticks go;
  // kSource takes streamed inputs from a memfold_input_source instead of buffers.
  std::string InvokeSignature(bool timed, Invoke kind = Invoke::kBuffers) const {
    const bool from = kind == Invoke::kSource;
    std::string signature = "int memfold_" + options_.name + (from ? "_invoke_from" : "_invoke") +
                            (timed ? "_timed(" : "(");
    if (from) signature += "const memfold_input_source* source, ";
    for (size_t k = 0; k < graph_.inputs.size(); ++k) {
      if (from && StreamedInputIndex(graph_, graph_.inputs[k]) >= 0) continue;
      signature += std::string("const ") + CType(graph_.value(graph_.inputs[k]).dtype) + "* input" +
                   std::to_string(k) + ", ";
    }
    for (size_t k = 0; k < graph_.outputs.size(); ++k) {
      signature += std::string(CType(graph_.value(graph_.outputs[k]).dtype)) + "* output" +
                   std::to_string(k) + (k + 1 < graph_.outputs.size() || timed ? ", " : "");
    }
    if (timed) signature += "uint32_t (*now)(void), uint32_t* step_ticks";
    if (signature.ends_with(", ")) signature.resize(signature.size() - 2);
    return "extern \"C\" " + signature + ")";
  }

  // "input0, ..., output0, ..., ": the plain entry point's arguments, passed on.
  std::string Arguments(Invoke kind) const {
    std::string out;
    for (size_t k = 0; k < graph_.inputs.size(); ++k) {
      if (kind == Invoke::kSource && StreamedInputIndex(graph_, graph_.inputs[k]) >= 0) continue;
      out += "input" + std::to_string(k) + ", ";
    }
    for (size_t k = 0; k < graph_.outputs.size(); ++k) out += "output" + std::to_string(k) + ", ";
    return out;
  }

 private:
  static std::string Comment(const std::string& text) {
    std::string out;
    for (char c : text) out += (c == '\n' || c == '\\') ? ' ' : c;
    return out;
  }

  static std::string Pointers(const std::string& prefix, size_t count) {
    std::string out = "{";
    for (size_t k = 0; k < count; ++k)
      out += prefix + std::to_string(k) + (k + 1 < count ? ", " : "");
    return (count == 0 ? out + "nullptr" : out) + "}";
  }

  // Declares an array of `type` initialised with `body` and returns its name. A read-only
  // array declared again with the same body is the first one (bands share most tables).
  std::string Declare(const std::string& prefix, const std::string& type, const std::string& body,
                      const std::string& attributes = "[[maybe_unused]] ",
                      const std::string& comment = "") {
    const bool shared = type.starts_with("const ");
    if (shared) {
      if (auto it = declared_.find(type + body); it != declared_.end()) return it->second;
    }
    const std::string name = prefix + std::to_string(next_id_++);
    if (shared) declared_[type + body] = name;
    decls_ += attributes + "constinit " + type + " " + name + "[] = " + body + ";" +
              (comment.empty() ? "" : "  // " + comment) + "\n";
    return name;
  }

  std::string ShapeOf(ValueId v) {
    const Value& value = graph_.value(v);
    if (value.shape.empty()) return "{}";
    auto [it, added] = shapes_.try_emplace(v);
    if (added) {
      it->second = Declare("kShape", "const int64_t", ArrayBody(value.shape, Int64));
    }
    return "{" + it->second + ", " + std::to_string(value.shape.size()) + "}";
  }

  // A value's quantisation as the device's kernels read it: the first scale and zero point
  // (QuantArg), and whether the scales are per channel.
  std::string QuantOf(ValueId v) {
    const Value& value = graph_.value(v);
    if (!value.quant || (value.quant->scale.empty() && value.quant->zero_point.empty()))
      return "{}";
    auto [it, added] = quants_.try_emplace(v);
    if (added) {
      const auto& q = *value.quant;
      const std::string scale = q.scale.empty()
                                    ? "{}"
                                    : "{" +
                                          Declare("kScale", "const float",
                                                  "{" + ExactFloat(q.scale.front(), true) + "}") +
                                          ", 1}";
      const std::string zero = q.zero_point.empty()
                                   ? "{}"
                                   : "{" +
                                         Declare("kZeroPoint", "const int64_t",
                                                 "{" + Int64(q.zero_point.front()) + "}") +
                                         ", 1}";
      it->second = "{" + scale + ", " + zero + (q.scale.size() > 1 ? ", true" : "") + "}";
    }
    return it->second;
  }

  // Where a value's bytes are: ".offset = ..." (in the arena: Desc sets .in_arena), or
  // ".constant = ..." or ".state = ...", or nowhere ("").
  std::string HomeOf(ValueId v) {
    const ValueHome& home = homes_[static_cast<size_t>(v)];
    switch (home.home) {
      case Home::kArena:
        return ", .offset = " + std::to_string(home.offset) + "u";
      case Home::kConstant:
        return ", .constant = " + DataArray(home.owner, "const uint8_t", "kConst");
      case Home::kPersistent:
        return ", .state = " + DataArray(home.owner, "uint8_t", "kState");
      case Home::kNowhere:
        break;
    }
    return "";
  }

  std::string DataArray(ValueId owner, const std::string& type, const std::string& prefix) {
    auto [it, added] = data_.try_emplace(owner);
    if (added) {
      const Value& value = graph_.value(owner);
      Bytes bytes = PersistentInitialBytes(value);
      if (bytes.empty()) bytes.push_back(std::byte{0});  // C++ has no empty arrays
      it->second = Declare(prefix, type, ByteArray(bytes), "alignas(16) [[maybe_unused]] ",
                           Comment(value.name));
    }
    return it->second;
  }

  std::string Desc(ValueId v) {
    if (v == kNoValue) return "{}";
    const Value& value = graph_.value(v);
    const bool in_arena = homes_[static_cast<size_t>(v)].home == Home::kArena;
    const int streamed = StreamedInputIndex(graph_, v);
    std::string desc = "{.present = true, " + std::string(in_arena ? ".in_arena = true, " : "") +
                       ".dtype = " + DTypeConstant(value.dtype) +
                       (streamed >= 0 ? ", .streamed_input = " + std::to_string(streamed) : "") +
                       ", .shape = " + ShapeOf(v) + ", .quant = " + QuantOf(v) + HomeOf(v);
    if (const RowLayout rows = ViewRows(live_, v); rows.row_bytes != 0) {
      const int64_t element = StorageBytes(value.dtype, 1);
      desc += ", .row = " + Int64(rows.row_bytes / element) +
              ", .row_stride = " + Int64(rows.stride_bytes / element);
    }
    return desc + "}";
  }

  std::string DescList(const std::vector<ValueId>& values) {
    if (values.empty()) return "{{}}";
    std::string out = "{";
    for (size_t k = 0; k < values.size(); ++k)
      out += "\n    " + Desc(values[k]) + (k + 1 < values.size() ? "," : "");
    return out + "}";
  }

  std::string Span(const std::string& type, const std::string& prefix, const std::string& body,
                   bool empty) {
    return empty ? "{}" : Declare(prefix, "const " + type, body);
  }

  std::string AttrList(const Node& node) {
    const std::vector<AttrArg> attrs = AttrArgsOf(node.attrs);
    std::string body = "{";
    for (const AttrArg& a : attrs) {
      body += "\n    {.name = \"" + std::string(a.name) + "\", .kind = AttrArg::Kind::";
      switch (a.kind) {
        case AttrArg::Kind::kInt:
          body += "kInt, .i = " + Int64(a.i);
          break;
        case AttrArg::Kind::kFloat:
          body += "kFloat, .f = " + ExactFloat(a.f, false);
          break;
        case AttrArg::Kind::kStr:
          body += "kStr, .s = \"" + Escaped(a.s) + "\"";
          break;
        case AttrArg::Kind::kInts: {
          const std::vector<int64_t> ints(a.ints.begin(), a.ints.end());
          body += "kInts, .ints = " +
                  (ints.empty() ? std::string("{}")
                                : Declare("kInts", "const int64_t", ArrayBody(ints, Int64)));
          break;
        }
      }
      body += "},";
    }
    return Span("AttrArg", "kAttrs", body + "}", attrs.empty());
  }

  static std::string Escaped(std::string_view text) {
    std::string out;
    for (char c : text) {
      if (c == '"' || c == '\\') out += '\\';
      if (static_cast<unsigned char>(c) < 0x20) continue;
      out += c;
    }
    return out;
  }

  std::string PoisonList(int32_t time) {
    const auto ranges = PoisonRanges(live_, plan_, time);
    std::string body = "{";
    for (const auto& [b, e] : ranges)
      body += "{" + std::to_string(b) + "u, " + std::to_string(e) + "u},";
    return ranges.empty() ? "{{0u, 0u}}" : body + "}";
  }

  std::string Step(size_t pos) {
    const NodeId id = graph_.schedule[pos];
    const Node& node = graph_.node(id);
    const bool copy_free = !live_.copy_free.empty() && live_.copy_free[static_cast<size_t>(id)];
    const KernelEntry* entry = copy_free ? nullptr : DeviceKernel(graph_, node);
    const auto ranges = PoisonRanges(live_, plan_, NodeTime(pos));
    const std::string poison =
        ranges.empty()
            ? "{}"
            : "MF_POISON(" + Declare("kPoison", "const ArenaRange", PoisonList(NodeTime(pos))) +
                  ")";
    if (entry == nullptr) return "{.kernel = nullptr, .poison = " + poison + "}";
    std::vector<int64_t> scratch;
    for (int32_t r : live_.scratch_of[static_cast<size_t>(id)])
      scratch.push_back(plan_.offsets[static_cast<size_t>(r)]);
    const std::vector<int32_t> prepared = KernelArgsOf(graph_, node).prepared;
    const std::string inputs = Declare("kIn", "const TensorDesc", DescList(node.inputs));
    const std::string outputs = Declare("kOut", "const TensorDesc", DescList(node.outputs));
    return "{.kernel = &memfold::" + std::string(entry->symbol) + ", .attrs = " + AttrList(node) +
           ", .inputs = " + inputs + ", .outputs = " + outputs + ", .scratch = " +
           Span("uint32_t", "kScratch",
                ArrayBody(scratch, [](int64_t o) { return std::to_string(o) + "u"; }),
                scratch.empty()) +
           ", .prepared = " +
           Span("int32_t", "kPrepared",
                ArrayBody(prepared, [](int32_t p) { return std::to_string(p); }),
                prepared.empty()) +
           ", .poison = " + poison + FetchOf(node) + "}";
  }

  // ", .fetch_input = K, .fetch_begin = ..." for a slice of a streamed graph input, or "".
  std::string FetchOf(const Node& node) {
    if (RulesOf(node).tile != TileRule::kSlice) return "";
    const int input = StreamedInputIndex(graph_, node.inputs[0]);
    if (input < 0) return "";
    return ", .fetch_input = " + std::to_string(input) + ", .fetch_begin = " +
           Declare("kFetchBegin", "const int64_t", ArrayBody(node.attrs.Ints("begin"), Int64));
  }

  const Graph& graph_;
  const Liveness& live_;
  const Plan& plan_;
  const CodegenOptions& options_;
  std::vector<ValueHome> homes_;
  std::string decls_;
  int next_id_ = 0;
  std::map<ValueId, std::string> shapes_, quants_, data_;
  std::map<std::string, std::string> declared_;  // type + body -> name
};

std::string Header(const Graph& graph, const CodegenOptions& options, const Plan& plan,
                   const ModelWriter& writer) {
  using Invoke = ModelWriter::Invoke;
  std::string upper;
  for (char c : options.name)
    upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::ostringstream out;
  out << "// Generated by `memfold compile`: the entry point of " << options.name << " ("
      << options.planner << " plan).\n"
      << "// Inputs and outputs are the caller's buffers, raw little-endian in the model's "
         "layout;\n"
      << "// the activations live in one static arena.\n"
      << "#pragma once\n\n#include <stdint.h>\n\n"
      << "#define MEMFOLD_" << upper << "_ARENA_BYTES " << plan.arena_bytes << "\n"
      << "#define MEMFOLD_" << upper << "_STEPS " << graph.schedule.size() << "\n";
  for (size_t k = 0; k < graph.inputs.size(); ++k) {
    out << "#define MEMFOLD_" << upper << "_INPUT" << k << "_BYTES "
        << graph.value(graph.inputs[k]).bytes() << "\n";
  }
  for (size_t k = 0; k < graph.outputs.size(); ++k) {
    out << "#define MEMFOLD_" << upper << "_OUTPUT" << k << "_BYTES "
        << graph.value(graph.outputs[k]).bytes() << "\n";
  }
  const auto c_form = [&](bool timed, Invoke kind) {
    const std::string s = writer.InvokeSignature(timed, kind);
    return s.substr(s.find("int "));
  };
  out << "\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
      << "#ifndef MEMFOLD_INPUT_SOURCE_DEFINED\n#define MEMFOLD_INPUT_SOURCE_DEFINED\n"
      << "// Where a streamed input's boxes come from (a camera delivering rows, a decoder):\n"
      << "// fetch writes the box [begin, begin + size) of graph input `input` (NHWC, 4 entries\n"
      << "// each) densely packed at `dst` and returns 0; anything else stops the run.\n"
      << "typedef struct memfold_input_source {\n"
      << "  int (*fetch)(void* user, uint32_t input, const int32_t* begin, const int32_t* size,\n"
      << "               void* dst);\n  void* user;\n} memfold_input_source;\n#endif\n\n"
      << "// Runs the model once; returns 0, or 1 when a kernel refused its input (an index\n"
      << "// outside its axis, as TFLM's kernels return kTfLiteError). A streamed input is read\n"
      << "// box by box where the caller holds it (flash, say), never copied whole.\n"
      << c_form(false, Invoke::kBuffers) << ";\n\n"
      << "// The same, reading `now` around every step: step_ticks[k] (one per step, _STEPS of\n"
      << "// them) receives now()'s difference across step k of the schedule.\n"
      << c_form(true, Invoke::kBuffers) << ";\n\n";
  if (HasStreamedInput(graph)) {
    out << "// The same with every streamed input fetched box by box from `source`.\n"
        << c_form(false, Invoke::kSource) << ";\n"
        << c_form(true, Invoke::kSource) << ";\n\n";
  }
  out << "#ifdef __cplusplus\n}\n#endif\n";
  return out.str();
}

}  // namespace

bool HasDeviceKernel(const OpDef& def, DType dtype) {
  return DeviceKernelEntry(def, dtype) != nullptr;
}

std::string CIdentifier(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) != 0;
    if (ok) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0])) != 0) out = "m_" + out;
  return out;
}

Status CheckCompilable(const Graph& graph, int64_t arena_bytes) {
  MF_RETURN_IF_ERROR(CheckRunnable(graph, DefaultInputs(graph)));
  if (arena_bytes > std::numeric_limits<uint32_t>::max()) {
    return Status::Error("the arena needs " + std::to_string(arena_bytes) +
                         " bytes, beyond a 32-bit micro-controller's address space");
  }
  for (ValueId v : graph.inputs) {
    if (StreamedInputIndex(graph, v) > std::numeric_limits<int8_t>::max())
      return Status::Error("streamed input '" + graph.value(v).name +
                           "' is past the 127th graph input the device tables can name");
  }
  for (size_t pos = 0; pos < graph.schedule.size(); ++pos) {
    const Node& node = graph.node(graph.schedule[pos]);
    if (OpOf(node)->alias || DeviceKernel(graph, node) != nullptr) continue;
    return Status::Error("operator " + std::to_string(pos) + " '" + node.name + "' (" + node.op +
                         ", " + std::string(DTypeName(graph.value(node.inputs[0]).dtype)) +
                         ") has no freestanding kernel for the device (host only: training "
                         "and BLAS kernels)");
  }
  return Status::Ok();
}

Result<std::vector<GeneratedFile>> GenerateModel(const Graph& graph, const Liveness& live,
                                                 const Plan& plan, const CodegenOptions& options) {
  MF_RETURN_IF_ERROR(CheckCompilable(graph, plan.arena_bytes));
  ModelWriter writer(graph, live, plan, options);
  std::string source = writer.Source();
  return std::vector<GeneratedFile>{
      {"model/" + options.name + ".h", Header(graph, options, plan, writer)},
      {"model/" + options.name + ".cc", std::move(source)}};
}

// The harness's input source for streamed inputs: a camera that delivers the rows of each box
// asked for out of the frame, which stays in flash (kInputK), counting the bytes delivered.
std::string CameraSource(const Graph& graph) {
  std::ostringstream out;
  out << "\n// A camera: each box asked for is read row by row out of the frame in flash.\n"
      << "struct Frame {\n  const uint8_t* data;\n  int32_t width, channels, element;\n};\n"
      << "const Frame kFrames[] = {";
  for (size_t k = 0; k < graph.inputs.size(); ++k) {
    const Value& v = graph.value(graph.inputs[k]);
    const bool nhwc = v.shape.size() == 4;
    out << (k > 0 ? ", " : "") << "{kInput" << k << ", " << (nhwc ? v.shape[2] : 0) << ", "
        << (nhwc ? v.shape[3] : 0) << ", " << StorageBytes(v.dtype, 1) << "}";
  }
  out << "};\nuint32_t g_fetched = 0;  // bytes the camera delivered\n\n"
      << "int CameraFetch(void*, uint32_t input, const int32_t* begin, const int32_t* size,\n"
      << "                void* dst) {\n"
      << "  const Frame& frame = kFrames[input];\n"
      << "  if (begin[3] != 0 || size[3] != frame.channels) return 1;  // whole pixels only\n"
      << "  const int32_t pixel = frame.channels * frame.element, row = size[2] * pixel;\n"
      << "  uint8_t* out = static_cast<uint8_t*>(dst);\n"
      << "  for (int32_t y = begin[1]; y < begin[1] + size[1]; ++y, out += row)\n"
      << "    memcpy(out, frame.data + (y * frame.width + begin[2]) * pixel, row);\n"
      << "  g_fetched += static_cast<uint32_t>(row * size[1]);\n  return 0;\n}\n\n"
      << "const memfold_input_source kCamera = {CameraFetch, nullptr};\n";
  return out.str();
}

GeneratedFile GenerateHarness(const Graph& graph, const CodegenOptions& options,
                              const std::vector<Bytes>& inputs) {
  std::ostringstream out;
  out << "// Generated by `memfold compile`: runs " << options.name
      << " once on a fixed input and reports\n"
      << "// each output, the stack's high-water mark and the timer's ticks (in all and per step)\n"
      << "// through semihosting.\n"
      << "#include \"" << options.name << ".h\"\n\n"
      << "#include \"target/semihost.h\"\n#include \"target/stack_watermark.h\"\n"
      << "#include \"target/timer.h\"\n\n#include <string.h>\n\n"
      << "namespace {\n\n"
      << "// Measurement only, in its own section (.profile), not counted as the model's RAM.\n"
      << "uint32_t g_step_ticks[" << std::max<size_t>(1, graph.schedule.size())
      << "] __attribute__((section(\".memfold_profile\")));\n";
  for (size_t k = 0; k < inputs.size(); ++k) {
    out << "alignas(16) const uint8_t kInput" << k << "[] = " << ByteArray(inputs[k]) << ";\n";
  }
  for (size_t k = 0; k < graph.outputs.size(); ++k) {
    out << "alignas(16) uint8_t g_output" << k << "["
        << std::max<int64_t>(1, graph.value(graph.outputs[k]).bytes()) << "];\n";
  }
  const bool streamed = HasStreamedInput(graph);
  if (streamed) out << CameraSource(graph);
  out << "\n}  // namespace\n\nint main() {\n  stack_paint();\n  timer_start();\n"
      << "  const uint32_t start = timer_ticks();\n  memfold_" << options.name
      << (streamed ? "_invoke_from_timed(&kCamera, " : "_invoke_timed(");
  std::vector<std::string> args;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (StreamedInputIndex(graph, graph.inputs[k]) >= 0) continue;  // from the camera
    args.push_back(std::string("reinterpret_cast<const ") +
                   CType(graph.value(graph.inputs[k]).dtype) + "*>(kInput" + std::to_string(k) +
                   ")");
  }
  for (size_t k = 0; k < graph.outputs.size(); ++k) {
    args.push_back(std::string("reinterpret_cast<") + CType(graph.value(graph.outputs[k]).dtype) +
                   "*>(g_output" + std::to_string(k) + ")");
  }
  args.emplace_back("timer_ticks");
  args.emplace_back("g_step_ticks");
  for (size_t k = 0; k < args.size(); ++k) out << args[k] << (k + 1 < args.size() ? ", " : "");
  out << ");\n  const uint32_t ticks = timer_ticks() - start;\n"
      << "  const unsigned stack = stack_used_bytes();\n";
  for (size_t k = 0; k < graph.outputs.size(); ++k) {
    out << "  semihost_write0(\"memfold-output " << k << " \");\n"
        << "  semihost_print_hex(g_output" << k << ", " << graph.value(graph.outputs[k]).bytes()
        << ");\n  semihost_write0(\"\\n\");\n";
  }
  if (streamed) {
    out << "  semihost_write0(\"memfold-fetched \");\n  semihost_print_uint(g_fetched);\n"
        << "  semihost_write0(\"\\n\");\n";
  }
  out << "  semihost_write0(\"memfold-stack \");\n  semihost_print_uint(stack);\n"
      << "  semihost_write0(\"\\nmemfold-ticks \");\n  semihost_print_uint(ticks);\n"
      << "  semihost_write0(\"\\nmemfold-step-ticks\");\n"
      << "  for (uint32_t t : g_step_ticks) {\n    semihost_write0(\" \");\n"
      << "    semihost_print_uint(t);\n  }\n"
      << "  semihost_write0(\"\\n\");\n  return 0;\n}\n";
  return {"model/main.cc", out.str()};
}

}  // namespace memfold
