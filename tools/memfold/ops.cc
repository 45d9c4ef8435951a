// `memfold ops`: the operator coverage table — every TFLite builtin operator, whether memfold
// reads it (and as which registry op), runs it per element type, runs it on the device, and
// how it models the safe overlap O_s. Read from the TFLite mapping table and the op registry,
// so it cannot disagree with them (docs/operators.md is its --markdown output, checked by a
// test).
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>

#include "commands.h"
#include "memfold/compile/codegen.h"
#include "memfold/io/text.h"
#include "memfold/io/tflite_ops.h"
#include "memfold/ops/registry.h"

namespace memfold::cli {
namespace {

using Json = nlohmann::ordered_json;

// The forms in which each TFLite operator was checked against TFLM on models the real TFLite
// converter made (tests/converter_models; python/tests/test_converter_models.py asserts this
// table is exactly what those runs check): float32, int8, and 16x8 (int16 activations).
const std::map<std::string_view, std::vector<std::string_view>>& ConverterChecked() {
  static const auto* const checked = new std::map<std::string_view, std::vector<std::string_view>>{
      {"ABS", {"f32", "i8", "16x8"}},
      {"ADD", {"f32", "i8", "16x8"}},
      {"ARG_MAX", {"f32", "i8"}},
      {"AVERAGE_POOL_2D", {"f32", "i8", "16x8"}},
      {"BATCH_MATMUL", {"f32", "i8", "16x8"}},
      {"CEIL", {"f32"}},
      {"CONCATENATION", {"f32", "i8", "16x8"}},
      {"CONV_2D", {"f32", "i8", "16x8"}},
      {"CUMSUM", {"f32", "i8"}},
      {"DEPTHWISE_CONV_2D", {"f32", "i8", "16x8"}},
      {"DEPTH_TO_SPACE", {"f32", "i8"}},
      {"DEQUANTIZE", {"i8"}},
      {"ELU", {"f32", "i8"}},
      {"EXP", {"f32"}},
      {"FLOOR", {"f32"}},
      {"FULLY_CONNECTED", {"f32", "i8", "16x8"}},
      {"GATHER", {"f32", "i8"}},
      {"HARD_SWISH", {"f32", "i8"}},
      {"L2_NORMALIZATION", {"f32", "i8"}},
      {"LEAKY_RELU", {"f32", "i8", "16x8"}},
      {"LOG", {"f32"}},
      {"LOGISTIC", {"f32", "i8", "16x8"}},
      {"LOG_SOFTMAX", {"f32"}},
      {"MAXIMUM", {"f32", "i8", "16x8"}},
      {"MAX_POOL_2D", {"f32", "i8", "16x8"}},
      {"MEAN", {"f32", "i8", "16x8"}},
      {"MINIMUM", {"f32", "i8", "16x8"}},
      {"MIRROR_PAD", {"f32", "i8"}},
      {"MUL", {"f32", "i8", "16x8"}},
      {"NEG", {"f32", "i8"}},
      {"PACK", {"f32", "i8", "16x8"}},
      {"PAD", {"f32", "i8", "16x8"}},
      {"QUANTIZE", {"i8", "16x8"}},
      {"REDUCE_MAX", {"f32", "i8"}},
      {"REDUCE_MIN", {"f32", "i8"}},
      {"RELU", {"f32", "i8", "16x8"}},
      {"RELU6", {"f32", "i8", "16x8"}},
      {"RESHAPE", {"f32", "i8", "16x8"}},
      {"RESIZE_BILINEAR", {"f32", "i8"}},
      {"RESIZE_NEAREST_NEIGHBOR", {"f32", "i8", "16x8"}},
      {"REVERSE_V2", {"f32", "i8", "16x8"}},
      {"ROUND", {"f32"}},
      {"RSQRT", {"f32", "i8", "16x8"}},
      {"SLICE", {"f32", "i8", "16x8"}},
      {"SOFTMAX", {"f32", "i8", "16x8"}},
      {"SPACE_TO_BATCH_ND", {"f32", "i8"}},
      {"SPACE_TO_DEPTH", {"f32", "i8"}},
      {"SPLIT", {"f32", "i8", "16x8"}},
      {"SQRT", {"f32"}},
      {"SQUARE", {"f32", "i8"}},
      {"SQUARED_DIFFERENCE", {"f32", "i8", "16x8"}},
      {"STRIDED_SLICE", {"f32", "i8", "16x8"}},
      {"SUB", {"f32", "i8", "16x8"}},
      {"SUM", {"f32", "i8", "16x8"}},
      {"TANH", {"f32", "i8", "16x8"}},
      {"TRANSPOSE", {"f32", "i8", "16x8"}},
      {"TRANSPOSE_CONV", {"f32", "i8", "16x8"}},
      {"UNPACK", {"f32", "i8", "16x8"}}};
  return *checked;
}

struct Coverage {
  std::string tflite, op;
  std::vector<std::string_view> converter;  // ConverterChecked()
  bool reads = false;
  bool f32 = false, i8 = false, i16 = false, device = false;
  std::vector<std::string> other;  // further element types its kernels run (bool, i32, ...)
  std::string overlap;
};

// How the planner knows an op's O_s.
std::string OverlapModel(const OpDef& def) {
  if (def.alias) return "alias (no copy)";
  std::string models;
  if (def.overlap_analytic != nullptr) models += "analytic, ";
  if (def.overlap_algorithmic != nullptr) models += "algorithmic, ";
  bool traced = false;
  for (const KernelEntry& k : def.kernels) traced = traced || k.traced != nullptr;
  if (traced) models += "trace, ";
  if (def.overlap_analytic == nullptr && def.overlap_algorithmic == nullptr)
    return traced ? "trace only: planned with O_s = 0" : "none: O_s = 0";
  return models.substr(0, models.size() - 2);
}

Coverage CoverageOf(int32_t code) {
  Coverage c{std::string(TfliteBuiltinName(code)), "", {}};
  if (const auto it = ConverterChecked().find(c.tflite); it != ConverterChecked().end())
    c.converter = it->second;
  const TfliteOpMapping* mapping = FindTfliteOp(code);
  if (mapping == nullptr) return c;
  c.reads = true;
  c.op = std::string(mapping->op);
  const OpDef* def = FindOp(mapping->op);
  if (def == nullptr) return c;
  const bool alias = def->alias;
  c.f32 = alias || def->FindKernel(DType::kF32) != nullptr;
  c.i8 = alias || def->FindKernel(DType::kI8) != nullptr;
  c.i16 = alias || def->FindKernel(DType::kI16) != nullptr;
  c.device = alias;
  for (const KernelEntry& k : def->kernels) {
    c.device = c.device || HasDeviceKernel(*def, k.dtype);
    if (k.dtype != DType::kF32 && k.dtype != DType::kI8 && k.dtype != DType::kI16)
      c.other.emplace_back(DTypeName(k.dtype));
  }
  c.overlap = OverlapModel(*def);
  return c;
}

const char* Mark(bool yes) { return yes ? "yes" : "-"; }

}  // namespace

int OpsCommand(bool json, bool markdown) {
  std::vector<Coverage> rows;
  int read = 0;
  for (int32_t code = 0; code < TfliteBuiltinCount(); ++code) {
    rows.push_back(CoverageOf(code));
    read += rows.back().reads ? 1 : 0;
  }
  if (json) {
    Json out = Json::array();
    for (int32_t code = 0; code < TfliteBuiltinCount(); ++code) {
      const Coverage& c = rows[static_cast<size_t>(code)];
      out.push_back({{"code", code},
                     {"tflite", c.tflite},
                     {"reads", c.reads},
                     {"op", c.op},
                     {"float32", c.f32},
                     {"int8", c.i8},
                     {"int16", c.i16},
                     {"other_types", c.other},
                     {"device", c.device},
                     {"overlap", c.overlap},
                     {"converter", c.converter}});
    }
    std::cout << JsonText(Json{{"operators", out}, {"read", read}}) << "\n";
    return kExitOk;
  }
  TextTable table({">code", "TFLite operator", "memfold op", "float32", "int8", "int16", "other",
                   "device", "O_s models", "converter-made, in TFLM"});
  for (int32_t code = 0; code < TfliteBuiltinCount(); ++code) {
    const Coverage& c = rows[static_cast<size_t>(code)];
    std::string other;
    for (const std::string& t : c.other) other += (other.empty() ? "" : ", ") + t;
    std::string converter;
    for (std::string_view form : c.converter)
      converter += (converter.empty() ? "" : ", ") + std::string(form);
    table.Add({std::to_string(code), c.tflite, c.reads ? c.op : "not read", Mark(c.f32), Mark(c.i8),
               Mark(c.i16), other.empty() ? "-" : other, Mark(c.device), c.overlap,
               converter.empty() ? "-" : converter});
  }
  std::cout << (markdown ? table.RenderMarkdown() : table.Render());
  std::cout << (markdown ? "\n" : "") << read << " of " << TfliteBuiltinCount()
            << " TFLite builtin operators read; planning works for every operator read, and for "
               "any other as an opaque node of its file's shapes\n";
  return kExitOk;
}

}  // namespace memfold::cli
