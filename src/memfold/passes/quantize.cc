#include "memfold/passes/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <string_view>

#include "memfold/base/splitmix.h"
#include "memfold/exec/executor.h"
#include "memfold/ir/verify.h"
#include "memfold/ops/registry.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {
namespace {

constexpr int32_t kMaxSymmetric = 127;  // weights use [-127, 127] (TFLite kMaxQuantizedValue)
// Ranges narrower than this are widened around zero so the scale is never 0 (as the TFLite
// MLIR quantiser's ExpandVerySmallRange does).
constexpr float kNearZeroRange = 1.0e-6f;

float ReadFloat(const std::byte* data, int64_t k) {
  float x;
  std::memcpy(&x, data + 4 * k, 4);
  return x;
}

template <typename T>
void WriteAt(Bytes* bytes, int64_t k, T x) {
  std::memcpy(bytes->data() + k * static_cast<int64_t>(sizeof(T)), &x, sizeof(T));
}

// --- calibration ---------------------------------------------------------------------------

Int8Rule RuleOf(const Node& node) { return RulesOf(node).int8; }

// Reads weights (input 1) and a bias (input 2).
bool IsLinear(const Node& node) { return RuleOf(node) == Int8Rule::kLinear; }

// The output shares its first input's quantisation (or every input's).
bool IsSameScale(Int8Rule rule) {
  return rule == Int8Rule::kSameScale || rule == Int8Rule::kSameScaleAll ||
         rule == Int8Rule::kPadFill;
}

// The ops with an int8 form, for messages.
std::string Int8OpNames() {
  std::string names;
  for (const OpDef& def : AllOps()) {
    if (def.int8 != Int8Rule::kNone) names += (names.empty() ? "" : ", ") + std::string(def.name);
  }
  return names;
}

std::string ValueLabel(const Graph& g, ValueId v) { return "value '" + g.value(v).name + "'"; }

Status CheckFloatInputs(const Graph& g, const std::vector<Bytes>& inputs) {
  if (inputs.size() != g.inputs.size()) {
    return Status::Error("calibration: the model has " + std::to_string(g.inputs.size()) +
                         " inputs, an input set has " + std::to_string(inputs.size()));
  }
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Value& v = g.value(g.inputs[k]);
    if (v.dtype != DType::kF32) {
      return Status::Error("quantisation: input '" + v.name + "' is " +
                           std::string(DTypeName(v.dtype)) +
                           "; post-training quantisation takes a float32 model");
    }
    if (static_cast<int64_t>(inputs[k].size()) != v.bytes()) {
      return Status::Error("calibration: input '" + v.name + "' needs " +
                           std::to_string(v.bytes()) + " bytes, got " +
                           std::to_string(inputs[k].size()));
    }
  }
  return Status::Ok();
}

Status Observe(const Graph& g, ValueId v, const std::byte* data, Calibration* ranges) {
  const Value& value = g.value(v);
  if (value.dtype != DType::kF32) return Status::Ok();
  ValueRange& range = (*ranges)[static_cast<size_t>(v)];
  for (int64_t k = 0; k < value.elements(); ++k) {
    const float x = ReadFloat(data, k);
    if (!std::isfinite(x)) {
      return Status::Error("calibration: " + ValueLabel(g, v) +
                           " became NaN or infinite; the float model is not fit to quantise");
    }
    range.Include(x);
  }
  return Status::Ok();
}

// Records every float32 value's range as the executor produces it (graph inputs when they are
// copied in, outputs after each node), stopping the run at the first NaN or infinity.
class RangeRecorder final : public RunMonitor {
 public:
  RangeRecorder(const Graph& g, Calibration* ranges) : g_(g), ranges_(ranges) {}

  Status Started(const std::vector<std::byte*>& where, const std::byte*) override {
    for (ValueId v : g_.inputs)
      MF_RETURN_IF_ERROR(Observe(g_, v, where[static_cast<size_t>(v)], ranges_));
    return Status::Ok();
  }
  Status After(size_t, const Node& node, const KernelContext& args, bool) override {
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      MF_RETURN_IF_ERROR(Observe(g_, node.outputs[k], args.outputs[k].data, ranges_));
    }
    return Status::Ok();
  }

 private:
  const Graph& g_;
  Calibration* ranges_;
};

// --- quantisation rules ----------------------------------------------------------------------

