// The TFLite reader and writer: round trips of --emit-tflite and --emit-c, and a corpus of
// broken files that must each give a clear error, never a crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <random>
#include <regex>

#include "memfold/exec/checked_run_test_util.h"
#include "memfold/exec/executor.h"
#include "memfold/io/plan_export.h"
#include "memfold/io/tflite_graph_writer.h"
#include "memfold/io/tflite_reader.h"
#include "memfold/io/tflite_schema.h"
#include "memfold/io/tflite_writer.h"
#include "memfold/ir/verify.h"
#include "memfold/ops/builder.h"
#include "memfold/ops/registry.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/plan/plan_graph.h"

namespace memfold {
namespace {

const std::filesystem::path kModels = std::filesystem::path(MEMFOLD_SHARED_DIR) / "models";

TfliteModel Read(const std::string& relative) {
  Result<TfliteModel> m = ReadTfliteFile((kModels / relative).string());
  EXPECT_TRUE(m.ok()) << m.status().message();
  return std::move(m).value();
}

// Writes `model` with `offsets` as its offline plan and parses the written file back.
TfliteModel WriteAndReadBack(const TfliteModel& model, const std::vector<int32_t>& offsets) {
  Result<Bytes> written = WithOfflinePlan(model, offsets);
  EXPECT_TRUE(written.ok()) << written.status().message();
  Result<TfliteModel> back = ParseTflite(std::move(written).value(), "emitted");
  EXPECT_TRUE(back.ok()) << back.status().message();
  return std::move(back).value();
}

void ExpectSameGraph(const Graph& a, const Graph& b) {
  ASSERT_EQ(a.num_values(), b.num_values());
  ASSERT_EQ(a.num_nodes(), b.num_nodes());
  for (ValueId v = 0; v < a.num_values(); ++v) {
    EXPECT_EQ(a.value(v).name, b.value(v).name);
    EXPECT_EQ(a.value(v).shape, b.value(v).shape);
    EXPECT_EQ(a.value(v).dtype, b.value(v).dtype);
    EXPECT_EQ(a.value(v).role, b.value(v).role);
    EXPECT_EQ(a.value(v).is_constant(), b.value(v).is_constant());
    if (a.value(v).is_constant()) {
      EXPECT_EQ(*a.value(v).data, *b.value(v).data);
    }
  }
  for (NodeId n = 0; n < a.num_nodes(); ++n) {
    EXPECT_EQ(a.node(n).op, b.node(n).op);
    EXPECT_EQ(a.node(n).inputs, b.node(n).inputs);
    EXPECT_EQ(a.node(n).outputs, b.node(n).outputs);
    EXPECT_EQ(a.node(n).attrs.items(), b.node(n).attrs.items());
  }
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.outputs, b.outputs);
}

// A file without the optional root fields (keyword_scrambled has no description) is written
// with those fields unset, not as offsets of 0, which the flatbuffer verifier rejects.
TEST(TfliteWriter, EmittedPlanOfAFileWithoutADescriptionVerifies) {
  const TfliteModel original = Read("tflite-micro/keyword_scrambled.tflite");
  ASSERT_EQ(flatbuffers::GetRoot<tflite::Model>(original.file.data())->description(), nullptr);
  Result<GraphPlan> gp = PlanGraph(original.graph, "greedy");
  ASSERT_TRUE(gp.ok());
  const TfliteModel back = WriteAndReadBack(original, ValueOffsets(original.graph, *gp));
  ExpectSameGraph(original.graph, back.graph);
  EXPECT_EQ(flatbuffers::GetRoot<tflite::Model>(back.file.data())->description(), nullptr);
}

TEST(TfliteWriter, EmittedPlanReadsBackWithTheSameGraphAndOffsets) {
  const TfliteModel original = Read("mlcommons-tiny/vww_96_int8.tflite");
  Result<GraphPlan> gp = PlanGraph(original.graph, "greedy_stable");
  ASSERT_TRUE(gp.ok());
  const std::vector<int32_t> offsets = ValueOffsets(original.graph, *gp);
  const TfliteModel back = WriteAndReadBack(original, offsets);
  EXPECT_EQ(back.file.size() % 16, original.file.size() % 16);  // old buffers keep alignment
  ExpectSameGraph(original.graph, back.graph);
  ASSERT_TRUE(back.offline_offsets.has_value());
  EXPECT_EQ(*back.offline_offsets, offsets);
  // Planning the emitted file "offline" reproduces the plan exactly.
  Result<GraphPlan> replanned = PlanGraph(back.graph, "offline");
  ASSERT_TRUE(replanned.ok()) << replanned.status().message();
  EXPECT_EQ(replanned->plan.offsets, gp->plan.offsets);
  EXPECT_EQ(replanned->plan.arena_bytes, 64512);  // greedy_stable on vww_96_int8
}

// A diagonal plan survives the trip through TFLM's offline format: read back, it verifies
// (overlaps within the proven O_s) and runs identically in its arena.
TEST(TfliteWriter, DiagonalPlanRoundTrip) {
  const TfliteModel original = Read("tflite-micro/person_detect.tflite");
  Result<GraphPlan> gp = PlanGraph(original.graph, "diagonal");
  ASSERT_TRUE(gp.ok());
  const TfliteModel back = WriteAndReadBack(original, ValueOffsets(original.graph, *gp));
  Result<GraphPlan> offline = PlanGraph(back.graph, "offline");
  ASSERT_TRUE(offline.ok()) << offline.status().message();
  EXPECT_EQ(offline->plan.arena_bytes, gp->plan.arena_bytes);
  const std::vector<Bytes> inputs = DefaultInputs(back.graph);
  EXPECT_TRUE(
      RunsIdentically(original.graph, back.graph, offline->liveness, offline->plan, inputs));
}

TEST(TfliteWriter, ExistingOfflinePlanIsReplaced) {
  const TfliteModel vela = Read("tflite-micro/person_detect_vela.tflite");
  ASSERT_TRUE(vela.offline_offsets.has_value());
  // Vela's own plan:
  EXPECT_EQ(*vela.offline_offsets, (std::vector<int32_t>{0, -1, -1, 0, 0, 0}));
  const std::vector<int32_t> mine = {9216, -1, -1, 16, 16, 0};
  const TfliteModel back = WriteAndReadBack(vela, mine);
  ASSERT_TRUE(back.offline_offsets.has_value());
  EXPECT_EQ(*back.offline_offsets, mine);
  // Exactly one OfflineMemoryAllocation entry remains, next to Vela's version entry.
  const auto* model = flatbuffers::GetRoot<tflite::Model>(back.file.data());
  int plans = 0;
  for (const tflite::Metadata* m : *model->metadata()) {
    plans += m->name()->str() == "OfflineMemoryAllocation";
  }
  EXPECT_EQ(plans, 1);
  EXPECT_EQ(model->metadata()->size(), 2u);
}

TEST(TfliteWriter, EmittedModelComputesTheSame) {
  const TfliteModel original = Read("tflite-micro/hello_world_float.tflite");
  Result<GraphPlan> gp = PlanGraph(original.graph, "greedy");
  ASSERT_TRUE(gp.ok());
  const TfliteModel back = WriteAndReadBack(original, ValueOffsets(original.graph, *gp));
  const std::vector<Bytes> inputs = DefaultInputs(original.graph);
  EXPECT_EQ(RunUnplanned(original.graph, inputs)->outputs,
            RunUnplanned(back.graph, inputs)->outputs);
}

TEST(PlanExport, CHeaderRoundTrip) {
  const TfliteModel model = Read("tflite-micro/person_detect.tflite");
  Result<GraphPlan> gp = PlanGraph(model.graph, "greedy");
  ASSERT_TRUE(gp.ok());
  const std::string header = PlanCHeader(model.graph, *gp, "person_detect");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(header, m, std::regex("#define MEMFOLD_ARENA_BYTES (\\d+)")));
  EXPECT_EQ(std::stoll(m[1]), gp->plan.arena_bytes);
  std::vector<int32_t> parsed;
  const std::regex entry("\\n    (-?\\d+),  /\\*");
  for (auto it = std::sregex_iterator(header.begin(), header.end(), entry);
       it != std::sregex_iterator(); ++it) {
    parsed.push_back(std::stoi((*it)[1]));
  }
  EXPECT_EQ(parsed, ValueOffsets(model.graph, *gp));
}

