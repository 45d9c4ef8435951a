// The state of one ONNX import and the operations every operator's converter is written in
// (onnx_converters.h declares the converters, onnx_ops.cc's table names them, onnx_reader.cc
// drives them).
//
// Layout. ONNX images are NCHW; memfold's window kernels (TFLite's) are NHWC. Each ONNX tensor
// is bound to a memfold value that holds it either as it is ("plain") or channels-last: rank
// >= 3 with axis 1 moved to the end. Window operators produce channels-last values, elementwise
// operators, pools, reductions, concatenations and softmax over channels keep them, and only an
// operator that needs ONNX's order (a reshape, a matmul, a graph output) gets a transpose, made
// once per value. A channels-last value whose spatial dimensions are all 1 needs no transpose:
// its bytes are already in ONNX order, and a reshape views them.
//
// Constants. Every operator whose inputs are all constants is evaluated at import (the file's
// shapes are static, so shape computations such as Shape -> Gather -> Concat -> Reshape fold
// away): by memfold's own kernel when it has one for the type, else, for elementwise
// arithmetic, in double precision (exact for the integers of shape arithmetic).
//
// Quantisation. A DequantizeLinear binds a quantized tensor (below); an operator whose inputs
// are quantized and whose result a QuantizeLinear reads next becomes memfold's int8 kernel
// (QuantizedConsumer, QuantizedResult), others see real numbers. QOperator nodes (QLinearConv,
// ...) convert as the float operator they stand for over quantized operands (StandFor).
//
// Bounds. Values from the file that feed shape arithmetic are kept within 2^31 and every tensor
// the importer makes within 2^31 bytes, so hostile files fail with a message, never overflow.
//
// Complexity: O(file size) plus the folded operators' work.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "memfold/base/status.h"
#include "memfold/ir/graph.h"
#include "onnx/onnx_pb.h"

namespace memfold::onnx_import {

inline constexpr int64_t kMaxValue = int64_t{1} << 31;
inline constexpr int64_t kMaxTensorBytes = (int64_t{1} << 31) - 1;
// Constants the importer computes (folded operators, ConstantOfShape, Range).
inline constexpr int64_t kMaxConstantBytes = int64_t{1} << 28;

// An ONNX tensor as memfold holds it. `quantized`: ONNX sees real numbers (a DequantizeLinear's
// output) and memfold holds their integer form, the value's `quant` saying how; Input() hands
// such a tensor to a converter as floats (a dequantize, made once), QuantizedInput() as it is.
struct Tensor {
  ValueId id = kNoValue;
  bool channels_last = false;
  bool quantized = false;
};

// Where a node's result is quantised next (QDQ form): the QuantizeLinear that reads it (after
// an optional Relu or Clip(0, 6), fused as `activation`), its parameters, and the names a
// quantised result binds.
struct QuantizedOutput {
  Quantization quant;
  DType dtype = DType::kI8;
  std::string activation = "none";
  std::vector<std::string> real_names;  // the node's own output, and the Relu's
  std::string quantized_name;           // the QuantizeLinear's output
};

class Importer {
 public:
  Importer(Graph* graph, std::string label, int64_t opset);

  // --- the node being converted
  void Begin(const onnx::NodeProto& node, int index);
  const onnx::NodeProto& node() const { return *node_; }
  int64_t opset() const { return opset_; }
  // A message naming the file and the node: "m.onnx: node 12 (Conv \"conv1\"): WHAT".
  Status Error(const std::string& what) const;

