#include "common/store/duel_order.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/eviction_order.h"

namespace warp {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;
using ::warp::testing::CandidateExperts;

ExpertKey Key(uint32_t expert) { return {.layer = 0, .expert = expert}; }

// Evicts `order`'s first candidate, as a cache does.
void EvictFirst(EvictionOrder& order, absl::flat_hash_set<uint32_t>& resident) {
  uint32_t victim = 0;
  order.ForEachCandidate([&](const ExpertKey& first) {
    victim = first.expert;
    return false;
  });
  order.Erase(Key(victim));
  resident.erase(victim);
}

// Replays demand accesses to `experts` through `order` as a cache of
// `capacity` keys does (every miss admitted, the first candidate evicted).
// Returns the hits.
uint64_t Replay(EvictionOrder& order, absl::flat_hash_set<uint32_t>& resident,
                const std::vector<uint32_t>& experts, uint64_t capacity) {
  uint64_t hits = 0;
  for (uint32_t expert : experts) {
    if (resident.contains(expert)) {
      ++hits;
      order.Touch(Key(expert), Priority::kDemand);
      continue;
    }
    if (resident.size() == capacity) EvictFirst(order, resident);
    order.Insert(Key(expert), Priority::kDemand);
    resident.insert(expert);
  }
  return hits;
}

uint64_t ReplayFresh(EvictionPolicy policy, const std::vector<uint32_t>& experts,
                     uint64_t capacity) {
  std::unique_ptr<EvictionOrder> order = MakeEvictionOrder(policy);
  absl::flat_hash_set<uint32_t> resident;
  return Replay(*order, resident, experts, capacity);
}

// Four keys used very often, then pairs of new keys used back to back: LFRU
// keeps the old favourites and thrashes one slot, LRU keeps each new pair.
std::vector<uint32_t> FavouritesThenPairs() {
  std::vector<uint32_t> experts;
  for (int round = 0; round < 50; ++round) {
    for (uint32_t expert : {0, 1, 2, 3}) experts.push_back(expert);
  }
  for (uint32_t pair = 0; pair < 200; ++pair) {
    for (int repeat = 0; repeat < 4; ++repeat) {
      experts.push_back(100 + 2 * pair);
      experts.push_back(101 + 2 * pair);
    }
  }
  return experts;
}

// Favourites used many times alone, then in every round among two keys used
// once: LRU lets the one-off keys push favourites out, LFRU does not.
std::vector<uint32_t> FavouritesAmongOneOffs(std::vector<uint32_t> favourites, uint32_t rounds,
                                             uint32_t first_one_off) {
  std::vector<uint32_t> experts;
  for (int warm_up = 0; warm_up < 20; ++warm_up) {
    experts.insert(experts.end(), favourites.begin(), favourites.end());
  }
  for (uint32_t round = 0; round < rounds; ++round) {
    experts.insert(experts.end(), favourites.begin(), favourites.end());
    experts.push_back(first_one_off + 2 * round);
    experts.push_back(first_one_off + 2 * round + 1);
  }
  return experts;
}

TEST(DuelOrderTest, FollowsRecencyWhenRecencyHits) {
  const std::vector<uint32_t> trace = FavouritesThenPairs();
  const uint64_t lfru = ReplayFresh(EvictionPolicy::kLfru, trace, 4);
  const uint64_t lru = ReplayFresh(EvictionPolicy::kLru, trace, 4);
  ASSERT_GT(lru, lfru + 300);  // the trace does what it is for

  DuelOrder duel;
  absl::flat_hash_set<uint32_t> resident;
  const uint64_t hits = Replay(duel, resident, trace, 4);
  EXPECT_NE(duel.leader(), EvictionPolicy::kLfru);
  // Only the pairs before the shadows' lead passed the margin were lost.
  EXPECT_GT(hits, lru * 9 / 10);
}

TEST(DuelOrderTest, StaysWithFrequencyWhenFrequencyHits) {
  const std::vector<uint32_t> trace = FavouritesAmongOneOffs({0, 1, 2, 3}, 400, 1000);
  const uint64_t lfru = ReplayFresh(EvictionPolicy::kLfru, trace, 5);
  const uint64_t lru = ReplayFresh(EvictionPolicy::kLru, trace, 5);
  ASSERT_GT(lfru, lru + 300);

  DuelOrder duel;
  absl::flat_hash_set<uint32_t> resident;
  EXPECT_EQ(Replay(duel, resident, trace, 5), lfru);
  EXPECT_EQ(duel.leader(), EvictionPolicy::kLfru);
}

// The leader follows the workload both ways, not only away from the start.
TEST(DuelOrderTest, LeavesRecencyWhenFrequencyHitsAgain) {
  DuelOrder duel;
  absl::flat_hash_set<uint32_t> resident;
  Replay(duel, resident, FavouritesThenPairs(), 4);
  ASSERT_NE(duel.leader(), EvictionPolicy::kLfru);
  const std::vector<uint32_t> trace = FavouritesAmongOneOffs({10, 11, 12}, 2000, 5000);
  const uint64_t lru = ReplayFresh(EvictionPolicy::kLru, trace, 4);
  const uint64_t hits = Replay(duel, resident, trace, 4);
  EXPECT_NE(duel.leader(), EvictionPolicy::kLru);
  EXPECT_GT(hits, lru + 4000);  // the favourites kept: 3 hits of every 5 accesses
}

// Predictions are not uses: they reach the real orders (the key is held and
// named as a candidate) but score nothing, so no amount of them moves the
// leader, and an unused prediction goes first.
TEST(DuelOrderTest, LookaheadAccessesAreHeldButNotScored) {
  DuelOrder duel;
  duel.Insert(Key(0), Priority::kDemand);
  duel.Touch(Key(0), Priority::kDemand);
  duel.Insert(Key(1), Priority::kLookahead);
  for (int i = 0; i < 1000; ++i) duel.Touch(Key(1), Priority::kLookahead);
  EXPECT_EQ(duel.leader(), EvictionPolicy::kLfru);
  EXPECT_EQ(duel.size(), 2u);
  EXPECT_THAT(CandidateExperts(duel), ElementsAre(1, 0));
  duel.Erase(Key(1));
  EXPECT_THAT(CandidateExperts(duel), ElementsAre(0));
}

TEST(DuelOrderTest, AShrinkEmptiesTheShadowsDownToTheNewCapacity) {
  DuelOrder order;
  absl::flat_hash_set<uint32_t> resident;
  std::vector<uint32_t> experts(100);
  for (uint32_t i = 0; i < 100; ++i) experts[i] = i;
  Replay(order, resident, experts, 100);
  ASSERT_EQ(order.largest_shadow(), 100u);
  // A governor's shrink: the cache evicts 90 records, then says so. Shadows
  // still of 100 would score hits no cache of 10 can have.
  for (int i = 0; i < 90; ++i) EvictFirst(order, resident);
  order.SetCapacity(10);
  EXPECT_EQ(order.largest_shadow(), 10u);
  Replay(order, resident, experts, 10);
  EXPECT_EQ(order.largest_shadow(), 10u);
  // Regrowth: the shadows follow the keys held again.
  for (uint32_t expert = 1000; expert < 1010; ++expert) {
    order.Insert(Key(expert), Priority::kDemand);
  }
  EXPECT_EQ(order.largest_shadow(), 20u);
}

TEST(DuelOrderTest, EraseForgetsTheKeyInEveryOrder) {
  DuelOrder duel;
  absl::flat_hash_set<uint32_t> resident;
  Replay(duel, resident, FavouritesThenPairs(), 4);  // leader: not LFRU
  ASSERT_EQ(duel.size(), 4u);
  std::vector<uint32_t> held = CandidateExperts(duel);
  for (uint32_t expert : held) duel.Erase(Key(expert));
  EXPECT_EQ(duel.size(), 0u);
  EXPECT_THAT(CandidateExperts(duel), ElementsAre());
  for (uint32_t expert : {7, 8}) duel.Insert(Key(expert), Priority::kDemand);
  EXPECT_THAT(CandidateExperts(duel), UnorderedElementsAre(7, 8));
}

}  // namespace
}  // namespace warp