// Vela compiles the whole network into one Ethos-U operator and plans the arena itself: every
// arena tensor at offset 0 (input, output, scratch and fast scratch all overlap, which only the
// NPU's own command stream makes safe). TFLM takes that on trust: its head is 74,560 B, the
// scratch tensor's 74,464 B plus 96 B its Ethos-U kernel requests. memfold cannot prove the
// overlaps and says so; its own greedy plan keeps all four tensors apart.
TEST(TfliteReader, VelaOfflinePlanIsReadAndRefused) {
  const TfliteModel vela = Read("tflite-micro/person_detect_vela.tflite");
  Result<GraphPlan> offline = PlanGraph(vela.graph, "offline");
  ASSERT_FALSE(offline.ok());
  EXPECT_NE(offline.status().message().find("the model's offline plan is unsafe"),
            std::string::npos);
  Result<GraphPlan> greedy = PlanGraph(vela.graph, "greedy");
  ASSERT_TRUE(greedy.ok());
  EXPECT_EQ(greedy->plan.arena_bytes,
            74464 + 74464 + 9216 + 16);  // scratch, fast scratch, input, output
}

// ---- Broken files: each must be rejected with a message, never crash. -------------------

Status ParseStatus(const Bytes& bytes) { return ParseTflite(bytes, "broken.tflite").status(); }

