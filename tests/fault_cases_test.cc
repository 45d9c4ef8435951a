// Fault cases (issue 8): inputs at the edges of what memfold accepts. Each must end in a
// result or in a clear error per CONTRACT.md (exit 1 when the work fails, 2 for bad input, one
// line on stderr naming the file and the operator or tensor and what to do), never a crash.
// Models are small hand-built graphs written as .tflite by io/tflite_graph_writer.h, or a
// shared model patched in memory.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fuzz/fuzz_entry.h"
#include "memfold/exec/executor.h"
#include "memfold/exec/run_memory.h"
#include "memfold/io/tflite_graph_writer.h"
#include "memfold/io/tflite_reader.h"
#include "memfold/io/tflite_schema.h"
#include "memfold/ir/verify.h"
#include "memfold/ops/registry.h"
#include "memfold/pipeline/model_loader.h"
#include "memfold/placement/verify_plan.h"
#include "memfold/plan/plan_graph.h"
#include "tests/program_runner.h"

namespace memfold {
namespace {

using Ints = std::vector<int64_t>;
namespace fs = std::filesystem;

// ---- helpers --------------------------------------------------------------------------------

using testing::Memfold;
using testing::Outcome;

// CONTRACT.md: exactly one line on stderr, "memfold: " then the model, then the message.
void ExpectOneLineNaming(const Outcome& r, const std::string& model, const std::string& words) {
  EXPECT_EQ(r.err.rfind("memfold: " + model, 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
}

Bytes Written(const Graph& g) {
  Result<Bytes> bytes = GraphToTflite(g);
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  return bytes.ok() ? std::move(bytes).value() : Bytes();
}

std::string SaveTemp(const Bytes& bytes, const std::string& name) {
  const fs::path path = fs::temp_directory_path() / (std::to_string(::getpid()) + "_" + name);
  std::ofstream file(path, std::ios::binary);
  file.write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  return path.string();
}

Result<fuzz::Stage> ThroughEverything(const Bytes& bytes) {
  return fuzz::RunTfliteInput({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
}

ValueId AddInput(Graph& g, const std::string& name, Shape shape) {
  Value v{.name = name, .dtype = DType::kF32, .shape = std::move(shape), .role = Role::kInput};
  const ValueId id = g.AddValue(std::move(v));
  g.inputs.push_back(id);
  return id;
}

ValueId AddWeight(Graph& g, const std::string& name, Shape shape) {
  Value v{.name = name, .dtype = DType::kF32, .shape = std::move(shape), .role = Role::kWeight};
  v.data = std::make_shared<Bytes>(static_cast<size_t>(v.bytes()), std::byte{0x3c});
  return g.AddValue(std::move(v));
}

ValueId AddOne(Graph& g, const std::string& op, std::vector<ValueId> inputs, Attrs attrs,
               const std::string& name) {
  Result<std::vector<ValueId>> out = AddOp(&g, op, std::move(inputs), std::move(attrs), name);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? out->front() : kNoValue;
}

void SetOutputs(Graph& g, std::vector<ValueId> outputs) {
  for (ValueId v : outputs) g.value(v).role = Role::kOutput;
  g.outputs = std::move(outputs);
}

Bytes SharedModel(const std::string& relative) {
  Result<TfliteModel> m = ReadTfliteFile(std::string(MEMFOLD_SHARED_DIR) + "/models/" + relative);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? m->file : Bytes();
}

// As an integer, so the compiler does not take a patch of the file for a write into the
// flatbuffer accessor object the pointer came from.
size_t PositionOf(const Bytes& file, const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) - reinterpret_cast<std::uintptr_t>(file.data());
}

// Not inlined: GCC 12 would otherwise trace the position back to the accessor object and warn
// (-Wstringop-overflow) about a write into it.
[[gnu::noinline]] void Poke(Bytes& file, size_t position, int32_t value) {
  std::memcpy(file.data() + position, &value, 4);
}

// ---- arena too small for a budget ----------------------------------------------------------

// zoo:cnn's diagonal arena is 65,952 B: one byte less does not fit (exit 1), the exact size does.
TEST(FaultCases, BudgetTooSmallExitsOneAndSaysByHowMuch) {
  Outcome r = Memfold("plan zoo:cnn --planner diagonal --budget 65951");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("does NOT fit, 1 B over"), std::string::npos) << r.out;
  r = Memfold("plan zoo:cnn --planner diagonal --budget 65951 --json");
  EXPECT_EQ(r.code, 1);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["fits"], false);
  EXPECT_EQ(j["arena_bytes"], 65952);
  EXPECT_FALSE(j["peak_op"].get<std::string>().empty());
  EXPECT_EQ(Memfold("plan zoo:cnn --planner diagonal --budget 65952").code, 0);
  // Both sizes round to 64.41 KiB: the one stderr line gives them in bytes.
  r = Memfold("plan zoo:cnn --planner diagonal --budget 65951");
  ExpectOneLineNaming(r, "zoo:cnn", "the 65,952 B arena does not fit the 65,951 B budget");
  r = Memfold("plan zoo:cnn --planner diagonal --budget 60000");
  ExpectOneLineNaming(r, "zoo:cnn", "the 64.41 KiB arena does not fit the 58.59 KiB budget");
}

// fit: nothing fitting is a failure with one line saying so; terabyte budgets are sizes, and
// the search stops at the largest value the model's key accepts.
TEST(FaultCases, FitWithNothingFittingSaysSoAndHugeBudgetsStopAtTheKeysRange) {
  Outcome r = Memfold("fit zoo:nmt,size=tiny --budget 1K --vary batch --strategy none");
  EXPECT_EQ(r.code, 1);
  ExpectOneLineNaming(r, "zoo:nmt,size=tiny", "not even batch 1 fits the 1.00 KiB budget");
  r = Memfold("fit zoo:nmt,size=tiny --budget 1T --vary batch --strategy none --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["max_value"], 4096);
  EXPECT_EQ(j["at_key_limit"], true);
  EXPECT_EQ(j["budget_bytes"], int64_t{1} << 40);
}

// A directory or a device is not "no such file"; a key's range prints as integers.
TEST(FaultCases, PathsThatAreNotFilesAndKeyRangesSayWhatTheyAre) {
  ExpectOneLineNaming(Memfold("run /tmp"), "/tmp", "is a directory");
  ExpectOneLineNaming(Memfold("run /dev/null"), "/dev/null", "is not a regular file");
  ExpectOneLineNaming(Memfold("inspect /no/such/model.tflite"), "/no/such/model.tflite",
                      "no such file");
  ExpectOneLineNaming(Memfold("run zoo:mlp,in=0"), "zoo:mlp", "in [1, 1048576]");
}

// ---- models larger than memory -------------------------------------------------------------

// 1,048,576 x 65,536 float32 weights are 256 GiB. Without sanitizers the allocation fails and
// the loader turns it into an error; the address-space limit makes that so on any machine.
// AddressSanitizer aborts on such allocations by design (and needs a huge address space), so
// the sanitizer build skips this case.
// GCC says AddressSanitizer is on with __SANITIZE_ADDRESS__, clang with __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define MEMFOLD_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEMFOLD_TEST_ASAN 1
#endif
#endif

TEST(FaultCases, ZooWeightsLargerThanMemoryAreAnError) {
#if defined(MEMFOLD_TEST_ASAN)
  GTEST_SKIP() << "AddressSanitizer aborts on impossible allocations instead of throwing";
#else
  const std::string model = "zoo:mlp,in=1048576,hidden=65536";
  const Outcome r = Memfold("inspect " + model, "ulimit -v 4000000; ");
  EXPECT_EQ(r.code, 2) << r.err;
  ExpectOneLineNaming(r, model, "more memory than this machine has; choose smaller keys");
#endif
}

// MobileNet v2 at batch 4096 and 1024x1024 plans (a 480 GiB arena, in 64-bit arithmetic) but
// cannot run here: `run` says so before allocating anything.
TEST(FaultCases, RunLargerThanMemoryIsRefusedBeforeAllocating) {
  const std::string model = "zoo:mobilenet_v2,batch=4096,res=1024";
  const Outcome plan = Memfold("plan " + model + " --json");
  ASSERT_EQ(plan.code, 0) << plan.err;
  EXPECT_GT(nlohmann::json::parse(plan.out)["arena_bytes"].get<int64_t>(), int64_t{400} << 30);
  const Outcome run = Memfold("run " + model);
  EXPECT_EQ(run.code, 1) << run.err;
  ExpectOneLineNaming(run, model, "but this machine has");
  EXPECT_NE(run.err.find("`memfold plan` still plans it"), std::string::npos) << run.err;
}

TEST(FaultCases, RunMemoryBoundCountsEveryComputedValueAndSaturates) {
  Result<Graph> cnn = LoadModel("zoo:cnn,res=8,channels=2");
  ASSERT_TRUE(cnn.ok());
  int64_t computed = 0;
  for (const Value& v : cnn->values()) computed += v.is_constant() ? 0 : v.bytes();
  const int64_t input = cnn->value(cnn->inputs[0]).bytes();
  EXPECT_EQ(RunMemoryBound(*cnn), 2 * computed + input);
  EXPECT_TRUE(CheckRunFitsInMemory(*cnn, RunMemoryBound(*cnn)).ok());
  const Status refused = CheckRunFitsInMemory(*cnn, RunMemoryBound(*cnn) - 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("but this machine has"), std::string::npos);
  // Values of 2^62 bytes each: the bound saturates instead of overflowing (UBSan checks).
  Graph huge;
  const ValueId x = AddInput(huge, "x", {int64_t{1} << 60});
  AddOne(huge, "relu", {AddOne(huge, "relu", {x}, {}, "a")}, {}, "b");
  EXPECT_EQ(RunMemoryBound(huge), std::numeric_limits<int64_t>::max());
  EXPECT_FALSE(CheckRunFitsInMemory(huge).ok());
}

// [2^20, 2^20, 2^20] float32 is 2^62 bytes: the reader refuses it, naming the tensor.
TEST(FaultCases, TensorWhoseBytesOverflowIsRejected) {
  Graph g;
  const ValueId x = AddInput(g, "giant", {1 << 20, 1 << 20, 1 << 20});
  SetOutputs(g, {AddOne(g, "relu", {x}, {}, "y")});
  Result<Graph> loaded = LoadTflite(Written(g), "giant.tflite");
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("giant.tflite: tensor 0 'giant' is impossibly large"),
            std::string::npos)
      << loaded.status().message();
}

// ---- unusual but legal shapes --------------------------------------------------------------

// A batch of zero rows: every buffer is empty; loads, plans, runs, outputs identical.
TEST(FaultCases, ZeroSizedTensorsPlanAndRun) {
  Graph g;
  const ValueId x = AddInput(g, "x", {0, 4});
  const ValueId fc =
      AddOne(g, "fully_connected", {AddOne(g, "relu", {x}, {}, "relu"), AddWeight(g, "w", {3, 4})},
             {}, "fc");
  SetOutputs(g, {AddOne(g, "softmax", {fc}, {}, "probabilities")});
  const Bytes file = Written(g);
  Result<fuzz::Stage> stage = ThroughEverything(file);
  ASSERT_TRUE(stage.ok()) << stage.status().message();
  EXPECT_EQ(*stage, fuzz::Stage::kExecuted);
  Result<Graph> loaded = LoadTflite(file, "zero.tflite");
  ASSERT_TRUE(loaded.ok());
  Result<GraphPlan> gp = PlanGraph(*loaded, "greedy");
  ASSERT_TRUE(gp.ok());
  EXPECT_EQ(gp->plan.arena_bytes, 0);
  Result<RunOutputs> out = RunPlanned(*loaded, gp->liveness, gp->plan, DefaultInputs(*loaded));
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->outputs[0].empty());
}

// A scalar broadcast against a rank-6 tensor, then reshaped: plans and runs bit-identically.
TEST(FaultCases, ScalarAndRankSixTensorsPlanAndRun) {
  Graph g;
  const ValueId scalar = AddInput(g, "scalar", {});
  const ValueId six = AddInput(g, "six", {2, 1, 3, 1, 2, 2});
  const ValueId sum = AddOne(g, "add", {scalar, six}, {}, "sum");
  Attrs flat;
  flat.Set("shape", Ints{24});
  SetOutputs(g, {AddOne(g, "reshape", {AddOne(g, "tanh", {sum}, {}, "tanh")}, flat, "flat"),
                 AddOne(g, "relu", {scalar}, {}, "relu")});
  const Bytes file = Written(g);
  Result<fuzz::Stage> stage = ThroughEverything(file);
  ASSERT_TRUE(stage.ok()) << stage.status().message();
  EXPECT_EQ(*stage, fuzz::Stage::kExecuted);
  Result<Graph> loaded = LoadTflite(file, "ranks.tflite");
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->value(0).shape, Shape{});
  EXPECT_EQ(loaded->value(1).shape.size(), 6u);
}

// A rank-6 tensor fed to CONV_2D: the shape check names the operator and what it needs.
TEST(FaultCases, RankSixIntoConvolutionIsAClearError) {
  Graph g;
  const ValueId x = AddInput(g, "x", {1, 1, 4, 4, 2, 1});
  const ValueId w = AddWeight(g, "w", {2, 3, 3, 1});
  Value y{.name = "conv", .dtype = DType::kF32, .shape = {1, 4, 4, 2}};
  const ValueId out = g.AddValue(std::move(y));
  Node conv{.op = "conv2d", .name = "conv", .inputs = {x, w}, .outputs = {out}};
  ASSERT_TRUE(CheckAndFillAttrs(*FindOp("conv2d"), &conv).ok());
  g.AddNode(std::move(conv));
  SetOutputs(g, {out});
  const std::string path = SaveTemp(Written(g), "rank6.tflite");
  const Outcome r = Memfold("plan " + path);
  EXPECT_EQ(r.code, 2);
  ExpectOneLineNaming(r, path, "'conv' (conv2d)");
  fs::remove(path);
}

// ---- dynamic and unknown dimensions --------------------------------------------------------

TEST(FaultCases, UnknownDimensionInTheShapeIsAnError) {
  Result<Graph> mlp = LoadModel("zoo:mlp,in=4,hidden=4,layers=1");
  ASSERT_TRUE(mlp.ok());
  Bytes file = Written(*mlp);
  const auto* model = flatbuffers::GetRoot<tflite::Model>(file.data());
  Poke(file, PositionOf(file, model->subgraphs()->Get(0)->tensors()->Get(0)->shape()->data()), -1);
  const std::string path = SaveTemp(file, "dynamic.tflite");
  const Outcome r = Memfold("inspect " + path);
  EXPECT_EQ(r.code, 2);
  ExpectOneLineNaming(r, path,
                      "tensor 0 'input' has a dynamic dimension (-1) in its shape; re-convert the "
                      "model with fixed input shapes");
  fs::remove(path);
}

// Keras models mark the batch dynamic in shape_signature (-1) and give it as 1 in shape;
// memfold, like TFLM, plans that size.
TEST(FaultCases, DynamicBatchInTheSignatureTakesTheShapesSize) {
  const Bytes file = SharedModel("tflite-micro/hello_world_float.tflite");
  const auto* tensor =
      flatbuffers::GetRoot<tflite::Model>(file.data())->subgraphs()->Get(0)->tensors()->Get(0);
  ASSERT_NE(tensor->shape_signature(), nullptr);
  ASSERT_EQ(tensor->shape_signature()->Get(0), -1);
  Result<Graph> g = LoadTflite(file, "hello.tflite");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->value(0).shape, (Shape{1, 1}));
}

