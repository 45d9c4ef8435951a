// The translation of PyTorch aten operators (as AOTAutograd traces them, PyTorch 1.13) into
// memfold ops: a table from the aten target ("aten.addmm.default") to the memfold op, its
// inputs and attributes. Only operators whose memory behaviour memfold models exactly are
// mapped; the joint-graph reader (joint_graph.h) makes everything else an opaque node that is
// never recomputed, and also falls back to one when memfold's inference of the mapped node
// disagrees with the traced types.
//
// Views that keep their element count (view, t, transpose, permute, unsqueeze, detach, ...)
// are PyTorch aliases: no new storage. They map to memfold's alias op (reshape) with the traced
// shape, which models their memory exactly; the translated graph is for planning only and is
// never executed (its backward operators are PyTorch's). Scalar operands of element-wise ops
// become constant memfold values. O(arguments) per call.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"

namespace memfold {

struct AtenTranslation {
  std::string op;
  std::vector<ValueId> inputs;
  Attrs attrs;
};

// The memfold form of one aten call whose positional arguments are `args` (a tensor is
// {"value": id}, a list of tensors {"values": [ids]}) and whose outputs are `outputs`;
// nullopt when the target has no translation or these arguments fall outside what it covers
// (e.g. addmm with a computed bias, batch norm without affine parameters). May add constant
// values (scalar operands) to `graph`.
std::optional<AtenTranslation> TranslateAten(Graph* graph, std::string_view target,
                                             const nlohmann::json& args,
                                             const std::vector<ValueId>& outputs);

// The aten targets the table maps, sorted (for tests and documentation).
std::vector<std::string> MappedAtenTargets();

// Whether the target is a view that keeps its element count (its output shares its input's
// storage): the reader resolves views of parameters to the parameters themselves.
bool IsAtenAliasView(std::string_view target);

}  // namespace memfold
