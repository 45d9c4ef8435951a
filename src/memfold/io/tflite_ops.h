// The one mapping table from TFLite builtin operator codes to registry ops, with the layout of
// each code's options table (for verification) and a converter that turns options and
// constant parameter inputs (paddings, axes, permutations) into node attributes.
// Nothing else in memfold switches on TFLite operator codes. Lookup O(table size).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/io/tflite_schema.h"
#include "memfold/ir/graph.h"

namespace memfold {

struct TfliteConvertContext {
  const tflite::Options* options;  // verified; null when the operator has none
  const Graph& graph;              // tensors already converted (value id == tensor index)
};

// Fills node->attrs (and may drop constant parameter inputs from node->inputs).
using TfliteConverter = Status (*)(const TfliteConvertContext& ctx, Node* node);

struct TfliteOpMapping {
  int32_t code;
  std::string_view tflite_name;
  std::string_view op;             // registry op
  uint8_t options_type;            // the BuiltinOptions union member it carries (0 = none)
  std::vector<int> option_widths;  // per slot: bytes of the scalar, 0 for an int32 vector
  TfliteConverter convert;
};

// Null when memfold has no mapping for the code.
const TfliteOpMapping* FindTfliteOp(int32_t code);
// The first mapping (lowest code) whose registry op is `op`, for writers; null when none.
const TfliteOpMapping* FindTfliteOpFor(std::string_view op);

// One axis of STRIDED_SLICE resolved as TFLM's StartForAxis / StopForAxis do (strided_slice_logic):
// the first index kept (*start) and the count of elements, for an axis of size `dim`.
int64_t ResolveStridedAxis(int64_t dim, int64_t begin, int64_t end, int64_t stride, bool begin_all,
                           bool end_all, bool shrink, int64_t* start);

// "CONV_2D", "CUSTOM \"ethos-u\"", "BUILTIN_200".
std::string TfliteOpLabel(int32_t code, const std::string& custom_code);

// TFLite's name of builtin operator `code` ("RESIZE_BILINEAR"), empty beyond the schema; codes
// run from 0 to TfliteBuiltinCount() - 1.
std::string_view TfliteBuiltinName(int32_t code);
int32_t TfliteBuiltinCount();

}  // namespace memfold
