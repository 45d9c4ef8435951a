#include "fuzz/seed_graphs.h"

#include <cstring>
#include <fstream>
#include <iterator>

#include "memfold/io/plan_export.h"
#include "memfold/io/tflite_graph_writer.h"
#include "memfold/io/tflite_reader.h"
#include "memfold/io/tflite_writer.h"
#include "memfold/ir/verify.h"
#include "memfold/ops/builder.h"
#include "memfold/ops/registry.h"
#include "memfold/plan/plan_graph.h"
#include "memfold/zoo/zoo.h"

namespace memfold::fuzz {
namespace {

using Ints = std::vector<int64_t>;

Quantization PerTensor(float scale, int64_t zero_point) { return {{scale}, {zero_point}, 0}; }

// A graph built value by value, for int8 models (GraphBuilder makes float32 weights only).
// The first error is kept; later calls return kNoValue.
class QuantizedBuilder {
 public:
  ValueId Input(const std::string& name, Shape shape) {
    Value v{.name = name, .dtype = DType::kF32, .shape = std::move(shape), .role = Role::kInput};
    const ValueId id = graph_.AddValue(std::move(v));
    graph_.inputs.push_back(id);
    return id;
  }

  // Constant of `dtype` (int8 or int32) with deterministic small values.
  ValueId Constant(const std::string& name, DType dtype, Shape shape, Quantization quant) {
    const int64_t n = NumElements(shape);
    auto data =
        std::make_shared<Bytes>(static_cast<size_t>(n * static_cast<int64_t>(ElementBytes(dtype))));
    for (int64_t k = 0; k < n; ++k) {
      if (dtype == DType::kI8) {
        (*data)[static_cast<size_t>(k)] =
            static_cast<std::byte>(static_cast<int8_t>((k * 37 + 11) % 255 - 127));
      } else {
        const auto bias = static_cast<int32_t>((k * 101) % 400 - 200);
        std::memcpy(data->data() + 4 * k, &bias, 4);
      }
    }
    Value v{.name = name,
            .dtype = dtype,
            .shape = std::move(shape),
            .role = Role::kWeight,
            .quant = std::move(quant),
            .data = std::move(data)};
    return graph_.AddValue(std::move(v));
  }

  ValueId Op(const std::string& op, std::vector<ValueId> inputs, Attrs attrs,
             const std::string& name, std::optional<Quantization> quant) {
    if (!status_.ok()) return kNoValue;
    Result<std::vector<ValueId>> out =
        AddOp(&graph_, op, std::move(inputs), std::move(attrs), name);
    if (!out.ok()) {
      status_ = out.status();
      return kNoValue;
    }
    graph_.value(out->front()).quant = std::move(quant);
    return out->front();
  }

  Result<Graph> Finish(ValueId output) {
    MF_RETURN_IF_ERROR(status_);
    graph_.outputs = {output};
    graph_.value(output).role = Role::kOutput;
    graph_.name = "quantized";
    MF_RETURN_IF_ERROR(VerifyGraph(graph_));
    return std::move(graph_);
  }