TEST(FaultCases, SignatureThatContradictsTheShapeIsAnError) {
  const Bytes good = SharedModel("tflite-micro/hello_world_float.tflite");
  const auto* signature = flatbuffers::GetRoot<tflite::Model>(good.data())
                              ->subgraphs()
                              ->Get(0)
                              ->tensors()
                              ->Get(0)
                              ->shape_signature();
  Bytes fixed_dim = good;
  Poke(fixed_dim, PositionOf(good, signature->data()) + 4, 7);  // [-1, 7] against shape [1, 1]
  Result<Graph> g = LoadTflite(fixed_dim, "hello.tflite");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("hello.tflite: tensor 0 "), std::string::npos)
      << g.status().message();
  EXPECT_NE(g.status().message().find(
                "shape_signature dimension 1 = 7 but shape 1x1; the file contradicts itself"),
            std::string::npos)
      << g.status().message();
  Bytes shorter = good;
  Poke(shorter, PositionOf(good, signature->data()) - 4, 1);  // the vector's length: rank 1
  g = LoadTflite(shorter, "hello.tflite");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("has a shape_signature of rank 1 but a shape of rank 2"),
            std::string::npos)
      << g.status().message();
}

// A TFLite file without its TFL3 identifier (TFLM reads those) whose root offset's low byte is
// 0x08, as an ONNX file's first byte is: the bytes are not ONNX, so they load as TFLite. Made
// from hello_world by moving the body N bytes on (flatbuffer offsets inside it are relative,
// only the root offset changes); bytes that are neither keep the ONNX reader's message.
TEST(FaultCases, IdentifierlessTfliteStartingAsOnnxLoadsAsTflite) {
  const Bytes good = SharedModel("tflite-micro/hello_world_float.tflite");
  ASSERT_GE(good.size(), 8u);
  uint32_t root = 0;
  std::memcpy(&root, good.data(), 4);
  const uint32_t shift = (0x108 - root) % 0x100;  // a multiple of 4, as root is
  Bytes moved(4 + shift, std::byte{0});
  const uint32_t moved_root = root + shift;
  std::memcpy(moved.data(), &moved_root, 4);
  moved.insert(moved.end(), good.begin() + 4, good.end());
  ASSERT_EQ(moved[0], std::byte{0x08});
  Result<Graph> original = LoadTflite(good, "hello.tflite");
  Result<Graph> loaded = LoadTflite(moved, "moved.tflite");
  ASSERT_TRUE(original.ok() && loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->schedule.size(), original->schedule.size());
  for (size_t k = 0; k < original->schedule.size(); ++k)
    EXPECT_EQ(loaded->node(loaded->schedule[k]).op, original->node(original->schedule[k]).op);

  const Bytes neither = {std::byte{0x08}, std::byte{0x01}, std::byte{0},   std::byte{0},
                         std::byte{'x'},  std::byte{'y'},  std::byte{'z'}, std::byte{'w'}};
  Result<Graph> refused = LoadTflite(neither, "neither.bin");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("neither.bin: not an ONNX model"), std::string::npos)
      << refused.status().message();
}