TEST(TfliteReader, TruncatedFilesAreRejected) {
  const TfliteModel model = Read("tflite-micro/hello_world_int8.tflite");
  for (size_t cut = 0; cut < model.file.size(); cut += 7) {
    const Status s = ParseStatus(
        Bytes(model.file.begin(), model.file.begin() + static_cast<std::ptrdiff_t>(cut)));
    EXPECT_FALSE(s.ok()) << "cut at " << cut;
    EXPECT_EQ(s.message().rfind("broken.tflite: ", 0), 0u) << s.message();
  }
}

// Positions of fields inside a real model, to corrupt them precisely.
size_t PositionOf(const Bytes& file, const void* p) {
  return static_cast<size_t>(static_cast<const std::byte*>(p) - file.data());
}

// TFLM reads a file without the "TFL3" identifier (it checks the schema version only): memfold
// reads it as the same graph. Without the identifier, another schema version or bytes that are
// no Model flatbuffer are no TFLite file.
TEST(TfliteReader, FilesWithoutTheIdentifierAreReadAsTflmReadsThem) {
  const TfliteModel model = Read("tflite-micro/hello_world_int8.tflite");
  Bytes file = model.file;
  for (size_t k = 4; k < 8; ++k) file[k] = std::byte{0};
  Result<TfliteModel> read = ParseTflite(file, "no-identifier.tflite");
  ASSERT_TRUE(read.ok()) << read.status().message();
  ExpectSameGraph(model.graph, read->graph);

  const auto* root =
      reinterpret_cast<const flatbuffers::Table*>(flatbuffers::GetRoot<tflite::Model>(file.data()));
  const uint8_t* version = root->GetAddressOf(4);  // Model.version, the table's first field
  ASSERT_NE(version, nullptr);
  file[PositionOf(file, version)] = std::byte{2};
  EXPECT_NE(ParseStatus(file).message().find("no TFL3 identifier, and schema version 2, not 3"),
            std::string::npos)
      << ParseStatus(file).message();

  Bytes garbage(64, std::byte{0x5A});
  EXPECT_NE(ParseStatus(garbage).message().find("not a TFLite model"), std::string::npos);
}

