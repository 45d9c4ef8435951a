// The naive planner.

#include "memfold/placement/planner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "memfold/placement/plan_test_util.h"
#include "memfold/placement/verify_plan.h"

namespace memfold {
namespace {

using ::testing::ElementsAre;

TEST(NaivePlannerTest, EmptyRequestsGiveEmptyArena) {
  const Plan plan = NaivePlanner().Place({});
  EXPECT_EQ(plan.arena_bytes, 0);
  EXPECT_TRUE(plan.offsets.empty());
}

TEST(NaivePlannerTest, StacksAlignedBuffersInRequestOrderIgnoringLifetimes) {
  const std::vector<BufferRequest> requests = {
      Request(0, 10, 0, 0, 16),  // offset 0, occupies 16 -> cursor 16
      Request(1, 20, 5, 5, 4),   // AlignUp(16, 4) = 16, occupies 20 -> cursor 36
      Request(2, 5, 0, 9, 64),   // AlignUp(36, 64) = 64, occupies 64 -> arena 128
  };
  const Plan plan = NaivePlanner().Place(requests);
  EXPECT_THAT(plan.offsets, ElementsAre(0, 16, 64));
  EXPECT_EQ(plan.arena_bytes, 128);
  EXPECT_TRUE(VerifyPlan(requests, plan).ok());
}

}  // namespace
}  // namespace memfold
