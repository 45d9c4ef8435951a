// `memfold place` as a user runs it: MiniMalloc's challenging instances placed within their
// capacity (checked here, pair by pair, from the files themselves, not by memfold's verifier),
// the same answer twice, memfold's own exported problems replayed, and bad input refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/program_runner.h"

namespace {

using memfold::testing::Memfold;
using memfold::testing::ReadFile;

constexpr int64_t kCapacity = 1'048'576;

struct Row {
  int64_t lower, upper, size, offset = -1;
};

// The rows of a CSV by column name; `offset` when the file has one.
std::vector<Row> ReadRows(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);
  std::map<std::string, size_t> column;
  {
    std::istringstream header(line);
    std::string name;
    for (size_t k = 0; std::getline(header, name, ','); ++k) column[name] = k;
  }
  std::vector<Row> rows;
  while (std::getline(lines, line)) {
    std::vector<std::string> fields;
    std::istringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) fields.push_back(cell);
    Row row{std::stoll(fields[column.at("lower")]), std::stoll(fields[column.at("upper")]),
            std::stoll(fields[column.at("size")])};
    if (column.contains("offset")) row.offset = std::stoll(fields[column.at("offset")]);
    rows.push_back(row);
  }
  return rows;
}

// Offsets within [0, capacity) and no two buffers live together sharing a byte.
std::string CheckPlacement(const std::vector<Row>& problem, const std::vector<Row>& placed,
                           int64_t capacity) {
  if (placed.size() != problem.size()) return "row count changed";
  for (size_t i = 0; i < placed.size(); ++i) {
    if (placed[i].lower != problem[i].lower || placed[i].size != problem[i].size)
      return "row " + std::to_string(i) + " changed";
    if (placed[i].offset < 0 || placed[i].offset + placed[i].size > capacity)
      return "row " + std::to_string(i) + " outside the capacity";
    for (size_t j = 0; j < i; ++j) {
      const Row &a = placed[i], &b = placed[j];
      const bool live_together = a.lower < b.upper && b.lower < a.upper;
      const bool share_bytes = a.offset < b.offset + b.size && b.offset < a.offset + a.size;
      if (live_together && share_bytes)
        return "rows " + std::to_string(j) + " and " + std::to_string(i) + " overlap";
    }
  }
  return "";
}

std::vector<std::filesystem::path> ChallengingInstances() {
  std::vector<std::filesystem::path> files;
  const std::filesystem::path dir = std::filesystem::path(MEMFOLD_SHARED_DIR) / "placement";
  if (!std::filesystem::is_directory(dir)) return files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".csv") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(Place, MiniMallocsChallengingInstancesFitTheirCapacity) {
  const std::vector<std::filesystem::path> files = ChallengingInstances();
  if (files.empty()) GTEST_SKIP() << "../shared/placement not present";
  ASSERT_EQ(files.size(), 11u);
  const auto out = std::filesystem::temp_directory_path() / "memfold_place_out.csv";
  for (const std::filesystem::path& file : files) {
    const auto run =
        Memfold("place " + file.string() + " --capacity 1048576 --json -o " + out.string());
    ASSERT_EQ(run.code, 0) << file << ": " << run.err;
    const nlohmann::json j = run.Json();
    EXPECT_TRUE(j["fits"].get<bool>());
    EXPECT_LE(j["arena_bytes"].get<int64_t>(), kCapacity);
    EXPECT_GE(j["arena_bytes"].get<int64_t>(), j["lower_bound"].get<int64_t>());
    EXPECT_EQ(CheckPlacement(ReadRows(ReadFile(file)), ReadRows(ReadFile(out)), kCapacity), "")
        << file;
  }
  std::filesystem::remove(out);
}