TEST(TfliteReader, BadIndicesAndCountsAreRejected) {
  const Bytes good = Read("tflite-micro/hello_world_int8.tflite").file;
  const auto* model = flatbuffers::GetRoot<tflite::Model>(good.data());
  const tflite::Operator* op = model->subgraphs()->Get(0)->operators()->Get(0);
  const tflite::Tensor* tensor = model->subgraphs()->Get(0)->tensors()->Get(0);
  struct Case {
    size_t position;
    int32_t value;
    const char* message;
  };
  const Case cases[] = {
      {PositionOf(good, op->inputs()->data()), -5, "names tensor -5"},
      {PositionOf(good, op->inputs()->data()), 100000, "names tensor 100000"},
      {PositionOf(good, op->outputs()->data()), -1, "names tensor -1"},
      {PositionOf(good, op->inputs()), 0x7fffffff, "verifier rejects"},      // huge count
      {PositionOf(good, model->buffers()), 0x10000000, "verifier rejects"},  // huge count
      {PositionOf(good, tensor->shape()->data()), -1, "dynamic dimension"},
      // [1 << 30, 1 << 30, ...] elements: the product overflows any real memory.
      {PositionOf(good, tensor->shape()->data()) + 4, 0x40000000, "impossibly large"},
  };
  ASSERT_GE(tensor->shape()->size(), 2u);
  for (const Case& c : cases) {
    Bytes bad = good;
    std::memcpy(bad.data() + c.position, &c.value, 4);
    if (std::string(c.message) == "impossibly large")
      std::memcpy(bad.data() + c.position - 4, &c.value, 4);
    const Status s = ParseStatus(bad);
    ASSERT_FALSE(s.ok()) << c.message;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.message();
  }
}

TEST(TfliteReader, OffsetsPastTheEndAreRejected) {
  const Bytes good = Read("tflite-micro/hello_world_int8.tflite").file;
  Bytes bad = good;
  const uint32_t past = static_cast<uint32_t>(good.size()) * 2;
  std::memcpy(bad.data(), &past, 4);  // the root offset
  EXPECT_NE(ParseStatus(bad).message().find("verifier rejects"), std::string::npos);
}

// A bounded random-mutation sweep: whatever the bytes, the reader returns a model or an error.
TEST(TfliteReader, RandomCorruptionNeverCrashes) {
  const Bytes good = Read("mlcommons-tiny/kws_ref_model.tflite").file;
  std::mt19937 rng(7);
  int rejected = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    Bytes bad = good;
    const int flips = 1 + trial % 8;
    for (int k = 0; k < flips; ++k) {
      bad[std::uniform_int_distribution<size_t>(0, bad.size() - 1)(rng)] =
          static_cast<std::byte>(rng());
    }
    Result<TfliteModel> m = ParseTflite(bad, "mutant");
    rejected += !m.ok();
    if (!m.ok() || !CheckShapes(m->graph).ok() || !VerifyGraph(m->graph).ok()) continue;
    // Whatever loads must also plan and run safely (the sanitizer build checks "safely").
    Result<GraphPlan> gp = PlanGraph(m->graph, "greedy");
    if (gp.ok()) (void)RunPlanned(m->graph, gp->liveness, gp->plan, DefaultInputs(m->graph));
  }
  EXPECT_GT(rejected, 0);
}

// ---- Hostile operator parameters: written into a file as given, each must be refused on
// reading with a message naming the problem (never a crash, an overflow or a huge allocation).

// A model of one operator `op` on an input of `shape` and `dtype`, built with valid `attrs`;
// `spoil` then changes the node's attributes (the writer writes what it is given) and the
// file is read back. Returns the reader's status.
Status LoadSpoiled(const std::string& op, Shape shape, DType dtype, Attrs attrs,
                   const std::function<void(Attrs&)>& spoil) {
  GraphBuilder b("hostile");
  const ValueId x = b.Input("x", std::move(shape), dtype);
  const ValueId y = b.Op(op, {x}, std::move(attrs), "victim");
  Result<Graph> g = b.Finish({y});
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return Status::Ok();
  spoil(g->node(g->schedule.back()).attrs);
  Result<Bytes> file = GraphToTflite(*g);
  EXPECT_TRUE(file.ok()) << file.status().message();
  if (!file.ok()) return Status::Ok();
  return LoadTflite(std::move(file).value(), "hostile.tflite").status();
}

void ExpectRefused(const Status& s, const std::string& words) {
  ASSERT_FALSE(s.ok()) << words;
  EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
}

