// VerifyPlan: what it accepts, what it rejects and what its messages say.

#include "memfold/placement/verify_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "memfold/placement/plan_test_util.h"

namespace memfold {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

Plan MakePlan(int64_t arena_bytes, std::vector<int64_t> offsets) {
  return {.planner = "test", .arena_bytes = arena_bytes, .offsets = std::move(offsets)};
}

TEST(VerifyPlanTest, AcceptsDisjointLiveBuffers) {
  const std::vector<BufferRequest> requests = {Request(0, 32, 0, 1), Request(1, 32, 1, 2)};
  EXPECT_TRUE(VerifyPlan(requests, MakePlan(64, {0, 32})).ok());
}

TEST(VerifyPlanTest, AcceptsSharedBytesAtDisjointTimes) {
  const std::vector<BufferRequest> requests = {Request(0, 32, 0, 0), Request(1, 32, 1, 1)};
  EXPECT_TRUE(VerifyPlan(requests, MakePlan(32, {0, 0})).ok());
}

TEST(VerifyPlanTest, RejectsOverlappingLiveBuffersNamingBoth) {
  // Both live at step 1; [0,32) and [16,48) share [16,32).
  const std::vector<BufferRequest> requests = {Request(0, 32, 0, 1), Request(1, 32, 1, 2)};
  const Status status = VerifyPlan(requests, MakePlan(48, {0, 16}));
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), AllOf(HasSubstr("buffer 0 at [0, 32) (32 B, live 0..1)"),
                                      HasSubstr("buffer 1 at [16, 48) (32 B, live 1..2)"),
                                      HasSubstr("neither names the other")));
}

TEST(VerifyPlanTest, RejectsOverlapInAlignmentPadding) {
  // 20 payload bytes occupy 32 with alignment 16, so the second buffer may not start at 20.
  const std::vector<BufferRequest> requests = {Request(0, 20, 0, 0, 16), Request(1, 8, 0, 0, 4)};
  EXPECT_FALSE(VerifyPlan(requests, MakePlan(32, {0, 20})).ok());
}

TEST(VerifyPlanTest, RejectsMisalignedOffset) {
  const Status status = VerifyPlan(std::vector{Request(0, 16, 0, 0)}, MakePlan(32, {8}));
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("not aligned to its alignment of 16"));
}

TEST(VerifyPlanTest, RejectsOffsetPastArena) {
  // Occupies [16, 48) but the arena has 32 bytes.
  const Status status = VerifyPlan(std::vector{Request(0, 20, 0, 0)}, MakePlan(32, {16}));
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("ends past the arena of 32 B"));
}

TEST(VerifyPlanTest, RejectsNegativeOffsetAndWrongOffsetCount) {
  const std::vector<BufferRequest> requests = {Request(0, 16, 0, 0)};
  EXPECT_FALSE(VerifyPlan(requests, MakePlan(16, {-16})).ok());
  EXPECT_THAT(VerifyPlan(requests, MakePlan(16, {0, 0})).message(),
              HasSubstr("2 offsets for 1 requests"));
}

TEST(VerifyPlanTest, RejectsMalformedRequests) {
  std::vector<BufferRequest> requests = {Request(1, 16, 0, 0)};
  EXPECT_THAT(VerifyPlan(requests, MakePlan(16, {0})).message(), HasSubstr("ids must equal"));
  requests = {Request(0, 16, 2, 1)};
  EXPECT_THAT(VerifyPlan(requests, MakePlan(16, {0})).message(), HasSubstr("after last step"));
  requests = {Request(0, 16, 0, 0)};
  requests[0].may_overlap = {{.input = 3, .max_bytes = 0}};
  EXPECT_THAT(VerifyPlan(requests, MakePlan(16, {0})).message(), HasSubstr("unknown buffer 3"));
}

// Diagonal overlap: output 1 (64 B, made at step 1) may overlap the start of input 0 (64 B,
// read for the last time at step 1) by 16 bytes: with the output at 0, the input may start at
// 0 + 64 - 16 = 48. Unaligned so that one byte can be tested.
std::vector<BufferRequest> DiagonalPair(int32_t input_last) {
  std::vector<BufferRequest> requests = {Request(0, 64, 0, input_last, 1), Request(1, 64, 1, 2, 1)};
  requests[1].may_overlap = {{.input = 0, .max_bytes = 16}};
  return requests;
}

TEST(VerifyPlanTest, AcceptsAllowanceUsedExactly) {
  EXPECT_TRUE(VerifyPlan(DiagonalPair(1), MakePlan(112, {48, 0})).ok());
}

TEST(VerifyPlanTest, RejectsAllowanceExceededByOneByte) {
  const Status status = VerifyPlan(DiagonalPair(1), MakePlan(111, {47, 0}));
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(),
              HasSubstr("buffer 1 overlaps the start of input 0 by 17 B, more than its "
                        "allowance of 16 B"));
}

TEST(VerifyPlanTest, RejectsAllowanceWhenInputOutlivesTheOp) {
  const Status status = VerifyPlan(DiagonalPair(2), MakePlan(112, {48, 0}));
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("only if it dies at step 1, but it lives until 2"));
}

TEST(VerifyPlanTest, AllowedOverlapDoesNotHideAThirdBuffer) {
  // Output 1 at [0,100) may cover input 0 at [10,20) (allowance 90: input may start at 10).
  // Buffer 2 at [50,60) is live with both; its nearest lower neighbour is the input, which
  // ends at 20, but the output reaches over it. Both admission orders must catch it.
  for (const bool third_first : {false, true}) {
    const int32_t out = third_first ? 2 : 1;
    const int32_t third = third_first ? 1 : 2;
    std::vector<BufferRequest> requests(3);
    requests[0] = Request(0, 10, 0, 1, 1);
    requests[out] = Request(out, 100, 1, 2, 1);
    requests[out].may_overlap = {{.input = 0, .max_bytes = 90}};
    requests[third] = Request(third, 10, 1, 1, 1);
    std::vector<int64_t> offsets(3);
    offsets[0] = 10;
    offsets[out] = 0;
    offsets[third] = 50;
    const Status status = VerifyPlan(requests, MakePlan(100, offsets));
    ASSERT_FALSE(status.ok()) << "third_first=" << third_first;
    EXPECT_THAT(status.message(),
                AllOf(HasSubstr("buffer " + std::to_string(out) + " at [0, 100)"),
                      HasSubstr("buffer " + std::to_string(third) + " at [50, 60)")));
    offsets[third] = 100;
    EXPECT_TRUE(VerifyPlan(requests, MakePlan(110, offsets)).ok());
  }
}

}  // namespace
}  // namespace memfold
