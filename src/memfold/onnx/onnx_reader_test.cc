// The ONNX reader on models built here with ONNX's own message classes: what a converter makes
// of an operator (checked by running the graph against values computed by hand), the layout
// rules, constant folding, and hostile files (each refused with a one-line message naming the
// file, never a crash).
#include "memfold/onnx/onnx_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "memfold/exec/executor.h"
#include "memfold/onnx/onnx_importer.h"
#include "memfold/ops/registry.h"

namespace memfold {
namespace {

class ModelMaker {
 public:
  explicit ModelMaker(int64_t opset = 17) {
    model_.set_ir_version(8);
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
  }
  onnx::GraphProto& graph() { return *model_.mutable_graph(); }
  void Input(const std::string& name, const std::vector<int64_t>& shape,
             int type = onnx::TensorProto::FLOAT) {
    Info(graph().add_input(), name, shape, type);
  }
  void Output(const std::string& name, const std::vector<int64_t>& shape = {},
              int type = onnx::TensorProto::FLOAT) {
    Info(graph().add_output(), name, shape, type);
  }
  onnx::TensorProto* Floats(const std::string& name, const std::vector<int64_t>& dims,
                            const std::vector<float>& values) {
    onnx::TensorProto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return t;
  }
  onnx::TensorProto* Int64s(const std::string& name, const std::vector<int64_t>& values) {
    onnx::TensorProto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return t;
  }
  onnx::NodeProto* Node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs) {
    onnx::NodeProto* n = graph().add_node();
    n->set_op_type(op);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return n;
  }
  static void IntsAttr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  std::string Bytes() const { return model_.SerializeAsString(); }
  Result<Graph> Parse(const std::string& directory = "") const {
    const std::string bytes = Bytes();
    return ParseOnnx(std::as_bytes(std::span(bytes)), "m.onnx", directory);
  }