 private:
  Graph graph_;
  Status status_;
};

Result<Bytes> WrittenZoo(const std::string& spec) {
  MF_ASSIGN_OR_RETURN(Graph g, BuildZooModel(spec));
  return GraphToTflite(g);
}

// The file with `planner`'s offsets as its OfflineMemoryAllocation.
Result<Bytes> WithOwnPlan(const Bytes& file, const std::string& planner) {
  MF_ASSIGN_OR_RETURN(TfliteModel model, ParseTflite(file, "seed"));
  MF_ASSIGN_OR_RETURN(GraphPlan gp, PlanGraph(model.graph, planner));
  std::vector<int32_t> offsets = ValueOffsets(model.graph, gp);
  offsets.resize(static_cast<size_t>(model.total_tensors), -1);
  return WithOfflinePlan(model, offsets);
}

// The mixed graph with every value and node named to break printers: markup, quotes, a
// control byte and bytes that are not UTF-8 (a lone continuation byte, an overlong encoding,
// 0xFF). Names stay distinct.
Result<Bytes> HostileNames() {
  MF_ASSIGN_OR_RETURN(Graph g, MixedFloatGraph());
  const std::string hostile = "</title><script>\"x\"&amp;\x01\x80\xc0\xaf\xff";
  for (ValueId v = 0; v < g.num_values(); ++v) g.value(v).name = hostile + std::to_string(v);
  for (NodeId n = 0; n < g.num_nodes(); ++n) g.node(n).name = hostile + "op" + std::to_string(n);
  return GraphToTflite(g);
}

Result<Bytes> FilePrefix(const std::string& path, size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error(path + ": cannot open the file");
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  data.resize(std::min(data.size(), bytes));
  const auto* begin = reinterpret_cast<const std::byte*>(data.data());
  return Bytes(begin, begin + data.size());
}

}  // namespace

// input [1,4,4,2] -> depthwise (x2, stride 2, relu6) -> pad -> avg pool (valid) -> transpose
// -> reshape -> hard_swish -> sigmoid * tanh, - , max, min -> concat -> fully connected (relu)
// -> softmax (beta 0.5); a second output: mean over H, W (keepdims) -> reshape -> relu.
Result<Graph> MixedFloatGraph() {
  GraphBuilder b("mixed");
  const ValueId x = b.Input("input", {1, 4, 4, 2});
  Attrs dw = ConvAttrs(2, "relu6");
  const ValueId d = b.Op(
      "depthwise_conv2d",
      {x, b.LayerWeight("dw/weights", {1, 3, 3, 4}, 9), b.Weight("dw/bias", {4}, 0.1f)}, dw, "dw");
  const ValueId p = b.Op("pad", {d}, Attrs({{"paddings", Ints{0, 0, 1, 1, 1, 1, 0, 0}}}), "pad");
  const ValueId a = b.Op("avg_pool2d", {p}, PoolAttrs(2, 2, 1, "valid"), "pool");
  const ValueId t = b.Op("transpose", {a}, Attrs({{"perm", Ints{0, 3, 1, 2}}}), "transpose");
  const ValueId r = b.Op("reshape", {t}, Attrs({{"shape", Ints{1, 36}}}), "flatten");
  const ValueId h = b.Op("hard_swish", {r}, {}, "hard_swish");
  const ValueId m =
      b.Op("mul", {b.Op("sigmoid", {h}, {}, "sigmoid"), b.Op("tanh", {h}, {}, "tanh")}, {}, "gate");
  const ValueId s =
      b.Op("sub", {m, h}, Attrs({{"activation", std::string("relu_n1_to_1")}}), "diff");
  const ValueId c = b.Op("concat", {b.Op("max", {s, m}, {}, "max"), b.Op("min", {s, m}, {}, "min")},
                         Attrs({{"axis", int64_t{1}}}), "join");
  const ValueId f =
      b.Op("fully_connected",
           {c, b.LayerWeight("fc/weights", {4, 72}, 72), b.Weight("fc/bias", {4}, 0.1f)},
           Attrs({{"activation", std::string("relu")}}), "fc");
  const ValueId probabilities = b.Op("softmax", {f}, Attrs({{"beta", 0.5}}), "probabilities");
  const ValueId mean =
      b.Op("mean", {a}, Attrs({{"axes", Ints{1, 2}}, {"keepdims", int64_t{1}}}), "mean");
  const ValueId pooled = b.Op(
      "relu", {b.Op("reshape", {mean}, Attrs({{"shape", Ints{1, 4}}}), "squeeze")}, {}, "pooled");
  return b.Finish({probabilities, pooled});
}

// input f32 [1,6,6,2] -> quantize -> conv2d (per-channel, relu) -> depthwise (per-channel,
// stride 2) -> reshape -> fully connected (per-tensor) -> add -> softmax -> dequantize.
Result<Graph> QuantizedGraph() {
  QuantizedBuilder b;
  const ValueId x = b.Input("input", {1, 6, 6, 2});
  const ValueId q =
      b.Op("quantize", {x}, Attrs({{"dtype", std::string("i8")}}), "quantize", PerTensor(0.02f, 3));
  const ValueId conv_w = b.Constant("conv/weights", DType::kI8, {4, 3, 3, 2},
                                    {{0.01f, 0.02f, 0.015f, 0.03f}, {0, 0, 0, 0}, 0});
  const ValueId conv_b = b.Constant("conv/bias", DType::kI32, {4},
                                    {{0.0002f, 0.0004f, 0.0003f, 0.0006f}, {0, 0, 0, 0}, 0});
  const ValueId conv =
      b.Op("conv2d", {q, conv_w, conv_b}, ConvAttrs(1, "relu"), "conv", PerTensor(0.05f, -10));
  const ValueId dw_w = b.Constant("dw/weights", DType::kI8, {1, 3, 3, 4},
                                  {{0.02f, 0.01f, 0.03f, 0.02f}, {0, 0, 0, 0}, 3});
  const ValueId dw_b = b.Constant("dw/bias", DType::kI32, {4},
                                  {{0.001f, 0.0005f, 0.0015f, 0.001f}, {0, 0, 0, 0}, 0});
  const ValueId dw =
      b.Op("depthwise_conv2d", {conv, dw_w, dw_b}, ConvAttrs(2, "none"), "dw", PerTensor(0.04f, 2));
  const ValueId flat =
      b.Op("reshape", {dw}, Attrs({{"shape", Ints{1, 36}}}), "flatten", PerTensor(0.04f, 2));
  const ValueId fc_w = b.Constant("fc/weights", DType::kI8, {5, 36}, PerTensor(0.01f, 0));
  const ValueId fc_b = b.Constant("fc/bias", DType::kI32, {5}, PerTensor(0.0004f, 0));
  const ValueId fc = b.Op("fully_connected", {flat, fc_w, fc_b}, {}, "fc", PerTensor(0.1f, -5));
  const ValueId sum = b.Op("add", {fc, fc}, {}, "double", PerTensor(0.2f, -5));
  const ValueId sm = b.Op("softmax", {sum}, Attrs({{"output_dtype", std::string("i8")}}), "softmax",
                          PerTensor(1.0f / 256, -128));
  return b.Finish(b.Op("dequantize", {sm}, {}, "probabilities", std::nullopt));
}

Result<std::vector<std::pair<std::string, Bytes>>> SeedFiles(const std::string& shared_dir) {
  std::vector<std::pair<std::string, Bytes>> seeds;
  MF_ASSIGN_OR_RETURN(Bytes mlp, WrittenZoo("mlp,in=4,hidden=4,layers=1"));
  MF_ASSIGN_OR_RETURN(Bytes cnn, WrittenZoo("cnn,res=8,channels=2"));
  MF_ASSIGN_OR_RETURN(Graph mixed_graph, MixedFloatGraph());
  MF_ASSIGN_OR_RETURN(Bytes mixed, GraphToTflite(mixed_graph));
  MF_ASSIGN_OR_RETURN(Graph quantized_graph, QuantizedGraph());
  MF_ASSIGN_OR_RETURN(Bytes quantized, GraphToTflite(quantized_graph));
  MF_ASSIGN_OR_RETURN(Bytes cnn_greedy, WithOwnPlan(cnn, "greedy"));
  MF_ASSIGN_OR_RETURN(Bytes cnn_diagonal, WithOwnPlan(cnn, "diagonal"));
  MF_ASSIGN_OR_RETURN(Bytes mixed_diagonal, WithOwnPlan(mixed, "diagonal"));
  MF_ASSIGN_OR_RETURN(Bytes hostile, HostileNames());
  MF_ASSIGN_OR_RETURN(
      Bytes hello_prefix,
      FilePrefix(shared_dir + "/models/tflite-micro/hello_world_float.tflite", 640));
  MF_ASSIGN_OR_RETURN(
      Bytes kws_prefix,
      FilePrefix(shared_dir + "/models/tflite-micro/keyword_scrambled.tflite", 640));
  seeds.emplace_back("seed_zoo_mlp.tflite", std::move(mlp));
  seeds.emplace_back("seed_zoo_cnn.tflite", std::move(cnn));
  seeds.emplace_back("seed_mixed_f32.tflite", std::move(mixed));
  seeds.emplace_back("seed_quantized_i8.tflite", std::move(quantized));
  seeds.emplace_back("seed_zoo_cnn_offline_greedy.tflite", std::move(cnn_greedy));
  seeds.emplace_back("seed_zoo_cnn_offline_diagonal.tflite", std::move(cnn_diagonal));
  seeds.emplace_back("seed_mixed_f32_offline_diagonal.tflite", std::move(mixed_diagonal));
  seeds.emplace_back("seed_hostile_names.tflite", std::move(hostile));
  seeds.emplace_back("seed_prefix_hello_world_float.tflite", std::move(hello_prefix));
  seeds.emplace_back("seed_prefix_keyword_scrambled.tflite", std::move(kws_prefix));
  return seeds;
}

}  // namespace memfold::fuzz