Status CheckQuantizable(const Graph& g) {
  for (ValueId v : g.inputs) {
    if (g.value(v).dtype != DType::kF32) {
      return Status::Error("quantisation: input '" + g.value(v).name + "' is " +
                           std::string(DTypeName(g.value(v).dtype)) +
                           "; post-training quantisation takes a float32 model");
    }
  }
  for (NodeId id : g.schedule) {
    const Node& node = g.node(id);
    if (RuleOf(node) == Int8Rule::kNone) {
      return Status::Error("quantisation: node '" + node.name + "' (" + node.op +
                           ") has no int8 form; int8 models may use " + Int8OpNames());
    }
    const bool linear = IsLinear(node);
    for (size_t k = 1; linear && k < node.inputs.size(); ++k) {
      if (node.inputs[k] != kNoValue && !g.value(node.inputs[k]).is_constant()) {
        return Status::Error(
            "quantisation: node '" + node.name + "' (" + node.op + ") reads " +
            ValueLabel(g, node.inputs[k]) +
            " as weights or bias, but it is computed; int8 layers need constant weights");
      }
    }
    for (ValueId in : node.inputs) {
      if (in != kNoValue && g.value(in).dtype != DType::kF32) {
        return Status::Error("quantisation: node '" + node.name + "' reads " + ValueLabel(g, in) +
                             " of type " + std::string(DTypeName(g.value(in).dtype)) +
                             "; post-training quantisation takes a float32 model");
      }
    }
  }
  return Status::Ok();
}

ValueRange ConstantRange(const Value& v) {
  ValueRange range;
  for (int64_t k = 0; k < v.elements(); ++k) range.Include(ReadFloat(v.data->data(), k));
  return range;
}

// Union-find over values tied by same-scale ops; Root(v) names v's group.
class ScaleGroups {
 public:
  explicit ScaleGroups(const Graph& g) : parent_(static_cast<size_t>(g.num_values())) {
    std::iota(parent_.begin(), parent_.end(), 0);
    for (NodeId id : g.schedule) {
      const Node& node = g.node(id);
      const Int8Rule rule = RuleOf(node);
      if (!IsSameScale(rule)) continue;
      const size_t tied = rule == Int8Rule::kSameScaleAll ? node.inputs.size() : 1;
      for (size_t k = 0; k < tied; ++k) Join(node.inputs[k], node.outputs[0]);
    }
  }
  ValueId Root(ValueId v) {
    while (parent_[static_cast<size_t>(v)] != v) {
      parent_[static_cast<size_t>(v)] =
          parent_[static_cast<size_t>(parent_[static_cast<size_t>(v)])];
      v = parent_[static_cast<size_t>(v)];
    }
    return v;
  }

 private:
  void Join(ValueId a, ValueId b) { parent_[static_cast<size_t>(Root(a))] = Root(b); }
  std::vector<ValueId> parent_;
};

// Constants read as activations (operands of add, mul, concat, ...), not as weights or biases.
std::vector<char> ActivationConstants(const Graph& g) {
  std::vector<char> marked(static_cast<size_t>(g.num_values()), 0);
  for (NodeId id : g.schedule) {
    const Node& node = g.node(id);
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const ValueId in = node.inputs[k];
      if (in == kNoValue || !g.value(in).is_constant() || (IsLinear(node) && k > 0)) continue;
      marked[static_cast<size_t>(in)] = 1;
    }
  }
  return marked;
}

// The quantisation of every activation-like value (inputs, computed values and constants read
// as activations), by same-scale group; softmax outputs (and their group) are fixed.
std::vector<Quantization> ActivationQuantizations(const Graph& g, const Calibration& calibration) {
  ScaleGroups groups(g);
  const auto n = static_cast<size_t>(g.num_values());
  const std::vector<char> activation_constant = ActivationConstants(g);
  std::vector<ValueRange> group_range(n);
  for (ValueId v = 0; v < g.num_values(); ++v) {
    const auto i = static_cast<size_t>(v);
    if (g.value(v).is_constant() && !activation_constant[i]) continue;
    const ValueRange own = g.value(v).is_constant() ? ConstantRange(g.value(v)) : calibration[i];
    group_range[static_cast<size_t>(groups.Root(v))].Include(own);
  }
  std::vector<char> fixed_softmax(n, 0);
  for (NodeId id : g.schedule) {
    const Node& node = g.node(id);
    if (RuleOf(node) == Int8Rule::kFixedSoftmax)
      fixed_softmax[static_cast<size_t>(groups.Root(node.outputs[0]))] = 1;
  }
  std::vector<Quantization> quant(n);
  for (ValueId v = 0; v < g.num_values(); ++v) {
    const auto root = static_cast<size_t>(groups.Root(v));
    quant[static_cast<size_t>(v)] = fixed_softmax[root] ? Quantization{{1.0f / 256.0f}, {-128}, 0}
                                                        : ActivationQuantization(group_range[root]);
  }
  return quant;
}