// ---- empty graphs ---------------------------------------------------------------------------

// An empty Graph plans to an empty arena and runs to no outputs.
TEST(FaultCases, EmptyGraphPlansToNothing) {
  const Graph empty;
  EXPECT_TRUE(VerifyGraph(empty).ok());
  Result<GraphPlan> gp = PlanGraph(empty, "diagonal");
  ASSERT_TRUE(gp.ok()) << gp.status().message();
  EXPECT_EQ(gp->plan.arena_bytes, 0);
  EXPECT_TRUE(VerifyPlan(gp->liveness.requests, gp->plan).ok());
  Result<RunOutputs> out = RunUnplanned(empty, {});
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->outputs.empty());
}

// A file with no operators and no outputs has nothing to plan: an error that says so. One
// with no operators whose output is its input is a legal identity model.
TEST(FaultCases, TfliteWithoutOutputsIsAnErrorAndIdentityModelRuns) {
  Graph nothing;
  nothing.name = "nothing";
  const std::string path = SaveTemp(Written(nothing), "nothing.tflite");
  const Outcome r = Memfold("plan " + path);
  EXPECT_EQ(r.code, 2);
  ExpectOneLineNaming(r, path, "has no outputs");
  fs::remove(path);
  Graph identity;
  const ValueId x = AddInput(identity, "x", {2, 3});
  identity.outputs = {x};
  Result<fuzz::Stage> stage = ThroughEverything(Written(identity));
  ASSERT_TRUE(stage.ok()) << stage.status().message();
  EXPECT_EQ(*stage, fuzz::Stage::kExecuted);
}

