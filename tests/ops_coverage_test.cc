// The operator coverage table: docs/operators.md and the README carry `memfold ops --markdown`
// verbatim, and
// the table says what the registry and the TFLite mapping say.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/program_runner.h"

namespace memfold {
namespace {

TEST(OpsCoverage, TheDocumentsCarryTheCommandsOutput) {
  const auto out = testing::Memfold("ops --markdown");
  ASSERT_EQ(out.code, 0) << out.err;
  for (const char* doc_path : {"docs/operators.md", "README.md"}) {
    const std::string doc = testing::ReadFile(std::filesystem::path(MEMFOLD_SOURCE_DIR) / doc_path);
    EXPECT_NE(doc.find(out.out), std::string::npos)
        << doc_path << " is stale: regenerate its table with `memfold ops --markdown`";
  }
}

TEST(OpsCoverage, RowsFollowTheRegistry) {
  const auto out = testing::Memfold("ops --json");
  ASSERT_EQ(out.code, 0) << out.err;
  const auto ops = out.Json()["operators"];
  ASSERT_EQ(ops.size(), 159u);
  EXPECT_EQ(ops[3]["tflite"], "CONV_2D");
  EXPECT_TRUE(ops[3]["int8"].get<bool>());
  EXPECT_TRUE(ops[3]["device"].get<bool>());
  EXPECT_EQ(ops[97]["op"], "resize_nearest_neighbor");
  EXPECT_TRUE(ops[97]["int16"].get<bool>());
  EXPECT_EQ(ops[44]["tflite"], "UNIDIRECTIONAL_SEQUENCE_LSTM");
  EXPECT_TRUE(ops[44]["reads"].get<bool>());
  EXPECT_TRUE(ops[44]["int16"].get<bool>());
  EXPECT_EQ(ops[46]["tflite"], "BIDIRECTIONAL_SEQUENCE_RNN");
  EXPECT_FALSE(ops[46]["reads"].get<bool>());
  EXPECT_EQ(ops[22]["overlap"], "alias (no copy)");
  EXPECT_EQ(ops[86]["tflite"], "LOGICAL_AND");
  EXPECT_EQ(ops[86]["other_types"], nlohmann::json::array({"bool"}));
  EXPECT_TRUE(ops[86]["device"].get<bool>());
}

}  // namespace
}  // namespace memfold
