#include "common/store/arc_order.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/eviction_order.h"

namespace warp {
namespace {

using ::testing::ElementsAre;
using ::warp::testing::CandidateExperts;

ExpertKey Key(uint32_t expert) { return {.layer = 0, .expert = expert}; }

// A key used once sits in T1, used again in T2; with T1 over its target
// (0 at first), T1's oldest go first, then T2's.
TEST(ArcOrderTest, OnceUsedKeysGoBeforeTwiceUsedOnes) {
  ArcOrder order;
  for (uint32_t expert : {0, 1, 2, 3}) order.Insert(Key(expert), Priority::kDemand);
  order.Touch(Key(1), Priority::kDemand);
  order.Touch(Key(0), Priority::kDemand);
  EXPECT_THAT(CandidateExperts(order), ElementsAre(2, 3, 1, 0));
  EXPECT_EQ(order.size(), 4u);
}

// A lookahead insert is a key used zero times: T1, and its lookahead touches
// promote nothing; the demand that uses it does.
TEST(ArcOrderTest, PredictionsArePromotedOnlyByTheirUse) {
  ArcOrder order;
  order.Insert(Key(0), Priority::kDemand);
  order.Touch(Key(0), Priority::kDemand);      // T2
  order.Insert(Key(1), Priority::kLookahead);  // T1
  order.Touch(Key(1), Priority::kLookahead);   // still T1
  EXPECT_THAT(CandidateExperts(order), ElementsAre(1, 0));
  order.Touch(Key(1), Priority::kCertain);  // a use: T2, most recent
  EXPECT_THAT(CandidateExperts(order), ElementsAre(0, 1));
}

// A key coming back while its ghost is in B1 grows T1's target: recency was
// short of room, so T1 may now keep a key while T2's old ones go first.
TEST(ArcOrderTest, AGhostHitInB1GrowsTheRecencySide) {
  ArcOrder order;
  for (uint32_t expert : {0, 1, 2, 3}) order.Insert(Key(expert), Priority::kDemand);
  order.Touch(Key(2), Priority::kDemand);
  order.Touch(Key(3), Priority::kDemand);  // T1 {0, 1}, T2 {2, 3}
  order.Erase(Key(0));                     // evicted from T1: a ghost in B1
  EXPECT_EQ(order.target_t1(), 0u);
  order.Insert(Key(0), Priority::kDemand);  // back: T1 is worth more room
  EXPECT_EQ(order.target_t1(), 1u);
  EXPECT_THAT(CandidateExperts(order), ElementsAre(2, 3, 0, 1));  // T1 {1} at its target
  order.Erase(Key(1));                                            // T1 {} now; T2 {2, 3, 0}
  order.Insert(Key(4), Priority::kDemand);  // T1 {4}: at its target, so T2 goes first
  EXPECT_THAT(CandidateExperts(order), ElementsAre(2, 3, 0, 4));
}

// A key back from B2 shrinks T1's target: frequency was short of room.
TEST(ArcOrderTest, AGhostHitInB2ShrinksTheRecencySide) {
  ArcOrder order;
  for (uint32_t expert : {0, 1, 2}) order.Insert(Key(expert), Priority::kDemand);
  order.Erase(Key(0));
  order.Insert(Key(0), Priority::kDemand);  // B1 ghost: p 1, key 0 in T2
  ASSERT_EQ(order.target_t1(), 1u);
  order.Erase(Key(0));  // from T2: a ghost in B2
  order.Insert(Key(0), Priority::kDemand);
  EXPECT_EQ(order.target_t1(), 0u);
  EXPECT_THAT(CandidateExperts(order), ElementsAre(1, 2, 0));
}

TEST(ArcOrderTest, EraseForgetsAKeyAndGhostsStayBounded) {
  ArcOrder order;
  for (uint32_t expert = 0; expert < 4; ++expert) order.Insert(Key(expert), Priority::kDemand);
  for (uint32_t expert = 4; expert < 1000; ++expert) {
    order.Erase(Key(expert - 4));
    order.Insert(Key(expert), Priority::kDemand);
  }
  EXPECT_EQ(order.size(), 4u);
  EXPECT_THAT(CandidateExperts(order), ElementsAre(996, 997, 998, 999));
}

TEST(ArcOrderTest, AShrinkBoundsTheTargetAndTheGhostsByTheNewCapacity) {
  ArcOrder order;
  for (uint32_t expert = 0; expert < 16; ++expert) order.Insert(Key(expert), Priority::kDemand);
  for (uint32_t expert = 0; expert < 16; ++expert) order.Erase(Key(expert));  // 16 ghosts in B1
  for (uint32_t expert = 0; expert < 6; ++expert) order.Insert(Key(expert), Priority::kDemand);
  ASSERT_EQ(order.target_t1(), 6u);  // six B1 ghost hits
  ASSERT_EQ(order.ghosts(), 10u);
  // A governor's shrink: the cache evicts down to 2 records, then says so.
  for (uint32_t expert = 0; expert < 4; ++expert) order.Erase(Key(expert));
  order.SetCapacity(2);
  EXPECT_EQ(order.size(), 2u);
  EXPECT_LE(order.ghosts(), 2u);
  EXPECT_LE(order.target_t1(), 2u);
  // Regrowth: c follows the keys held again.
  for (uint32_t expert = 100; expert < 104; ++expert) order.Insert(Key(expert), Priority::kDemand);
  EXPECT_EQ(order.size(), 6u);
}

}  // namespace
}  // namespace warp