std::shared_ptr<const Bytes> Share(Bytes bytes) {
  return std::make_shared<const Bytes>(std::move(bytes));
}

// round(x * inverse) in float, rounded half away from zero, clamped to [-127, 127].
int8_t SymmetricQuantize(float x, float inverse) {
  const auto q = static_cast<int32_t>(std::round(x * inverse));
  return static_cast<int8_t>(std::clamp(q, -kMaxSymmetric, kMaxSymmetric));
}

// Calls f(k, c) for every element k of `w` with its index c along `axis`, in element order.
template <typename F>
void ForEachWithChannel(const Value& w, int axis, F f) {
  const int64_t channels = w.shape[static_cast<size_t>(axis)];
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < w.shape.size(); ++d) inner *= w.shape[d];
  const int64_t outer = channels * inner == 0 ? 0 : w.elements() / (channels * inner);
  int64_t k = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t i = 0; i < inner; ++i) f(k++, static_cast<size_t>(c));
    }
  }
}

// Filter quantised per channel along `axis` (TFLite SymmetricPerChannelQuantization): scale =
// max|w| / 127 per channel, values round(w * 127 / max|w|).
Value PerChannelFilter(const Value& w, int axis) {
  const int64_t channels = w.shape[static_cast<size_t>(axis)];
  const std::byte* data = w.data->data();
  std::vector<float> half_range(static_cast<size_t>(channels), 0.0f);
  ForEachWithChannel(w, axis, [&](int64_t k, size_t c) {
    half_range[c] = std::max(half_range[c], std::abs(ReadFloat(data, k)));
  });
  Quantization quant{{}, std::vector<int64_t>(static_cast<size_t>(channels), 0), axis};
  std::vector<float> inverse;
  for (float h : half_range) {
    quant.scale.push_back(h / static_cast<float>(kMaxSymmetric));
    inverse.push_back(h == 0.0f ? 0.0f : static_cast<float>(kMaxSymmetric) / h);
  }
  Bytes q(static_cast<size_t>(w.elements()));
  ForEachWithChannel(w, axis, [&](int64_t k, size_t c) {
    q[static_cast<size_t>(k)] =
        static_cast<std::byte>(SymmetricQuantize(ReadFloat(data, k), inverse[c]));
  });
  Value out = w;
  out.dtype = DType::kI8;
  out.quant = std::move(quant);
  out.data = Share(std::move(q));
  return out;
}

// Weights quantised per tensor (TFLite SymmetricQuantizeFloats): one scale max|w| / 127.
Value PerTensorFilter(const Value& w) {
  const ValueRange range = ConstantRange(w);
  const float half_range = std::max(std::abs(range.min), std::abs(range.max));
  const float scale = half_range == 0.0f ? 1.0f : half_range / static_cast<float>(kMaxSymmetric);
  const float inverse = half_range == 0.0f ? 0.0f : static_cast<float>(kMaxSymmetric) / half_range;
  Bytes q(static_cast<size_t>(w.elements()));
  for (int64_t k = 0; k < w.elements(); ++k)
    WriteAt(&q, k, SymmetricQuantize(ReadFloat(w.data->data(), k), inverse));
  Value out = w;
  out.dtype = DType::kI8;
  out.quant = Quantization{{scale}, {0}, 0};
  out.data = Share(std::move(q));
  return out;
}

// Bias quantised to int32 with scale input_scale x filter_scale[c] (TFLite
// SymmetricPerChannelBiasQuantize; one scale for a per-tensor filter).
Value Int32Bias(const Value& bias, float input_scale, const Quantization& filter) {
  const bool per_channel = filter.per_channel();
  Quantization quant{{}, {}, 0};
  Bytes q(static_cast<size_t>(bias.elements()) * 4);
  for (int64_t c = 0; c < bias.elements(); ++c) {
    const float scale = input_scale * filter.scale[per_channel ? static_cast<size_t>(c) : 0];
    const float inverse =
        scale == 0.0f ? 0.0f : static_cast<float>(1.0 / static_cast<double>(scale));
    const double rounded = std::round(ReadFloat(bias.data->data(), c) * inverse);
    constexpr double kLimit = std::numeric_limits<int32_t>::max();
    WriteAt(&q, c, static_cast<int32_t>(std::clamp(rounded, -kLimit, kLimit)));
    if (per_channel || c == 0) quant.scale.push_back(scale);
  }
  quant.zero_point.assign(quant.scale.size(), 0);
  Value out = bias;
  out.dtype = DType::kI32;
  out.quant = std::move(quant);
  out.data = Share(std::move(q));
  return out;
}