TEST(Place, SameProblemSameOffsets) {
  const std::vector<std::filesystem::path> files = ChallengingInstances();
  if (files.empty()) GTEST_SKIP() << "../shared/placement not present";
  const auto first = std::filesystem::temp_directory_path() / "memfold_place_a.csv";
  const auto second = std::filesystem::temp_directory_path() / "memfold_place_b.csv";
  const std::string problem = files[1].string() + " --capacity 1048576 -o ";  // B
  ASSERT_EQ(Memfold("place " + problem + first.string()).code, 0);
  ASSERT_EQ(Memfold("place " + problem + second.string()).code, 0);
  EXPECT_EQ(ReadFile(first), ReadFile(second));
  std::filesystem::remove(first);
  std::filesystem::remove(second);
}

// A model's placement problem, exported by `plan`, placed again: no larger than the plan, and
// the exact solver proves the greedy problem's optimum.
TEST(Place, ReplaysTheProblemsPlanExports) {
  const std::string model =
      std::string(MEMFOLD_SHARED_DIR) + "/models/tflite-micro/person_detect.tflite";
  const auto csv = std::filesystem::temp_directory_path() / "memfold_exported.csv";
  for (const char* planner : {"greedy", "diagonal"}) {
    const auto plan = Memfold("plan " + model + " --planner " + planner +
                              " --json --export-problem " + csv.string());
    ASSERT_EQ(plan.code, 0) << plan.err;
    const nlohmann::json p = plan.Json();
    EXPECT_EQ(p["optimal"].get<bool>(), p["arena_bytes"].get<int64_t>() <=
                                            (p["lower_bound_bytes"].get<int64_t>() + 15) / 16 * 16);
    const std::vector<Row> exported = ReadRows(ReadFile(csv));
    EXPECT_EQ(exported.size(), p["buffers"].size());
    const auto place = Memfold("place " + csv.string() + " --json");
    ASSERT_EQ(place.code, 0) << place.err;
    const nlohmann::json q = place.Json();
    EXPECT_LE(q["arena_bytes"].get<int64_t>(), p["arena_bytes"].get<int64_t>()) << planner;
    if (std::string(planner) == "greedy") {
      EXPECT_TRUE(q["optimal"].get<bool>());
    }
  }
  std::filesystem::remove(csv);
}

// A training step's problem (Echo's plan of a tiny ResNet): placed again no larger than the
// arena its own offsets span.
TEST(Place, ReplaysATrainingStepsProblem) {
  const auto csv = std::filesystem::temp_directory_path() / "memfold_training_problem.csv";
  const auto train = Memfold(
      "train zoo:resnet,size=tiny --strategy echo --plan-only --json "
      "--export-problem " +
      csv.string());
  ASSERT_EQ(train.code, 0) << train.err;
  const std::vector<Row> exported = ReadRows(ReadFile(csv));
  ASSERT_GT(exported.size(), 50u);
  int64_t planned_arena = 0;
  for (const Row& row : exported) planned_arena = std::max(planned_arena, row.offset + row.size);
  const auto place = Memfold("place " + csv.string() + " --json");
  ASSERT_EQ(place.code, 0) << place.err;
  EXPECT_LE(place.Json()["arena_bytes"].get<int64_t>(), (planned_arena + 15) / 16 * 16);
  EXPECT_EQ(Memfold("train zoo:resnet,size=tiny --strategy all --plan-only --export-problem " +
                    csv.string())
                .code,
            2);
  std::filesystem::remove(csv);
}

TEST(Place, BadInputIsRefusedWithItsLine) {
  const auto csv = std::filesystem::temp_directory_path() / "memfold_bad_problem.csv";
  { std::ofstream(csv) << "id,lower,upper,size\na,0,1,8\nb,2,1,8\n"; }
  const auto bad = Memfold("place " + csv.string());
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("line 3: upper must be greater than lower"), std::string::npos) << bad.err;
  { std::ofstream(csv) << "id,lower,upper,size\na,0,2,8\nb,1,3,8\n"; }
  const auto tight = Memfold("place " + csv.string() + " --capacity 15 --json");
  EXPECT_EQ(tight.code, 1);
  EXPECT_FALSE(tight.Json()["fits"].get<bool>());
  EXPECT_EQ(Memfold("place " + csv.string() + " --capacity lots").code, 2);
  EXPECT_EQ(Memfold("place /no/such/file.csv").code, 2);
  std::filesystem::remove(csv);
}

}  // namespace