TEST(TfliteReader, HostileResizeBilinearParametersAreRefused) {
  Attrs attrs;
  attrs.Set("size", std::vector<int64_t>{6, 6});
  const Shape shape = {1, 3, 3, 2};
  EXPECT_TRUE(LoadSpoiled("resize_bilinear", shape, DType::kF32, attrs, [](Attrs&) {}).ok());
  ExpectRefused(LoadSpoiled("resize_bilinear", shape, DType::kF32, attrs,
                            [](Attrs& a) {
                              a.Set("size", std::vector<int64_t>{0, 6});
                            }),
                "each in [1, 2^20]");
  ExpectRefused(LoadSpoiled("resize_bilinear", shape, DType::kI8, attrs,
                            [](Attrs& a) {
                              a.Set("size", std::vector<int64_t>{6, 0x7fffffff});
                            }),
                "each in [1, 2^20]");
  ExpectRefused(LoadSpoiled("resize_bilinear", shape, DType::kF32, attrs,
                            [](Attrs& a) { a.Set("size", std::vector<int64_t>{6}); }),
                "'size' = [height, width]");
  ExpectRefused(LoadSpoiled("resize_bilinear", shape, DType::kF32, attrs,
                            [](Attrs& a) {
                              a.Set("align_corners", int64_t{1});
                              a.Set("half_pixel_centers", int64_t{1});
                            }),
                "exclude each other");
}

TEST(TfliteReader, HostileTransposeConvParametersAreRefused) {
  // LoadSpoiled's op has one input; the filter is built here.
  auto load = [](const std::function<void(Attrs&)>& spoil) {
    GraphBuilder b("hostile");
    const ValueId x = b.Input("x", {1, 3, 3, 2});
    const ValueId w = b.LayerWeight("w", {4, 3, 3, 2}, 18);
    Attrs attrs = ConvAttrs(2, "none");
    attrs.Set("output_shape", std::vector<int64_t>{1, 6, 6, 4});
    const ValueId y = b.Op("transpose_conv", {x, w}, attrs, "victim");
    Result<Graph> g = b.Finish({y});
    EXPECT_TRUE(g.ok()) << g.status().message();
    spoil(g->node(g->schedule.back()).attrs);
    Result<Bytes> file = GraphToTflite(*g);
    EXPECT_TRUE(file.ok()) << file.status().message();
    return LoadTflite(std::move(file).value(), "hostile.tflite").status();
  };
  EXPECT_TRUE(load([](Attrs&) {}).ok());
  ExpectRefused(load([](Attrs& a) {
                  a.Set("stride", std::vector<int64_t>{0, 2});
                }),
                "'stride' = [h, w], each in [1, 2^20]");
  ExpectRefused(load([](Attrs& a) {
                  a.Set("stride", std::vector<int64_t>{2, 0x7fffffff});
                }),
                "'stride' = [h, w], each in [1, 2^20]");
}

TEST(TfliteReader, HostileMirrorPadParametersAreRefused) {
  Attrs attrs;
  attrs.Set("paddings", std::vector<int64_t>{1, 1, 2, 0});
  attrs.Set("mode", std::string("reflect"));
  const Shape shape = {3, 4};
  EXPECT_TRUE(LoadSpoiled("mirror_pad", shape, DType::kI8, attrs, [](Attrs&) {}).ok());
  // A pad beyond the input would make TFLM's GetInputDimension read outside it.
  ExpectRefused(LoadSpoiled("mirror_pad", shape, DType::kI8, attrs,
                            [](Attrs& a) {
                              a.Set("paddings", std::vector<int64_t>{3, 1, 2, 0});
                            }),
                "reflect padding takes 0 to 2");
  ExpectRefused(LoadSpoiled("mirror_pad", shape, DType::kF32, attrs,
                            [](Attrs& a) {
                              a.Set("paddings", std::vector<int64_t>{-5, 1, 2, 0});
                            }),
                "reflect padding takes 0 to 2");
  ExpectRefused(LoadSpoiled("mirror_pad", shape, DType::kF32, attrs,
                            [](Attrs& a) {
                              a.Set("paddings", std::vector<int64_t>{0x7fffffff, 0x7fffffff, 0, 0});
                            }),
                "reflect padding takes 0 to 2");
  ExpectRefused(LoadSpoiled("mirror_pad", shape, DType::kF32, attrs,
                            [](Attrs& a) {
                              a.Set("paddings", std::vector<int64_t>{1, 1});
                            }),
                "'paddings' = [before, after] per axis");
}