// A graph output nothing writes would hand the caller uninitialised memory (found by the
// fuzzer: a file whose operator list was cut short).
TEST(FaultCases, OutputThatNothingProducesIsAnError) {
  Graph g;
  const ValueId x = AddInput(g, "x", {4});
  const ValueId a = AddOne(g, "relu", {x}, {}, "a");
  const ValueId orphan = g.AddValue(Value{.name = "orphan", .shape = {4}});
  SetOutputs(g, {a, orphan});
  const Status s = VerifyGraph(g);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "graph output value 2 'orphan' is never produced: no operator writes it and it is no "
            "input or constant");
  Result<Graph> loaded = LoadTflite(Written(g), "orphan.tflite");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().message().rfind("orphan.tflite: graph output value 2 'orphan'", 0), 0u)
      << loaded.status().message();
}

// ---- cycles -----------------------------------------------------------------------------------

// a = relu(b), b = relu(a): the structural check names the first node and the value.
Graph TwoNodeCycle() {
  Graph g;
  const ValueId x = AddInput(g, "x", {4});
  const ValueId a = AddOne(g, "relu", {x}, {}, "a");
  const ValueId b = AddOne(g, "relu", {a}, {}, "b");
  g.node(0).inputs = {b};
  SetOutputs(g, {b});
  return g;
}