  // --- inputs
  int num_inputs() const {
    return stand_inputs_ ? static_cast<int>(stand_inputs_->size()) : node_->input_size();
  }
  bool HasInput(int k) const;
  // Input k as real numbers (a quantized tensor is dequantized first, once).
  Result<Tensor> Input(int k);
  // Input k in integer form when it is a quantized tensor (the output of a DequantizeLinear),
  // else nullopt.
  std::optional<Tensor> QuantizedInput(int k) const;
  // The tensor bound to input k as it is (for QuantizeLinear and DequantizeLinear themselves).
  Result<Tensor> RawInput(int k) const;
  const Value& ValueOf(Tensor t) const { return graph_->value(t.id); }
  // The tensor's shape in ONNX's axis order.
  Shape OnnxShape(Tensor t) const;
  int Rank(Tensor t) const { return static_cast<int>(ValueOf(t).shape.size()); }
  bool IsConstant(Tensor t) const { return ValueOf(t).is_constant(); }
  // A constant's elements as integers (any integer or float type) or as doubles; an error
  // naming `what` when the tensor is computed, or (`bounded`) when a value lies beyond
  // +-kMaxValue (shapes, pads and axes; Slice's ends may be INT64_MAX).
  Result<std::vector<int64_t>> ConstInts(Tensor t, const std::string& what,
                                         bool bounded = true) const;
  Result<std::vector<double>> ConstDoubles(Tensor t, const std::string& what) const;

  // --- attributes
  const onnx::AttributeProto* Attr(std::string_view name) const;
  int64_t Int(std::string_view name, int64_t fallback) const;
  double Float(std::string_view name, double fallback) const;
  std::string Str(std::string_view name, std::string fallback) const;
  // Integer lists, each value clamped to +-kMaxValue (sizes, strides, pads, axes: beyond it a
  // hostile file could overflow the arithmetic of shapes; such values fail shape checks).
  std::vector<int64_t> Ints(std::string_view name, std::vector<int64_t> fallback = {}) const;
  // `shape`'s element count, or an error when a dimension is negative or the tensor would hold
  // more than kMaxTensorBytes of `dtype` (TFLM's sizes are 32-bit).
  Result<int64_t> CheckedElements(const Shape& shape, DType dtype = DType::kI64) const;

  // --- layout
  // The tensor in ONNX's order: a transpose (or a reshape, for 1x1 spatial) when it is held
  // channels-last; made once per value.
  Result<ValueId> Plain(Tensor t);
  // The tensor channels-last, after reshaping it to `rank` (leading 1s) when it has fewer
  // axes; `rank` 0 keeps its own. Precondition: the (padded) rank is >= 3.
  Result<ValueId> ChannelsLast(Tensor t, int rank = 0);
  // Where ONNX axis `axis` (may be negative) of a tensor of rank `rank` lies in its memfold
  // value; an error when it is out of range.
  Result<int64_t> Axis(int64_t axis, int rank, bool channels_last) const;

  // --- emitting
  // Adds a memfold node (folded to a constant when its inputs are all constants) and returns
  // its outputs.
  Result<std::vector<ValueId>> EmitAll(std::string_view op, std::vector<ValueId> inputs,
                                       Attrs attrs = {});
  Result<ValueId> Emit(std::string_view op, std::vector<ValueId> inputs, Attrs attrs = {});
  ValueId Constant(DType dtype, Shape shape, Bytes bytes, const std::string& name = "");
  ValueId FloatConstant(Shape shape, const std::vector<float>& values);
  // Binds output `k` of the node to a value; checks its shape against any the file states.
  Status Output(int k, ValueId v, bool channels_last = false);
  // Binds output `k` to a quantized tensor: ONNX sees its real numbers, memfold holds `v`.
  Status OutputQuantized(int k, ValueId v, bool channels_last);
  // QDQ: where output `k` is quantised next, when its only reader is a QuantizeLinear of
  // constant parameters (through at most one Relu or Clip(0, 6)); nullopt otherwise.
  std::optional<QuantizedOutput> QuantizedConsumer(int k) const;
  // Binds an integer result computed for `q`: the QuantizeLinear's output to it, and the real
  // outputs it stands for to it as quantized tensors; the value takes q's quantisation.
  Status QuantizedResult(ValueId v, const QuantizedOutput& q, bool channels_last);
  // The real values of a quantized tensor: a dequantize node, or for a constant its real data.
  Result<ValueId> Dequantized(Tensor t);
  // Whether every output of `node` was bound by an earlier node's quantized result (a Relu or
  // QuantizeLinear folded into it), so the reader skips it.
  bool Claimed(const onnx::NodeProto& node) const;
  // The node's unknown operator as an opaque node of the file's output shapes.
  Status Opaque(const std::string& why);
  // Fuses `activation` ("relu", "relu6") into the node that computes the node's input 0 (a
  // convolution, fully-connected layer or elementwise add, sub or mul without one), as TFLite's
  // converter does, when nothing else reads that value; false when it cannot.
  bool FuseActivation(Tensor x, const std::string& activation);