TEST(TfliteReader, HostileBatchToSpaceAndSpaceToBatchParametersAreRefused) {
  Attrs s2b;
  s2b.Set("block_shape", std::vector<int64_t>{2, 2});
  s2b.Set("paddings", std::vector<int64_t>{1, 1, 0, 0});
  const Shape shape = {1, 4, 4, 3};
  EXPECT_TRUE(LoadSpoiled("space_to_batch_nd", shape, DType::kI8, s2b, [](Attrs&) {}).ok());
  ExpectRefused(LoadSpoiled("space_to_batch_nd", shape, DType::kI8, s2b,
                            [](Attrs& a) {
                              a.Set("block_shape", std::vector<int64_t>{0, 2});
                            }),
                "block sizes in [1, 2^20]");
  ExpectRefused(LoadSpoiled("space_to_batch_nd", shape, DType::kF32, s2b,
                            [](Attrs& a) {
                              a.Set("block_shape", std::vector<int64_t>{0x7fffffff, 2});
                            }),
                "block sizes in [1, 2^20]");
  ExpectRefused(LoadSpoiled("space_to_batch_nd", shape, DType::kF32, s2b,
                            [](Attrs& a) {
                              a.Set("paddings", std::vector<int64_t>{-2, 1, 0, 0});
                            }),
                "paddings in [0, 2^20]");
  ExpectRefused(LoadSpoiled("space_to_batch_nd", shape, DType::kF32, s2b,
                            [](Attrs& a) { a.Set("block_shape", std::vector<int64_t>{2}); }),
                "needs 'block_shape' of 2");
  Attrs b2s;
  b2s.Set("block_shape", std::vector<int64_t>{2, 2});
  b2s.Set("crops", std::vector<int64_t>{0, 1, 1, 0});
  const Shape batched = {8, 2, 2, 1};
  EXPECT_TRUE(LoadSpoiled("batch_to_space_nd", batched, DType::kF32, b2s, [](Attrs&) {}).ok());
  ExpectRefused(LoadSpoiled("batch_to_space_nd", batched, DType::kF32, b2s,
                            [](Attrs& a) {
                              a.Set("crops", std::vector<int64_t>{0, 0x7fffffff, 0, 0});
                            }),
                "crops in [0, 2^20]");
  ExpectRefused(LoadSpoiled("batch_to_space_nd", batched, DType::kF32, b2s,
                            [](Attrs& a) {
                              a.Set("crops", std::vector<int64_t>{2, 2, 0, 0});
                            }),
                "crops remove all of spatial axis 1");
  ExpectRefused(LoadSpoiled("batch_to_space_nd", batched, DType::kF32, b2s,
                            [](Attrs& a) {
                              a.Set("block_shape", std::vector<int64_t>{3, 3});
                            }),
                "is not a multiple of the block shape's product");
}

// GATHER's axis and batch_dims may be negative in a file (from the end of the params' and the
// indices' ranks, as TFLM resolves them); anything else outside is refused.
TEST(TfliteReader, GatherAxesAreResolvedAndHostileOnesRefused) {
  auto load = [](int64_t axis, int64_t batch_dims) -> Result<Graph> {
    GraphBuilder b("gather");
    const ValueId x = b.Input("x", {2, 3, 4});
    const ValueId i = b.Input("i", {2, 2}, DType::kI32);
    Attrs attrs;
    attrs.Set("axis", int64_t{2});
    attrs.Set("batch_dims", int64_t{1});
    const ValueId y = b.Op("gather_axis", {x, i}, attrs, "victim");
    Result<Graph> g = b.Finish({y});
    EXPECT_TRUE(g.ok()) << g.status().message();
    g->node(g->schedule.back()).attrs.Set("axis", axis);
    g->node(g->schedule.back()).attrs.Set("batch_dims", batch_dims);
    Result<Bytes> file = GraphToTflite(*g);
    EXPECT_TRUE(file.ok()) << file.status().message();
    return LoadTflite(std::move(file).value(), "gather.tflite");
  };
  const Result<Graph> negative = load(-1, -1);
  ASSERT_TRUE(negative.ok()) << negative.status().message();
  const Node& node = negative->node(negative->schedule.back());
  EXPECT_EQ(node.attrs.Int("axis"), 2);
  EXPECT_EQ(node.attrs.Int("batch_dims"), 1);
  ExpectRefused(load(3, 1).status(), "axis 3 is not an axis of [2x3x4]");
  ExpectRefused(load(-4, 1).status(), "axis -1 is not an axis");
  ExpectRefused(load(0x7fffffff, 1).status(), "is not an axis of");
  ExpectRefused(load(2, 3).status(), "batch_dims 3 must lie in [0, axis]");
  ExpectRefused(load(2, -9).status(), "batch_dims -7 must lie in [0, axis]");
}

