#include "expertd/placement.h"

#include <algorithm>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warp::expertd {
namespace {

using ::testing::ElementsAre;

TEST(AssignExpertsTest, DefaultIsExpertModuloShards) {
  EXPECT_THAT(AssignExperts(5, 2, {}), ElementsAre(0, 1, 0, 1, 0));
  EXPECT_THAT(AssignExperts(7, 3, {}), ElementsAre(0, 1, 2, 0, 1, 2, 0));
}

TEST(AssignExpertsTest, EqualWeightsAreTheDefault) {
  EXPECT_EQ(AssignExperts(11, 3, {2.5, 2.5, 2.5}), AssignExperts(11, 3, {}));
}

TEST(AssignExpertsTest, WeightsDealExpertsToTheLowestAssignedPerWeight) {
  // 0: tie, lower index; 1: 1/3 vs 0; 2: 1/3 vs 1; 3: 2/3 vs 1; 4: 1 vs 1, tie;
  // 5: 4/3 vs 1; 6: 4/3 vs 2; 7: 5/3 vs 2.
  EXPECT_THAT(AssignExperts(8, 2, {3, 1}), ElementsAre(0, 1, 0, 0, 0, 1, 0, 0));
  const std::vector<uint32_t> owner = AssignExperts(256, 3, {1, 2, 1});
  EXPECT_EQ(std::count(owner.begin(), owner.end(), 1u), 128);
  EXPECT_EQ(std::count(owner.begin(), owner.end(), 0u), 64);
}

// One bank of `num_experts` records of `record_bytes`, at `layer`.
BankEntry Bank(uint32_t layer, uint32_t num_experts, uint64_t record_bytes = 4096) {
  BankEntry bank;
  bank.layer = layer;
  bank.num_experts = num_experts;
  bank.record_bytes = record_bytes;
  return bank;
}

UsageTable Usage(uint32_t layer, const std::vector<uint64_t>& counts) {
  UsageTable usage;
  for (uint32_t e = 0; e < counts.size(); ++e) usage.entries.push_back({layer, e, counts[e]});
  return usage;
}

TEST(PlaceExpertsTest, WithoutUsageEveryLayerIsDealtAsAssignExpertsDeals) {
  const auto held = PlaceExperts({Bank(1, 5), Bank(3, 5)}, 2, {});
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0], (ExpertsByLayer{{1, {0, 2, 4}}, {3, {0, 2, 4}}}));
  EXPECT_EQ(held[1], (ExpertsByLayer{{1, {1, 3}}, {3, {1, 3}}}));
}

TEST(PlaceExpertsTest, HotExpertsSpreadEvenlyEachShardKeepingItsNumber) {
  // Hottest first: 0 (10) to s0; 2 (9) to s1; 3 (2) to s1 (9 < 10); 1 (1) to
  // s0, s1 being full. Each shard's heat is 11; modulo would give 19 and 3.
  const UsageTable usage = Usage(1, {10, 1, 9, 2});
  const auto held = PlaceExperts({Bank(1, 4)}, 2, {.usage = &usage});
  EXPECT_EQ(held[0], (ExpertsByLayer{{1, {0, 1}}}));
  EXPECT_EQ(held[1], (ExpertsByLayer{{1, {2, 3}}}));
}

TEST(PlaceExpertsTest, WeightsSetEachShardsNumberAndShareOfTheHeat) {
  // Weights 3:1 give s0 three experts, s1 one; the hottest goes to s0 (tie),
  // the next to s1 (0 < 8/3), the rest to s0, s1 being full.
  const UsageTable usage = Usage(1, {8, 4, 2, 1});
  const auto held = PlaceExperts({Bank(1, 4)}, 2, {.weights = {3, 1}, .usage = &usage});
  EXPECT_EQ(held[0], (ExpertsByLayer{{1, {0, 2, 3}}}));
  EXPECT_EQ(held[1], (ExpertsByLayer{{1, {1}}}));
}

TEST(PlaceExpertsTest, ReplicasGoToTheHottestWhileEachShardHasRoom) {
  // Room for one record each: the hottest expert (0, on s0) gets its replica
  // on s1, the next (2, on s1) on s0; cold experts and a zero count never.
  const UsageTable usage = Usage(1, {10, 1, 9, 2});
  const auto held =
      PlaceExperts({Bank(1, 4)}, 2, {.usage = &usage, .replica_bytes = 4096 + 100});
  EXPECT_EQ(held[0], (ExpertsByLayer{{1, {0, 1, 2}}}));
  EXPECT_EQ(held[1], (ExpertsByLayer{{1, {0, 2, 3}}}));
}

TEST(PlaceExpertsTest, EnoughRoomReplicatesEveryUsedExpertOnceOnTwoShards) {
  const UsageTable usage = Usage(1, {3, 0, 1, 2, 5});
  const auto held = PlaceExperts({Bank(1, 5)}, 2, {.usage = &usage, .replica_bytes = 1 << 30});
  // Expert 1 was never used: one copy only.
  std::vector<uint32_t> copies(5, 0);
  for (const ExpertsByLayer& shard : held) {
    for (uint32_t expert : shard.at(1)) ++copies[expert];
  }
  EXPECT_THAT(copies, ElementsAre(2, 1, 2, 2, 2));
}

TEST(PlaceExpertsTest, ReplicasOfThreeShardsGoToTheLeastLoadedWithRoom) {
  // Rooms 2, 2, 1. Heat 6, 5, 4, 1, 0 places s0 {0, 4}, s1 {1, 3}, s2 {2}:
  // loads 6, 6, 4. Replicas (one record each): 0 to s2 (4 < 6), halving its
  // heat to 3 on s0 and s2; 1 to s0 (3 < 7, and s2 is full); 2 to s1, the
  // only one with room; 3 finds none.
  const UsageTable usage = Usage(1, {6, 5, 4, 1, 0});
  const auto held = PlaceExperts({Bank(1, 5)}, 3, {.usage = &usage, .replica_bytes = 4096});
  EXPECT_EQ(held[0].at(1), (std::vector<uint32_t>{0, 1, 4}));
  EXPECT_EQ(held[1].at(1), (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(held[2].at(1), (std::vector<uint32_t>{0, 2}));
}

}  // namespace
}  // namespace warp::expertd
