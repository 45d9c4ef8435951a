// The fuzz corpus (tests/fuzz_corpus/tflite: the seeds of fuzz/seed_graphs.h merged with what
// tflite_reader_fuzz found; tests/fuzz_corpus/onnx: scripts/onnx_fuzz_seeds.py's models) replayed
// through the fuzzer's own entry, compiled with GCC: every file must load and be rejected with a
// well-formed message, or plan (and, when small, run) with every invariant holding. A file that
// once crashed memfold stays here as a regression test.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>

#include "fuzz/fuzz_entry.h"
#include "fuzz/seed_graphs.h"
#include "memfold/ops/registry.h"
#include "memfold/placement/lower_bound.h"
#include "memfold/placement/verify_plan.h"
#include "tests/test_models.h"

namespace memfold::fuzz {
namespace {

namespace fs = std::filesystem;

constexpr int kMutationsPerModel = 1;

std::vector<uint8_t> ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

TEST(FuzzReplay, EveryCorpusFileRunsCleanly) {
  std::map<Stage, int> reached;
  int64_t total_bytes = 0;
  std::vector<fs::path> files;
  for (const char* format : {"tflite", "onnx"}) {
    const fs::path corpus = fs::path(MEMFOLD_FUZZ_CORPUS) / format;
    ASSERT_TRUE(fs::is_directory(corpus)) << corpus;
    for (const fs::directory_entry& entry : fs::directory_iterator(corpus))
      files.push_back(entry.path());
  }
  for (const fs::path& file : files) {
    const fs::directory_entry entry(file);
    const std::vector<uint8_t> bytes = ReadBytes(entry.path());
    total_bytes += static_cast<int64_t>(bytes.size());
    const Result<Stage> stage = RunTfliteInput(bytes);
    ASSERT_TRUE(stage.ok()) << entry.path().filename() << ": " << stage.status().message();
    ++reached[*stage];
  }
  // The corpus keeps inputs that get all the way through, and ones the reader refuses.
  EXPECT_GE(reached[Stage::kExecuted], 4);
  EXPECT_GE(reached[Stage::kRejected], 10);
  EXPECT_LT(total_bytes, 2 << 20) << "keep the corpus small: merge it with -merge=1";
}

// Randomly mutated copies of the real models (a few bytes overwritten, fixed seed) through
// the whole entry, every command's output included: none may crash memfold, print invalid
// JSON or fail without its one-line message. (Run once by hand with 500 copies and 2,406
// command runs before this test existed; it found the non-UTF-8 names.) One copy per model:
// each runs `best` in the report, minutes under the sanitizers, and libFuzzer mutates more.
TEST(FuzzReplay, MutatedSharedModelsPassEveryInvariant) {
  std::mt19937 rng(12);
  int mutated = 0;
  for (const std::string& path : testing::SharedModelFiles()) {
    const std::vector<uint8_t> original = ReadBytes(path);
    for (int copy = 0; copy < kMutationsPerModel; ++copy) {
      std::vector<uint8_t> bytes = original;
      const int flips = std::uniform_int_distribution<int>(1, 8)(rng);
      for (int f = 0; f < flips; ++f) {
        bytes[std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng)] =
            static_cast<uint8_t>(rng());
      }
      const Result<Stage> stage = RunTfliteInput(bytes);
      ASSERT_TRUE(stage.ok()) << path << " copy " << copy << ": " << stage.status().message();
      ++mutated;
    }
  }
  EXPECT_GE(mutated, 16);
}

// Independently of the checked-in corpus: the seeds built today reach the stage they are for.
TEST(FuzzReplay, SeedsReachTheirStage) {
  const auto seeds = SeedFiles(MEMFOLD_SHARED_DIR);
  ASSERT_TRUE(seeds.ok()) << seeds.status().message();
  ASSERT_EQ(seeds->size(), 10u);
  for (const auto& [name, bytes] : *seeds) {
    const Result<Stage> stage =
        RunTfliteInput({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    ASSERT_TRUE(stage.ok()) << name << ": " << stage.status().message();
    const Stage expected =
        name.find("prefix") != std::string::npos ? Stage::kRejected : Stage::kExecuted;
    EXPECT_EQ(*stage, expected) << name << " reached " << StageName(*stage);
  }
}

// Found by the fuzzer on its int8 seed: the overlap lower bound subtracted only the allowed
// payload overlap, but the output's alignment padding lies over the input too. Here a 72 B
// output (80 B occupied) over all of a dying 288 B input fits in 288 B; the bound said 296.
TEST(FuzzFindings, OverlapLowerBoundCountsTheOutputsPadding) {
  const std::vector<BufferRequest> requests = {
      {.id = 0, .bytes = 288, .first = 0, .last = 1},
      {.id = 1, .bytes = 72, .first = 1, .last = 2, .may_overlap = {{0, 72}}}};
  const Plan plan{.planner = "by hand", .arena_bytes = 288, .offsets = {0, 0}};
  ASSERT_TRUE(VerifyPlan(requests, plan).ok());
  EXPECT_EQ(LowerBoundWithOverlaps(requests), 288);
  // An allowance past a small input: the input (32 B occupied) sits inside the output's 112 B.
  const std::vector<BufferRequest> small_input = {
      {.id = 0, .bytes = 20, .first = 0, .last = 1},
      {.id = 1, .bytes = 100, .first = 1, .last = 2, .may_overlap = {{0, 50}}}};
  const Plan inside{.planner = "by hand", .arena_bytes = 112, .offsets = {64, 0}};
  ASSERT_TRUE(VerifyPlan(small_input, inside).ok());
  EXPECT_EQ(LowerBoundWithOverlaps(small_input), 112);
}

// Found by the fuzzer in CI: an int8 softmax whose output the file declared float32 passed
// shape inference, and the int8 kernel left most of that output unwritten (so planned and
// unplanned runs differed). Shape inference now refuses the pair.
TEST(FuzzFindings, Int8SoftmaxCannotProduceFloat) {
  Graph g;
  Value x{.name = "x", .dtype = DType::kI8, .shape = {1, 5}, .role = Role::kInput};
  g.inputs = {g.AddValue(std::move(x))};
  Attrs to_float;
  to_float.Set("output_dtype", std::string("f32"));
  Result<std::vector<ValueId>> bad = AddOp(&g, "softmax", {0}, to_float, "softmax");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("softmax of i8 cannot produce f32"), std::string::npos)
      << bad.status().message();
  Attrs to_int16;
  to_int16.Set("output_dtype", std::string("i16"));
  EXPECT_TRUE(AddOp(&g, "softmax", {0}, to_int16, "softmax16").ok());
}

}  // namespace
}  // namespace memfold::fuzz