TEST(FaultCases, CycleInAHandWrittenGraphIsAnError) {
  const Status s = VerifyGraph(TwoNodeCycle());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("node 0 'a' (relu) reads value 2 'b' before it is produced"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("cycle"), std::string::npos) << s.message();
  Graph self = TwoNodeCycle();
  self.node(1).inputs = {2};  // b = relu(b)
  self.node(0).inputs = {0};
  const Status loop = VerifyGraph(self);
  ASSERT_FALSE(loop.ok());
  EXPECT_NE(loop.message().find("node 1 'b' (relu) reads its own output"), std::string::npos)
      << loop.message();
}

TEST(FaultCases, CycleInATfliteFileIsAnError) {
  const std::string path = SaveTemp(Written(TwoNodeCycle()), "cycle.tflite");
  const Outcome r = Memfold("plan " + path);
  EXPECT_EQ(r.code, 2);
  ExpectOneLineNaming(r, path, "node 0 'a' (relu) reads value 2 'b' before it is produced");
  fs::remove(path);
}

// ---- duplicate names -------------------------------------------------------------------------

// TFLite does not require unique tensor names and memfold names values by index, so duplicates
// load, plan and run; messages carry the index to tell them apart.
TEST(FaultCases, DuplicateTensorNamesLoadPlanAndRun) {
  Graph g;
  const ValueId x = AddInput(g, "same", {3});
  const ValueId a = AddOne(g, "relu", {x}, {}, "same");
  const ValueId b = AddOne(g, "tanh", {a}, {}, "same");
  SetOutputs(g, {b});
  const Bytes file = Written(g);
  Result<fuzz::Stage> stage = ThroughEverything(file);
  ASSERT_TRUE(stage.ok()) << stage.status().message();
  EXPECT_EQ(*stage, fuzz::Stage::kExecuted);
  const std::string path = SaveTemp(file, "duplicates.tflite");
  const Outcome r = Memfold("plan " + path + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto buffers = nlohmann::json::parse(r.out)["buffers"];
  ASSERT_EQ(buffers.size(), 3u);
  for (const auto& buffer : buffers) EXPECT_EQ(buffer["value"], "same");
  fs::remove(path);
  // A structural error among duplicates names the node by index.
  Graph broken = g;
  broken.node(1).inputs = {b};
  const Status s = VerifyGraph(broken);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("node 1 'same'"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace memfold