// A constant activation operand: q = round(x / scale) + zero point, clamped to int8.
Value AsymmetricConstant(const Value& v, const Quantization& quant) {
  Bytes q(static_cast<size_t>(v.elements()));
  for (int64_t k = 0; k < v.elements(); ++k) {
    const float x = ReadFloat(v.data->data(), k) / quant.scale[0];
    const auto level = static_cast<int64_t>(std::round(x)) + quant.zero_point[0];
    WriteAt(&q, k, static_cast<int8_t>(std::clamp<int64_t>(level, -128, 127)));
  }
  Value out = v;
  out.dtype = DType::kI8;
  out.quant = quant;
  out.data = Share(std::move(q));
  return out;
}

// Builds the int8 graph node by node through the registry, so every node is re-validated.
class Int8Builder {
 public:
  Int8Builder(const Graph& g, const Calibration& calibration)
      : g_(g),
        quant_(ActivationQuantizations(g, calibration)),
        mapped_(static_cast<size_t>(g.num_values()), kNoValue) {
    q_.name = g.name;
  }

  Result<Graph> Build() {
    for (ValueId v : g_.inputs) {
      Value input = g_.value(v);
      input.dtype = DType::kI8;
      input.quant = quant_[static_cast<size_t>(v)];
      mapped_[static_cast<size_t>(v)] = q_.AddValue(std::move(input));
      q_.inputs.push_back(mapped_[static_cast<size_t>(v)]);
    }
    for (NodeId id : g_.schedule) MF_RETURN_IF_ERROR(AddNode(g_.node(id)));
    for (ValueId v : g_.outputs) {
      q_.outputs.push_back(mapped_[static_cast<size_t>(v)]);
      q_.value(q_.outputs.back()).role = g_.value(v).role;
    }
    MF_RETURN_IF_ERROR(VerifyGraph(q_));
    MF_RETURN_IF_ERROR(CheckShapes(q_));
    return std::move(q_);
  }

 private:
  Status AddNode(const Node& node) {
    std::vector<ValueId> inputs;
    Quantization filter;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const ValueId in = node.inputs[k];
      if (in == kNoValue || !g_.value(in).is_constant()) {
        inputs.push_back(in == kNoValue ? kNoValue : mapped_[static_cast<size_t>(in)]);
        continue;
      }
      Value constant = QuantizeConstant(node, k, &filter);
      inputs.push_back(q_.AddValue(std::move(constant)));
    }
    MF_ASSIGN_OR_RETURN(std::vector<ValueId> outputs,
                        AddOp(&q_, node.op, inputs, QuantizedAttrs(node), node.name));
    q_.node(q_.num_nodes() - 1).layer = node.layer;
    for (size_t k = 0; k < outputs.size(); ++k) {
      const auto old = static_cast<size_t>(node.outputs[k]);
      Value& out = q_.value(outputs[k]);
      out.name = g_.value(node.outputs[k]).name;
      out.quant = quant_[old];
      mapped_[old] = outputs[k];
    }
    return Status::Ok();
  }

  // A pad's fill value in the stored int8 of its output (0.0 becomes the zero point, as
  // TFLite's converter writes PAD); other nodes' attributes unchanged.
  Attrs QuantizedAttrs(const Node& node) const {
    Attrs attrs = node.attrs;
    if (RuleOf(node) != Int8Rule::kPadFill) return attrs;
    const Quantization& q = quant_[static_cast<size_t>(node.outputs[0])];
    const double stored = std::nearbyint(node.attrs.Float("value") / q.scale[0]) +
                          static_cast<double>(q.zero_point[0]);
    attrs.Set("value", std::clamp(stored, -128.0, 127.0));
    return attrs;
  }

  // The int8 / int32 form of constant operand `k` of `node`; a filter's quantisation is kept
  // in *filter for the bias that follows it.
  Value QuantizeConstant(const Node& node, size_t k, Quantization* filter) {
    const Value& v = g_.value(node.inputs[k]);
    if (IsLinear(node) && k == 1) {
      const int axis = RulesOf(node).int8_filter_axis;
      Value w = axis < 0 ? PerTensorFilter(v) : PerChannelFilter(v, axis);
      *filter = *w.quant;
      return w;
    }
    if (IsLinear(node) && k == 2) {
      return Int32Bias(v, quant_[static_cast<size_t>(node.inputs[0])].scale[0], *filter);
    }
    return AsymmetricConstant(v, quant_[static_cast<size_t>(node.inputs[k])]);
  }

  const Graph& g_;
  std::vector<Quantization> quant_;
  std::vector<ValueId> mapped_;
  Graph q_;
};

}  // namespace