  // QOperator form (QLinearConv, com.microsoft's QLinearAdd, ...): the node is converted as the
  // float operator it stands for, by that operator's converter, which then reads `inputs`
  // (quantized tensors, absent ones nullopt) in place of the node's and quantizes its result
  // into `output` (a quantized path binds it directly; a float result gets a quantize node).
  void StandFor(std::vector<std::optional<Tensor>> inputs, QuantizedOutput output);

  // --- the reader's side
  Status BindName(const std::string& name, Tensor t);
  std::optional<Tensor> Find(const std::string& name) const;
  // Shapes and types the file states for values (graph outputs and value_info), fully static.
  void StateType(const std::string& name, DType dtype, Shape shape);
  // How many node inputs and graph outputs read each name, and which nodes read it.
  void CountUses(std::map<std::string, int, std::less<>> uses,
                 std::map<std::string, std::vector<const onnx::NodeProto*>, std::less<>> readers) {
    uses_ = std::move(uses);
    readers_ = std::move(readers);
  }
  int Uses(const std::string& name) const;
  Graph& graph() { return *graph_; }

 private:
  Result<std::vector<ValueId>> Fold(std::string_view op, const std::vector<ValueId>& inputs,
                                    const Attrs& attrs);
  std::string NodeLabel() const;
  std::string NodeName() const;  // the ONNX node's name, or "TYPE_INDEX" when it has none
  // The one node that reads `name` (nothing else, not a graph output), of the default domain.
  const onnx::NodeProto* SoleReader(const std::string& name) const;

  Graph* graph_;
  std::string label_;
  int64_t opset_;
  const onnx::NodeProto* node_ = nullptr;
  int index_ = 0;
  ValueId first_new_value_ = 0;  // values and nodes made while converting the node
  NodeId first_new_node_ = 0;
  std::map<std::string, int, std::less<>> uses_;
  std::map<std::string, std::vector<const onnx::NodeProto*>, std::less<>> readers_;
  std::map<ValueId, ValueId> real_of_;  // quantized value -> its dequantized copy
  std::set<std::string, std::less<>> claimed_;
  std::optional<std::vector<std::optional<Tensor>>> stand_inputs_;
  std::optional<QuantizedOutput> stand_output_;
  // Binds output 0 of a QOperator node: `v` quantized into stand_output_'s parameters.
  Status StandOutput(ValueId v, bool channels_last);
  std::map<ValueId, int> bindings_;  // how many names each value is bound to
  std::map<std::string, Tensor, std::less<>> names_;
  std::map<std::string, std::pair<DType, Shape>, std::less<>> stated_;
  std::map<ValueId, ValueId> plain_of_;          // channels-last value -> its plain copy
  std::map<ValueId, ValueId> channels_last_of_;  // plain value -> its channels-last copy
};

// An initializer's or a Constant's tensor: its value (name, type, shape) and its data in memfold's
// little-endian layout; an error naming `where` for types memfold does not store, external or
// segmented data, or data that does not match the dimensions. External data is read from
// `directory` (empty: an error).
Result<std::pair<Value, Bytes>> TensorOfProto(const onnx::TensorProto& t, const std::string& where,
                                              const std::string& directory = "");

// ONNX's element type code -> memfold's, or nullopt for a type memfold has no storage for.
std::optional<DType> DTypeOfOnnx(int32_t onnx_type);

// The node's converter: reads its inputs and attributes through the importer and binds its
// outputs.
using Converter = Status (*)(Importer& im);
// The converter of an ONNX operator ("Conv" of the default domain, "com.microsoft:QLinearAdd"
// of another), or null when memfold has none.
Converter FindConverter(std::string_view op_type);
// Every operator memfold converts, sorted.
std::vector<std::string_view> ConvertedOperators();

}  // namespace memfold::onnx_import