TEST(TfliteReader, CumsumAxisIsResolvedAndHostileOnesRefused) {
  Attrs attrs;
  attrs.Set("axis", int64_t{1});
  attrs.Set("reverse", int64_t{1});
  const Shape shape = {2, 3, 4};
  EXPECT_TRUE(LoadSpoiled("cumsum", shape, DType::kF32, attrs, [](Attrs&) {}).ok());
  EXPECT_TRUE(LoadSpoiled("cumsum", shape, DType::kF32, attrs, [](Attrs& a) {
                a.Set("axis", int64_t{-2});
              }).ok());  // -2 is axis 1
  ExpectRefused(
      LoadSpoiled("cumsum", shape, DType::kF32, attrs, [](Attrs& a) { a.Set("axis", int64_t{3}); }),
      "axis 3 is not an axis of [2x3x4]");
  ExpectRefused(LoadSpoiled("cumsum", shape, DType::kF32, attrs,
                            [](Attrs& a) { a.Set("axis", int64_t{-0x7fffffff}); }),
                "is not an axis of [2x3x4]");
}

TEST(TfliteReader, L2NormalizationWithAFusedActivationIsRefused) {
  const Shape shape = {2, 5};
  EXPECT_TRUE(LoadSpoiled("l2_normalization", shape, DType::kF32, {}, [](Attrs&) {}).ok());
  ExpectRefused(LoadSpoiled("l2_normalization", shape, DType::kF32, {},
                            [](Attrs& a) { a.Set("activation", std::string("relu6")); }),
                "has a fused activation, which TFLM's L2_NORMALIZATION refuses");
}

// BATCH_MATMUL's adj_x / adj_y are read from BatchMatMulOptions; a file whose flags do not fit
// its shapes, or that asks for the adj_x fold TFLM computes wrongly, is refused.
TEST(TfliteReader, BatchMatMulOptionsAreReadAndHostileOnesRefused) {
  auto load = [](Shape lhs, Shape rhs, const std::function<void(Attrs&)>& spoil) -> Status {
    GraphBuilder b("hostile");
    const ValueId x = b.Input("x", std::move(lhs));
    const ValueId y = b.Input("y", std::move(rhs));
    Attrs attrs;
    attrs.Set("adj_y", int64_t{0});
    const ValueId z = b.Op("tflite_batch_matmul", {x, y}, attrs, "victim");
    Result<Graph> g = b.Finish({z});
    EXPECT_TRUE(g.ok()) << g.status().message();
    if (!g.ok()) return Status::Ok();
    spoil(g->node(g->schedule.back()).attrs);
    Result<Bytes> file = GraphToTflite(*g);
    EXPECT_TRUE(file.ok()) << file.status().message();
    if (!file.ok()) return Status::Ok();
    Result<Graph> read = LoadTflite(std::move(file).value(), "hostile.tflite");
    if (read.ok()) {
      const Node& n = read->node(read->schedule.back());
      EXPECT_EQ(n.op, "tflite_batch_matmul");
      EXPECT_EQ(n.attrs.Int("adj_x"), 0);
    }
    return read.status();
  };
  EXPECT_TRUE(load({2, 3}, {3, 4}, [](Attrs&) {}).ok());
  EXPECT_TRUE(load({2, 2, 2}, {1, 2, 4}, [](Attrs&) {}).ok());
  ExpectRefused(load({2, 3}, {3, 4}, [](Attrs& a) { a.Set("adj_x", int64_t{1}); }),
                "inner dimensions 2 and 3 differ");
  ExpectRefused(load({2, 3}, {3, 4}, [](Attrs& a) { a.Set("adj_y", int64_t{1}); }),
                "inner dimensions 3 and 4 differ");
  ExpectRefused(load({2, 2, 2}, {1, 2, 4}, [](Attrs& a) { a.Set("adj_x", int64_t{1}); }),
                "computes only its first matrix");
}

}  // namespace
}  // namespace memfold
