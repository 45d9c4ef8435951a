// `memfold ops`: the operator coverage table — every TFLite builtin operator, whether memfold
// reads it (and as which registry op), runs it per element type, runs it on the device, and
// how it models the safe overlap O_s. Read from the TFLite mapping table and the op registry,
// so it cannot disagree with them (docs/operators.md is its --markdown output, checked by a
// test).
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "memfold/compile/codegen.h"
#include "memfold/io/text.h"
#include "memfold/io/tflite_ops.h"
#include "memfold/ops/registry.h"

namespace memfold::cli {
namespace {

using Json = nlohmann::ordered_json;

struct Coverage {
  std::string tflite, op;
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
  Coverage c{std::string(TfliteBuiltinName(code)), "", false};
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
                     {"overlap", c.overlap}});
    }
    std::cout << JsonText(Json{{"operators", out}, {"read", read}}) << "\n";
    return kExitOk;
  }
  TextTable table({">code", "TFLite operator", "memfold op", "float32", "int8", "int16", "other",
                   "device", "O_s models"});
  for (int32_t code = 0; code < TfliteBuiltinCount(); ++code) {
    const Coverage& c = rows[static_cast<size_t>(code)];
    std::string other;
    for (const std::string& t : c.other) other += (other.empty() ? "" : ", ") + t;
    table.Add({std::to_string(code), c.tflite, c.reads ? c.op : "not read", Mark(c.f32), Mark(c.i8),
               Mark(c.i16), other.empty() ? "-" : other, Mark(c.device), c.overlap});
  }
  std::cout << (markdown ? table.RenderMarkdown() : table.Render());
  std::cout << (markdown ? "\n" : "") << read << " of " << TfliteBuiltinCount()
            << " TFLite builtin operators read; planning works for every operator read, and for "
               "any other as an opaque node of its file's shapes\n";
  return kExitOk;
}

}  // namespace memfold::cli