 private:
  static void Info(onnx::ValueInfoProto* info, const std::string& name,
                   const std::vector<int64_t>& shape, int type) {
    info->set_name(name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(type);
    if (shape.empty()) return;  // unstated
    auto* s = tensor->mutable_shape();
    for (int64_t d : shape) s->add_dim()->set_dim_value(d);
  }
  onnx::ModelProto model_;
};

std::vector<float> RunFloats(const Graph& g, const std::vector<float>& input) {
  memfold::Bytes bytes(input.size() * 4);
  std::memcpy(bytes.data(), input.data(), bytes.size());
  Result<RunOutputs> run = RunUnplanned(g, {bytes});
  EXPECT_TRUE(run.ok()) << run.status().message();
  if (!run.ok()) return {};
  std::vector<float> out(run->outputs[0].size() / 4);
  std::memcpy(out.data(), run->outputs[0].data(), run->outputs[0].size());
  return out;
}

// A 1x1 convolution of a 2-channel 2x2 image, then ReLU (fused) and a reshape to [1, 8]:
// the convolution runs NHWC, and the reshape sees ONNX's NCHW order.
TEST(OnnxReader, ConvolutionRunsChannelsLastAndReshapesInOnnxOrder) {
  ModelMaker m;
  m.Input("x", {1, 2, 2, 2});
  // out channel 0 = x0 - x1, out channel 1 = 2 * x1; bias 0 and 1.
  m.Floats("w", {2, 2, 1, 1}, {1, -1, 0, 2});
  m.Floats("b", {2}, {0, 1});
  m.Node("Conv", {"x", "w", "b"}, {"c"});
  m.Node("Relu", {"c"}, {"r"});
  m.Int64s("shape", {1, -1});
  m.Node("Reshape", {"r", "shape"}, {"y"});
  m.Output("y", {1, 8});
  Result<Graph> g = m.Parse();
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_TRUE(CheckShapes(*g).ok());
  // NCHW input: channel 0 = [1, 2, 3, 4], channel 1 = [4, 3, 2, 1].
  const std::vector<float> y = RunFloats(*g, {1, 2, 3, 4, 4, 3, 2, 1});
  // channel 0: relu([-3, -1, 1, 3]); channel 1: 2 * [4, 3, 2, 1] + 1.
  EXPECT_EQ(y, (std::vector<float>{0, 0, 1, 3, 9, 7, 5, 3}));
  int relus = 0;
  for (const Node& n : g->nodes()) relus += n.op == "relu";
  EXPECT_EQ(relus, 0) << "ReLU fuses into the convolution";
}

// ReduceMean without keepdims after a convolution (channels-last): over H and W it leaves
// [N, C] in ONNX's order, so it reduces the channels-last map with no transpose (PyTorch's
// `x.mean((2, 3))`); over W alone the channels stay beside H, so the map is transposed to
// ONNX's order first. Both compute ONNX's values.
TEST(OnnxReader, MeanWithoutKeepdimsTransposesOnlyWhenTheOrderDiffers) {
  struct Case {
    std::vector<int64_t> axes, out_shape;
    std::vector<float> want;
    int transposes;
  };
  // NCHW input: channel 0 = [1, 2, 3, 4], channel 1 = [4, 3, 2, 1] (2x2); the convolution
  // passes channel 0 and doubles channel 1.
  for (const Case& c :
       {Case{{2, 3}, {1, 2}, {2.5f, 5.0f}, 0}, Case{{-1, -2}, {1, 2}, {2.5f, 5.0f}, 0},
        Case{{1, 3}, {1, 2}, {4.25f, 3.25f}, 0},
        Case{{3}, {1, 2, 2}, {1.5f, 3.5f, 7.0f, 3.0f}, 1}}) {
    ModelMaker m;
    m.Input("x", {1, 2, 2, 2});
    m.Floats("w", {2, 2, 1, 1}, {1, 0, 0, 2});
    m.Node("Conv", {"x", "w"}, {"c"});
    onnx::NodeProto* mean = m.Node("ReduceMean", {"c"}, {"y"});
    ModelMaker::IntsAttr(mean, "axes", c.axes);
    auto* keepdims = mean->add_attribute();
    keepdims->set_name("keepdims");
    keepdims->set_type(onnx::AttributeProto::INT);
    keepdims->set_i(0);
    m.Output("y", c.out_shape);
    Result<Graph> g = m.Parse();
    ASSERT_TRUE(g.ok()) << g.status().message();
    ASSERT_TRUE(CheckShapes(*g).ok());
    EXPECT_EQ(RunFloats(*g, {1, 2, 3, 4, 4, 3, 2, 1}), c.want);
    int transposes = 0;
    for (NodeId id : g->schedule) transposes += g->node(id).op == "transpose";
    EXPECT_EQ(transposes, 1 + c.transposes) << "the input's, and the map's when needed";
  }
}

// Shape arithmetic folds at import: Shape -> Gather -> Unsqueeze -> Concat feeds a Reshape.
TEST(OnnxReader, ShapeArithmeticFoldsToConstants) {
  ModelMaker m;
  m.Input("x", {2, 3, 4});
  m.Node("Shape", {"x"}, {"s"});
  m.Int64s("zero", {0});
  auto* gather = m.Node("Gather", {"s", "zero"}, {"batch"});
  (void)gather;
  m.Int64s("rest", {-1});
  auto* concat = m.Node("Concat", {"batch", "rest"}, {"target"});
  auto* axis = concat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  m.Node("Reshape", {"x", "target"}, {"flat"});
  m.Node("Neg", {"flat"}, {"y"});
  m.Output("y", {2, 12});
  Result<Graph> g = m.Parse();
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->num_nodes(), 2);  // reshape and neg; the shape computation is gone
  EXPECT_EQ(g->value(g->outputs[0]).shape, (Shape{2, 12}));
}

TEST(OnnxReader, UnknownOperatorPlansAsOpaqueWithTheFilesShapes) {
  ModelMaker m;
  m.Input("x", {1, 4});
  m.Node("MysteryOp", {"x"}, {"y"})->set_domain("com.example");
  m.Output("y", {1, 6});
  Result<Graph> g = m.Parse();
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->node(0).op, "onnx:MysteryOp");
  EXPECT_EQ(g->value(g->outputs[0]).shape, (Shape{1, 6}));
}

TEST(OnnxReader, StatedShapesAreChecked) {
  ModelMaker m;
  m.Input("x", {1, 4});
  m.Node("Relu", {"x"}, {"y"});
  m.Output("y", {1, 5});  // wrong: Relu keeps the shape
  Result<Graph> g = m.Parse();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("where the file says f32 1x5"), std::string::npos)
      << g.status().message();
}

// Hostile or unsupported files: a one-line error that starts with the file's label.
void ExpectRefused(const Result<Graph>& g, const std::string& says) {
  ASSERT_FALSE(g.ok());
  const std::string message = g.status().message();
  EXPECT_EQ(message.rfind("m.onnx: ", 0), 0u) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find(says), std::string::npos) << message;
}

