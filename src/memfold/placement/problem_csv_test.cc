// Placement problems as CSV: MiniMalloc's columns, memfold's optional ones, the offsets
// written back, and clear errors on bad files.
#include "memfold/placement/problem_csv.h"

#include <gtest/gtest.h>

#include <random>

#include "memfold/placement/portfolio.h"
#include "memfold/placement/verify_plan.h"

namespace memfold {
namespace {

TEST(ProblemCsv, ReadsMiniMallocRowsWithHalfOpenLifetimes) {
  const Result<PlacementProblem> p =
      ReadPlacementCsv("id,lower,upper,size\nb0,0,3,8\nb1,3,5,4\r\n\nb2,2,4,6\n", "p.csv");
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->requests.size(), 3u);
  // [0, 3) and [3, 5) do not meet; [2, 4) meets both.
  EXPECT_EQ(p->requests[0].first, 0);
  EXPECT_EQ(p->requests[0].last, 2);
  EXPECT_EQ(p->requests[1].first, 3);
  EXPECT_EQ(p->requests[2].last, 3);
  EXPECT_EQ(p->requests[1].bytes, 4);
  EXPECT_EQ(p->requests[0].alignment, 1);
  EXPECT_EQ(WritePlacementCsv(*p, {0, 0, 8}),
            "id,lower,upper,size,offset\nb0,0,3,8,0\nb1,3,5,4,0\nb2,2,4,6,8\n");
}

TEST(ProblemCsv, TimesBeyondInt32BecomeRanksThatKeepEveryConflict) {
  const Result<PlacementProblem> p = ReadPlacementCsv(
      "id,lower,upper,size\na,-5,10000000000,1\nb,10000000000,20000000000,1\nc,0,10000000001,1\n",
      "p.csv");
  ASSERT_TRUE(p.ok()) << p.status().message();
  const auto& r = p->requests;
  auto meet = [&](int a, int b) { return r[a].first <= r[b].last && r[b].first <= r[a].last; };
  EXPECT_FALSE(meet(0, 1));
  EXPECT_TRUE(meet(0, 2));
  EXPECT_TRUE(meet(1, 2));
}

TEST(ProblemCsv, RoundTripsMemfoldsOwnProblems) {
  std::vector<BufferRequest> requests = {
      {.id = 0, .bytes = 100, .alignment = 16, .first = 0, .last = 1},
      {.id = 1, .bytes = 60, .alignment = 16, .first = 1, .last = 2, .may_overlap = {{0, 40}}}};
  const PlacementProblem written = ProblemFromRequests(requests);
  const std::string text = WritePlacementCsv(written, {0, 64});
  EXPECT_EQ(
      text,
      "id,lower,upper,size,alignment,overlaps,offset\n0,0,2,100,16,,0\n1,1,3,60,16,0:40,64\n");
  const Result<PlacementProblem> read = ReadPlacementCsv(text, "p.csv");
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->offsets, (std::vector<int64_t>{0, 64}));
  for (size_t k = 0; k < requests.size(); ++k) {
    EXPECT_EQ(read->requests[k].first, requests[k].first);
    EXPECT_EQ(read->requests[k].last, requests[k].last);
    EXPECT_EQ(read->requests[k].bytes, requests[k].bytes);
    EXPECT_EQ(read->requests[k].alignment, requests[k].alignment);
  }
  ASSERT_EQ(read->requests[1].may_overlap.size(), 1u);
  EXPECT_EQ(read->requests[1].may_overlap[0].input, 0);
  EXPECT_EQ(read->requests[1].may_overlap[0].max_bytes, 40);
}

TEST(ProblemCsv, BadFilesGetAMessageNamingTheLine) {
  auto error = [](const std::string& text) {
    const Result<PlacementProblem> p = ReadPlacementCsv(text, "p.csv");
    return p.ok() ? std::string("accepted") : p.status().message();
  };
  EXPECT_EQ(error(""), "p.csv: empty file");
  EXPECT_EQ(error("id,lower,upper\n"),
            "p.csv: the header has no 'size' column (expected id,lower,upper,size)");
  EXPECT_EQ(error("id,lower,upper,size\na,0,1\n"), "p.csv: line 2: 3 fields, the header has 4");
  EXPECT_EQ(error("id,lower,upper,size\na,0,1,x\n"), "p.csv: line 2: 'x' is not an integer");
  EXPECT_EQ(error("id,lower,upper,size\na,0,1,99999999999999999999\n"),
            "p.csv: line 2: '99999999999999999999' is not an integer");
  EXPECT_EQ(error("id,lower,upper,size\na,3,3,1\n"),
            "p.csv: line 2: upper must be greater than lower (a half-open lifetime)");
  EXPECT_EQ(error("id,lower,upper,size\na,0,1,-1\n"), "p.csv: line 2: size must be 0 .. 2^40");
  EXPECT_EQ(error("id,lower,upper,size\na,0,1,1\na,1,2,1\n"), "p.csv: line 3: id 'a' repeats");
  EXPECT_EQ(error("id,lower,upper,size,alignment\na,0,1,1,0\n"),
            "p.csv: line 2: alignment must be 1 .. 2^30");
  EXPECT_EQ(error("id,lower,upper,size,overlaps\na,0,1,1,z:3\n"),
            "p.csv: line 2: overlap names unknown id 'z'");
  EXPECT_EQ(error("id,lower,upper,size,overlaps\na,0,1,1,a:3\n"),
            "p.csv: line 2: overlap 'a:3' is invalid");
}

// Randomly damaged files (one or two characters overwritten, fixed seed): each is refused with a
// message or placed, and every placement passes the verifier. Run under the sanitizers too.
TEST(ProblemCsv, DamagedFilesAreRefusedOrPlacedCorrectly) {
  std::string text = "id,lower,upper,size,alignment,overlaps\n";
  for (int k = 0; k < 24; ++k) {
    text += std::to_string(k) + "," + std::to_string(k % 7) + "," +
            std::to_string(k % 7 + 1 + k % 3) + "," + std::to_string(64 * (k % 5 + 1)) + ",16," +
            (k > 0 ? std::to_string(k - 1) + ":32" : "") + "\n";
  }
  ASSERT_TRUE(ReadPlacementCsv(text, "p.csv").ok());
  const std::string alphabet = "0123456789,:-\n x";
  std::mt19937 rng(5);
  int placed = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string damaged = text;
    for (int k = 0; k <= trial % 2; ++k) {
      damaged[rng() % damaged.size()] = alphabet[rng() % alphabet.size()];
    }
    const Result<PlacementProblem> p = ReadPlacementCsv(damaged, "p.csv");
    if (!p.ok()) {
      EXPECT_EQ(p.status().message().rfind("p.csv: ", 0), 0u) << p.status().message();
      continue;
    }
    const PortfolioResult result = PlaceWithPortfolio(p->requests, {.seconds = 0.05});
    EXPECT_TRUE(VerifyPlan(p->requests, result.plan).ok()) << damaged;
    ++placed;
  }
  EXPECT_GT(placed, 40);
}

}  // namespace
}  // namespace memfold
