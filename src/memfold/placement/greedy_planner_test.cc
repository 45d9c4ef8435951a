// Golden cases for the greedy planner, with the placement worked out in the comments.
// Notation: "idN size [first,last] -> offset". Placement order is by size, largest first;
// equal sizes in reverse request order.

#include "memfold/placement/greedy_planner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "memfold/placement/lower_bound.h"
#include "memfold/placement/plan_test_util.h"
#include "memfold/placement/verify_plan.h"

namespace memfold {
namespace {

using ::testing::ElementsAre;

Plan PlaceAndVerify(const std::vector<BufferRequest>& requests) {
  Plan plan = GreedyPlanner().Place(requests);
  const Status status = VerifyPlan(requests, plan);
  EXPECT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(plan.planner, "greedy");
  return plan;
}

TEST(GreedyPlannerTest, EmptyRequestsGiveEmptyArena) {
  const Plan plan = PlaceAndVerify({});
  EXPECT_EQ(plan.arena_bytes, 0);
  EXPECT_TRUE(plan.offsets.empty());
}

TEST(GreedyPlannerTest, RoundsSizesUpToAlignment) {
  // Occupied sizes 16 and 32. id1 32 -> 0; id0 16 [0,0] meets id1 at [0,32) -> 32.
  const Plan plan = PlaceAndVerify({Request(0, 10, 0, 0), Request(1, 20, 0, 0)});
  EXPECT_THAT(plan.offsets, ElementsAre(32, 0));
  EXPECT_EQ(plan.arena_bytes, 48);
}

TEST(GreedyPlannerTest, EqualSizesArePlacedInReverseRequestOrder) {
  // All live at step 0. Order: the 48s reversed (id2, id0), then the 32s reversed (id3, id1).
  // id2 -> 0; id0 -> 48; id3 -> 96; id1 -> 128; arena 128 + 32 = 160.
  const Plan plan = PlaceAndVerify(
      {Request(0, 48, 0, 0), Request(1, 32, 0, 0), Request(2, 48, 0, 0), Request(3, 32, 0, 0)});
  EXPECT_THAT(plan.offsets, ElementsAre(48, 128, 0, 96));
  EXPECT_EQ(plan.arena_bytes, 160);
}

TEST(GreedyPlannerTest, TakesTheFirstGapThatFitsNotTheTightest) {
  // Unaligned (alignment 1) so sizes can be chosen freely; sizes are distinct, order is id0..5.
  //   id0 64 [0,0] -> 0                        [0,64)
  //   id1 32 [0,1] meets id0: 0+64             [64,96)
  //   id2 20 [0,0] meets id0, id1: 96          [96,116)
  //   id3 12 [0,1] meets id0, id1, id2: 116    [116,128)
  //   id4 11 [1,1] meets id1 [64,96), id3: gap 64 - 0 >= 11 -> 0     [0,11)
  //   id5 10 [1,1] meets id4 [0,11), id1 [64,96), id3 [116,128):
  //       id4: gap 0 < 10, candidate 11; id1: gap 64 - 11 = 53 >= 10 -> 11.
  //       The gap [96,116) of 20 bytes would fit more tightly; TFLM takes the first one.
  const Plan plan =
      PlaceAndVerify({Request(0, 64, 0, 0, 1), Request(1, 32, 0, 1, 1), Request(2, 20, 0, 0, 1),
                      Request(3, 12, 0, 1, 1), Request(4, 11, 1, 1, 1), Request(5, 10, 1, 1, 1)});
  EXPECT_THAT(plan.offsets, ElementsAre(0, 64, 96, 116, 0, 11));
  EXPECT_EQ(plan.arena_bytes, 128);
}

TEST(GreedyPlannerTest, RoundsCandidateUpToAlignmentWhenAlignmentsDiffer) {
  // id0 48 (align 16) -> 0; id1 10 (align 32, occupies 32) meets id0: AlignUp(48, 32) = 64.
  const Plan plan = PlaceAndVerify({Request(0, 48, 0, 0), Request(1, 10, 0, 0, 32)});
  EXPECT_THAT(plan.offsets, ElementsAre(0, 64));
  EXPECT_EQ(plan.arena_bytes, 96);
}

// The next three are the buffers and expected results of TFLM's greedy_memory_planner_test.cc.
// TFLM's planner gets sizes already aligned by its allocator; alignment 1 keeps them as given.

TEST(GreedyPlannerTest, TflmBasics) {
  // id0 10 [0,1] -> 0; id1 20 [2,3] shares no step with id0 -> 0. Arena 20.
  const Plan plan = PlaceAndVerify({Request(0, 10, 0, 1, 1), Request(1, 20, 2, 3, 1)});
  EXPECT_THAT(plan.offsets, ElementsAre(0, 0));
  EXPECT_EQ(plan.arena_bytes, 20);
}

TEST(GreedyPlannerTest, TflmMedium) {
  // Order by size: id4 50, id3 40, id2 30, id1 20, id0 10.
  //   id4 50 [0,1] -> 0                                            [0,50)
  //   id3 40 [3,4] shares no step with id4 -> 0                     [0,40)
  //   id2 30 [2,3] meets id3 [0,40): gap 0 < 30 -> 40                [40,70)
  //   id1 20 [1,2] meets id4 [0,50), id2 [40,70):
  //       id4: gap 0, candidate 50; id2: gap 40 - 50 < 0, candidate max(50, 70) = 70 -> 70
  //   id0 10 [0,1] meets id4 [0,50), id1 [70,90):
  //       id4: candidate 50; id1: gap 70 - 50 = 20 >= 10 -> 50
  // Arena = max(50, 40, 70, 90, 60) = 90.
  const Plan plan =
      PlaceAndVerify({Request(0, 10, 0, 1, 1), Request(1, 20, 1, 2, 1), Request(2, 30, 2, 3, 1),
                      Request(3, 40, 3, 4, 1), Request(4, 50, 0, 1, 1)});
  EXPECT_THAT(plan.offsets, ElementsAre(50, 70, 40, 0, 0));
  EXPECT_EQ(plan.arena_bytes, 90);
}

TEST(GreedyPlannerTest, TflmOverlapCase) {
  // id0 100 [0,1] -> 0; id1 50 [2,3] -> 0; id2 20 [1,2] meets both at 0 -> 100. Arena 120.
  const Plan plan =
      PlaceAndVerify({Request(0, 100, 0, 1, 1), Request(1, 50, 2, 3, 1), Request(2, 20, 1, 2, 1)});
  EXPECT_THAT(plan.offsets, ElementsAre(0, 0, 100));
  EXPECT_EQ(plan.arena_bytes, 120);
}

TEST(GreedyPlannerTest, TflmPersonDetectionStaysBelowTheSumOfSizes) {
  // TFLM's TestPersonDetectionModel: 29 buffers of its 250 KB MobileNet person detector.
  // TFLM only asserts no overlap and an arena below the sum of sizes, 241,027 bytes.
  const std::vector<std::array<int32_t, 3>> buffers = {
      {9216, 0, 29},  {3, 28, 29},    {256, 27, 28},  {2304, 26, 27}, {2304, 25, 26},
      {2304, 24, 25}, {1152, 23, 24}, {4608, 22, 23}, {4608, 21, 22}, {4608, 20, 21},
      {4608, 19, 20}, {4608, 18, 19}, {4608, 17, 18}, {4608, 16, 17}, {4608, 15, 16},
      {4608, 14, 15}, {4608, 13, 14}, {4608, 12, 13}, {2304, 11, 12}, {9216, 10, 11},
      {9216, 9, 10},  {9216, 8, 9},   {4608, 7, 8},   {18432, 6, 7},  {18432, 5, 6},
      {18432, 4, 5},  {9216, 3, 4},   {36864, 2, 3},  {18432, 1, 2},  {18432, 0, 1}};
  std::vector<BufferRequest> requests;
  int64_t sum = 0;
  for (const auto& [bytes, first, last] : buffers) {
    requests.push_back(Request(static_cast<int32_t>(requests.size()), bytes, first, last, 1));
    sum += bytes;
  }
  ASSERT_EQ(sum, 241027);
  const Plan plan = PlaceAndVerify(requests);
  EXPECT_LT(plan.arena_bytes, sum);
  EXPECT_GE(plan.arena_bytes, LowerBound(requests));
}

TEST(GreedyPlannerTest, MobileNetV2ChainReachesTheLowerBound) {
  // First blocks of MobileNet v2 1.0 224, int8 (bytes = H*W*C), with TFLM lifetimes: tensor k
  // is made at step k and read at step k+1; t6 also feeds the residual add made at step 10.
  //   t0 224x224x3   150,528 [0,1]    t6  56x56x24    75,264 [6,10]
  //   t1 112x112x32  401,408 [1,2]    t7  56x56x144  451,584 [7,8]
  //   t2 112x112x32  401,408 [2,3]    t8  56x56x144  451,584 [8,9]
  //   t3 112x112x16  200,704 [3,4]    t9  56x56x24    75,264 [9,10]
  //   t4 112x112x96 1,204,224 [4,5]   t10 56x56x24    75,264 [10,10]
  //   t5 56x56x96    301,056 [5,6]
  // Peak live sum: step 5, t4 + t5 = 1,505,280.
  // Greedy: t4 -> 0; t8 -> 0; t7 meets t8 -> 451,584; t2 -> 0; t1 meets t2 -> 401,408;
  //   t5 meets t4 -> 1,204,224; t3 meets t4, t2 (both at 0, t4 ends last) -> 1,204,224;
  //   t0 meets t1 at 401,408: gap 401,408 >= 150,528 -> 0; t10 -> 0; t9 meets t8, t10 -> 451,584;
  //   t6 meets t8 [0,451,584), t10, t7 [451,584,903,168), t9, t5 at 1,204,224:
  //       candidate 903,168, gap to t5 = 301,056 >= 75,264 -> 903,168.
  //   Arena = t5 end = 1,204,224 + 301,056 = 1,505,280 = lower bound.
  const std::vector<BufferRequest> requests = {
      Request(0, 150528, 0, 1), Request(1, 401408, 1, 2),  Request(2, 401408, 2, 3),
      Request(3, 200704, 3, 4), Request(4, 1204224, 4, 5), Request(5, 301056, 5, 6),
      Request(6, 75264, 6, 10), Request(7, 451584, 7, 8),  Request(8, 451584, 8, 9),
      Request(9, 75264, 9, 10), Request(10, 75264, 10, 10)};
  const Plan plan = PlaceAndVerify(requests);
  EXPECT_THAT(plan.offsets,
              ElementsAre(0, 401408, 0, 1204224, 0, 1204224, 903168, 451584, 0, 451584, 0));
  EXPECT_EQ(LowerBound(requests), 1505280);
  EXPECT_EQ(plan.arena_bytes, 1505280);
}

}  // namespace
}  // namespace memfold