void ValueRange::Include(float x) {
  if (empty()) {
    min = max = x;
    return;
  }
  min = std::min(min, x);
  max = std::max(max, x);
}

void ValueRange::Include(const ValueRange& other) {
  if (other.empty()) return;
  Include(other.min);
  Include(other.max);
}

Quantization ActivationQuantization(ValueRange range) {
  float min = range.empty() ? 0.0f : std::min(range.min, 0.0f);
  float max = range.empty() ? 0.0f : std::max(range.max, 0.0f);
  if (max - min < kNearZeroRange) {
    min = std::min(min, -kNearZeroRange / 2);
    max = std::max(max, kNearZeroRange / 2);
  }
  constexpr float kLow = -128.0f, kHigh = 127.0f;
  const float scale = (max - min) / (kHigh - kLow);
  const float zero_point_from_min = kLow - min / scale;
  int64_t zero_point = 0;
  if (zero_point_from_min < kLow) {
    zero_point = -128;
  } else if (zero_point_from_min > kHigh) {
    zero_point = 127;
  } else {
    zero_point = static_cast<int64_t>(std::round(zero_point_from_min));
  }
  return Quantization{{scale}, {zero_point}, 0};
}

std::vector<std::vector<Bytes>> CalibrationInputs(const Graph& float_graph) {
  // Element k of each set: the contract's default sin(0.01 k); a slower, phase-shifted wave
  // of amplitude 0.9; uniform noise in [-1, 1) from a counter-based generator.
  auto wave = [](int64_t k) { return static_cast<float>(std::sin(0.01 * static_cast<double>(k))); };
  auto slow = [](int64_t k) {
    return static_cast<float>(0.9 * std::cos(0.0037 * static_cast<double>(k) + 1.0));
  };
  auto noise = [](int64_t k) {
    const uint64_t bits = SplitMix64(0x5EEDull + static_cast<uint64_t>(k));
    return static_cast<float>(bits >> 40) / static_cast<float>(1 << 23) - 1.0f;
  };
  std::vector<std::vector<Bytes>> sets(3);
  for (ValueId v : float_graph.inputs) {
    const Value& value = float_graph.value(v);
    const int64_t n = value.dtype == DType::kF32 ? value.elements() : 0;
    for (auto& set : sets) set.emplace_back(static_cast<size_t>(value.bytes()));
    for (int64_t k = 0; k < n; ++k) {
      WriteAt(&sets[0].back(), k, wave(k));
      WriteAt(&sets[1].back(), k, slow(k));
      WriteAt(&sets[2].back(), k, noise(k));
    }
  }
  return sets;
}

Result<Calibration> Calibrate(const Graph& float_graph,
                              const std::vector<std::vector<Bytes>>& input_sets) {
  Calibration ranges(static_cast<size_t>(float_graph.num_values()));
  // The executor runs the float graph in its greedy arena (memory of the peak, not of every
  // value), as `memfold run` would, and the recorder watches it.
  MF_ASSIGN_OR_RETURN(GraphPlan plan, PlanGraph(float_graph, "greedy"));
  for (const std::vector<Bytes>& inputs : input_sets) {
    MF_RETURN_IF_ERROR(CheckFloatInputs(float_graph, inputs));
    RangeRecorder recorder(float_graph, &ranges);
    Result<RunOutputs> run = RunPlanned(float_graph, plan.liveness, plan.plan, inputs,
                                        {.poison = false, .monitor = &recorder});
    if (!run.ok()) return Status::Error("calibration: " + run.status().message());
  }
  return ranges;
}

Result<Graph> QuantizeInt8(const Graph& float_graph, const Calibration& calibration) {
  MF_RETURN_IF_ERROR(CheckQuantizable(float_graph));
  if (static_cast<int32_t>(calibration.size()) != float_graph.num_values()) {
    return Status::Error("quantisation: the calibration has " + std::to_string(calibration.size()) +
                         " ranges but the model has " + std::to_string(float_graph.num_values()) +
                         " values");
  }
  return Int8Builder(float_graph, calibration).Build();
}

Result<Graph> QuantizePostTraining(const Graph& float_graph) {
  MF_RETURN_IF_ERROR(CheckQuantizable(float_graph));
  MF_ASSIGN_OR_RETURN(Calibration calibration,
                      Calibrate(float_graph, CalibrationInputs(float_graph)));
  return QuantizeInt8(float_graph, calibration);
}

}  // namespace memfold