TEST(OnnxReader, RefusesHostileFiles) {
  {
    ModelMaker m(9);
    m.Input("x", {1});
    m.Node("Relu", {"x"}, {"y"});
    m.Output("y");
    ExpectRefused(m.Parse(), "opset 9");
  }
  {
    ModelMaker m;
    m.Input("x", {1, 4});
    m.Floats("w", {4, 4}, {1, 2, 3});  // 3 values for 16
    m.Node("MatMul", {"x", "w"}, {"y"});
    m.Output("y");
    ExpectRefused(m.Parse(), "holds 3 values");
  }
  {
    ModelMaker m;
    m.Input("x", {1, 4});
    m.Node("Relu", {"nowhere"}, {"y"});
    m.Output("y");
    ExpectRefused(m.Parse(), "which no earlier node");
  }
  {
    ModelMaker m;
    m.Input("x", {1, 4});
    m.Node("Relu", {"x"}, {"x"});
    m.Output("x");
    ExpectRefused(m.Parse(), "defined twice");
  }
  {
    ModelMaker m;
    m.Input("x", {1, 4});
    onnx::TensorProto* w = m.Floats("w", {4, 4}, {});
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* location = w->add_external_data();
    location->set_key("location");
    location->set_value("../../etc/passwd");
    m.Node("MatMul", {"x", "w"}, {"y"});
    m.Output("y");
    ExpectRefused(m.Parse("/tmp"), "outside the model's directory");
    ExpectRefused(m.Parse(), "given as bytes");
  }
  {
    ModelMaker m;
    m.Input("x", {int64_t{1} << 30, int64_t{1} << 30});
    m.Node("Relu", {"x"}, {"y"});
    m.Output("y");
    ExpectRefused(m.Parse(), "more than 2^31 bytes");
  }
  {
    ModelMaker m;
    m.Input("x", {1, 4});
    m.Output("y");
    ExpectRefused(m.Parse(), "never computed");
  }
  {  // shapes whose products overflow: refused before any arithmetic on them
    ModelMaker m;
    m.Input("x", {1, 4});
    m.Int64s("big", {int64_t{1} << 31, int64_t{1} << 31, 4});
    m.Node("Expand", {"x", "big"}, {"y"});
    m.Output("y");
    ExpectRefused(m.Parse(), "more than 2^31 bytes");
  }
  {
    ModelMaker m;
    m.Input("x", {1, 4});
    m.Int64s("huge", {int64_t{1} << 40});
    m.Node("ConstantOfShape", {"huge"}, {"c"});
    m.Node("Add", {"x", "c"}, {"y"});
    m.Output("y");
    ExpectRefused(m.Parse(), "beyond 2^31");
  }
  {  // Slice's ends and steps may be anything; INT64_MAX means "to the end"
    ModelMaker m;
    m.Input("x", {1, 6});
    m.Int64s("starts", {1});
    m.Int64s("ends", {std::numeric_limits<int64_t>::max()});
    m.Int64s("axes", {1});
    m.Int64s("steps", {std::numeric_limits<int64_t>::max()});
    m.Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
    m.Output("y", {1, 1});
    Result<Graph> g = m.Parse();
    ASSERT_TRUE(g.ok()) << g.status().message();
  }
  const std::string garbage = "\x08\x07\x3a\xff\xff\xff\xff\x0f";
  Result<Graph> g = ParseOnnx(std::as_bytes(std::span(garbage)), "m.onnx");
  ExpectRefused(g, "not an ONNX model");
}

TEST(OnnxReader, ReadsExternalDataBesideTheModel) {
  const auto dir = std::filesystem::temp_directory_path() / "memfold_onnx_external";
  std::filesystem::create_directories(dir);
  const std::vector<float> w{1, 0, 0, 1, 2, 0, 0, 2};  // [2, 4]: identity rows, then doubled
  {
    std::ofstream out(dir / "weights.bin", std::ios::binary);
    const char pad[4] = {};
    out.write(pad, 4);  // the tensor starts at offset 4
    out.write(reinterpret_cast<const char*>(w.data()), 32);
  }
  ModelMaker m;
  m.Input("x", {1, 2});
  onnx::TensorProto* t = m.Floats("w", {2, 4}, {});
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  const std::vector<std::pair<std::string, std::string>> entries{
      {"location", "weights.bin"}, {"offset", "4"}, {"length", "32"}};
  for (const auto& [key, value] : entries) {
    auto* entry = t->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
  m.Node("MatMul", {"x", "w"}, {"y"});
  m.Output("y", {1, 4});
  Result<Graph> g = m.Parse(dir.string());
  ASSERT_TRUE(g.ok()) << g.status().message();
  // [3, 5] x [[1, 0, 0, 1], [2, 0, 0, 2]] = [13, 0, 0, 13]
  EXPECT_EQ(RunFloats(*g, {3, 5}), (std::vector<float>{13, 0, 0, 13}));
  std::filesystem::remove_all(dir);
}

TEST(OnnxReader, EveryConverterTargetsARegistryOp) {
  // The table is sorted and unique, so lookups by binary search find every entry.
  const std::vector<std::string_view> names = onnx_import::ConvertedOperators();
  ASSERT_GT(names.size(), 60u);
  for (size_t k = 1; k < names.size(); ++k) EXPECT_LT(names[k - 1], names[k]);
  for (std::string_view name : names) EXPECT_NE(onnx_import::FindConverter(name), nullptr) << name;
  EXPECT_EQ(onnx_import::FindConverter("NoSuchOp"), nullptr);
  for (std::string_view core :
       {"Add", "Conv", "Gemm", "MatMul", "Relu", "Reshape", "Concat", "QuantizeLinear",
        "DequantizeLinear", "QLinearConv", "com.microsoft:QLinearAdd"})
    EXPECT_NE(onnx_import::FindConverter(core), nullptr) << core;
}

}  // namespace
}  // namespace memfold
