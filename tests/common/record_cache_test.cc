#include "common/store/record_cache.h"

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <random>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warp {

// Lets gmock print keys in failure messages (found by ADL, so not in the unnamed namespace).
static void PrintTo(const ExpertKey& key, std::ostream* os) {
  *os << "L" << key.layer << "E" << key.expert;
}

namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::Optional;

constexpr uint64_t kRecordBytes = 100;

ExpertKey Key(uint32_t expert, uint32_t layer = 0) { return {.layer = layer, .expert = expert}; }

// LFRU: these tests spell out its order (the default, DUEL, starts as LFRU but
// may follow another policy; duel_order_test.cc).
RecordCache MakeCache(uint64_t num_records, uint64_t recent_window = 0) {
  return RecordCache({.capacity_bytes = num_records * kRecordBytes,
                      .recent_window = recent_window,
                      .policy = EvictionPolicy::kLfru});
}

// Demand-inserts `key`, which must fit without eviction.
void InsertFresh(RecordCache& cache, const ExpertKey& key, Priority kind = Priority::kDemand) {
  ASSERT_THAT(cache.Insert(key, kRecordBytes, kind), Optional(IsEmpty()));
}

// A governor's shrink evicts in the order's order until the rest fits; a pinned
// record stays (the cache is over its capacity until it is unpinned and later
// inserts evict it); growing back admits records again.
TEST(RecordCacheTest, SetCapacityEvictsWhatNoLongerFitsButNotPins) {
  RecordCache cache = MakeCache(4);
  for (uint32_t e = 0; e < 4; ++e) InsertFresh(cache, Key(e));
  ASSERT_TRUE(cache.Touch(Key(0), Priority::kDemand));  // key 0 most used: evicted last
  cache.Pin(Key(1));
  EXPECT_THAT(cache.SetCapacity(2 * kRecordBytes), ElementsAre(Key(2), Key(3)));
  EXPECT_EQ(cache.used_bytes(), 2 * kRecordBytes);
  EXPECT_EQ(cache.capacity_bytes(), 2 * kRecordBytes);
  // Below the pinned bytes: only the unpinned record goes.
  EXPECT_THAT(cache.SetCapacity(0), ElementsAre(Key(0)));
  EXPECT_EQ(cache.used_bytes(), kRecordBytes);
  EXPECT_EQ(cache.Insert(Key(5), kRecordBytes, Priority::kDemand), std::nullopt);
  cache.Unpin(Key(1));
  ASSERT_TRUE(cache.SetCapacity(kRecordBytes).empty());  // fits exactly now
  // A demand insert over a shrunk capacity evicts enough for both.
  EXPECT_THAT(cache.Insert(Key(6), kRecordBytes, Priority::kDemand), Optional(ElementsAre(Key(1))));
  EXPECT_TRUE(cache.SetCapacity(4 * kRecordBytes).empty());
  InsertFresh(cache, Key(7));
  InsertFresh(cache, Key(8));
  EXPECT_EQ(cache.used_bytes(), 3 * kRecordBytes);
}

// ExpertStore's paced growth: an insert's limit below the capacity makes the
// cache evict to stay within it, and refuses what pins leave no room for,
// without lowering the capacity for later inserts.
TEST(RecordCacheTest, AnInsertsLimitEvictsWithinItWithoutShrinking) {
  RecordCache cache = MakeCache(4);
  InsertFresh(cache, Key(0));
  InsertFresh(cache, Key(1));
  EXPECT_THAT(cache.Insert(Key(2), kRecordBytes, Priority::kDemand, 2 * kRecordBytes),
              Optional(ElementsAre(Key(0))));
  EXPECT_EQ(cache.used_bytes(), 2 * kRecordBytes);
  EXPECT_EQ(cache.capacity_bytes(), 4 * kRecordBytes);
  cache.Pin(Key(1));
  cache.Pin(Key(2));
  EXPECT_EQ(cache.Insert(Key(3), kRecordBytes, Priority::kDemand, 2 * kRecordBytes), std::nullopt);
  EXPECT_EQ(cache.Insert(Key(3), kRecordBytes, Priority::kDemand, 0), std::nullopt);
  // Without a limit the capacity is the cache's own again.
  EXPECT_THAT(cache.Insert(Key(3), kRecordBytes, Priority::kDemand), Optional(IsEmpty()));
  EXPECT_EQ(cache.used_bytes(), 3 * kRecordBytes);
}

TEST(RecordCacheTest, FrequentKeySurvivesScanOfColdKeys) {
  RecordCache cache = MakeCache(4);
  InsertFresh(cache, Key(0));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(cache.Touch(Key(0), Priority::kDemand));

  for (uint32_t expert = 1; expert <= 20; ++expert) {
    std::optional<std::vector<ExpertKey>> evicted =
        cache.Insert(Key(expert), kRecordBytes, Priority::kDemand);
    ASSERT_TRUE(evicted.has_value());
    EXPECT_THAT(*evicted, Not(Contains(Key(0))));
  }
  EXPECT_TRUE(cache.Contains(Key(0)));
  EXPECT_EQ(cache.size(), 4u);
  EXPECT_EQ(cache.stats().evictions, 17u);
}

TEST(RecordCacheTest, LeastRecentlyUsedIsEvictedAmongEqualFrequencies) {
  RecordCache cache = MakeCache(3);
  for (uint32_t expert : {0, 1, 2}) InsertFresh(cache, Key(expert));
  // All reach frequency 2; key 1 is now the least recently used.
  for (uint32_t expert : {1, 2, 0}) ASSERT_TRUE(cache.Touch(Key(expert), Priority::kDemand));

  EXPECT_THAT(cache.Insert(Key(3), kRecordBytes, Priority::kDemand), Optional(ElementsAre(Key(1))));
}

TEST(RecordCacheTest, LowerFrequencyIsEvictedBeforeOlderHigherFrequency) {
  RecordCache cache = MakeCache(2);
  InsertFresh(cache, Key(0));
  InsertFresh(cache, Key(1));
  ASSERT_TRUE(cache.Touch(Key(0), Priority::kDemand));  // key 0: frequency 2, older

  EXPECT_THAT(cache.Insert(Key(2), kRecordBytes, Priority::kDemand), Optional(ElementsAre(Key(1))));
}

TEST(RecordCacheTest, LookaheadTouchDoesNotRaiseFrequency) {
  RecordCache cache = MakeCache(2);
  InsertFresh(cache, Key(0));
  InsertFresh(cache, Key(1));
  ASSERT_TRUE(cache.Touch(Key(1), Priority::kDemand));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(cache.Touch(Key(0), Priority::kLookahead));

  // Key 0 is the most recently touched but still has the lower frequency.
  EXPECT_THAT(cache.Insert(Key(2), kRecordBytes, Priority::kDemand), Optional(ElementsAre(Key(0))));
}

TEST(RecordCacheTest, CertainTouchCountsLikeDemand) {
  RecordCache cache = MakeCache(2);
  InsertFresh(cache, Key(0), Priority::kCertain);
  InsertFresh(cache, Key(1));
  ASSERT_TRUE(cache.Touch(Key(0), Priority::kCertain));

  EXPECT_THAT(cache.Insert(Key(2), kRecordBytes, Priority::kDemand), Optional(ElementsAre(Key(1))));
}

// A certain read is issued for the demand that follows it: the insert and that
// demand are one use, not two. Counted twice, every hash layer's record
// outranked every learned layer's and the cache read 18% more than without
// certain reads (EFFICIENCY.md, the V4 Flash slice).
TEST(RecordCacheTest, CertainInsertAndTheDemandItServesAreOneUse) {
  RecordCache cache = MakeCache(2);
  InsertFresh(cache, Key(0));
  ASSERT_TRUE(cache.Touch(Key(0), Priority::kDemand));  // key 0: frequency 2, older
  InsertFresh(cache, Key(1), Priority::kCertain);
  ASSERT_TRUE(cache.Touch(Key(1), Priority::kDemand));  // the demand it was read for: still 1

  EXPECT_THAT(cache.Insert(Key(2), kRecordBytes, Priority::kDemand), Optional(ElementsAre(Key(1))));
}

TEST(RecordCacheTest, DemandsAfterTheOneACertainReadServedCount) {
  RecordCache cache = MakeCache(2);
  InsertFresh(cache, Key(0));
  ASSERT_TRUE(cache.Touch(Key(0), Priority::kDemand));  // key 0: frequency 2, older
  InsertFresh(cache, Key(1), Priority::kCertain);
  ASSERT_TRUE(cache.Touch(Key(1), Priority::kDemand));
  ASSERT_TRUE(cache.Touch(Key(1), Priority::kDemand));  // a second use: frequency 2, newer

  EXPECT_THAT(cache.Insert(Key(2), kRecordBytes, Priority::kDemand), Optional(ElementsAre(Key(0))));
}

TEST(RecordCacheTest, TouchOfMissingKeyReturnsFalse) {
  RecordCache cache = MakeCache(2);
  EXPECT_FALSE(cache.Touch(Key(7), Priority::kDemand));
  InsertFresh(cache, Key(7, 3));
  EXPECT_FALSE(cache.Touch(Key(7), Priority::kDemand));  // same expert, other layer
  EXPECT_TRUE(cache.Touch(Key(7, 3), Priority::kLookahead));
}

TEST(RecordCacheTest, NeverExceedsCapacity) {
  constexpr uint64_t kCapacityBytes = 1000;
  RecordCache cache({.capacity_bytes = kCapacityBytes, .recent_window = 6});
  std::mt19937 rng(20240611);
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> resident;  // (layer, expert) -> bytes
  std::map<std::pair<uint32_t, uint32_t>, int> pins;
  auto random_key = [&] {
    return Key(std::uniform_int_distribution<uint32_t>(0, 19)(rng),
               std::uniform_int_distribution<uint32_t>(0, 1)(rng));
  };
  const Priority kKinds[] = {Priority::kDemand, Priority::kCertain, Priority::kLookahead};

  for (int step = 0; step < 20000; ++step) {
    const ExpertKey key = random_key();
    const auto id = std::make_pair(key.layer, key.expert);
    const Priority kind = kKinds[std::uniform_int_distribution<int>(0, 2)(rng)];
    const int op = std::uniform_int_distribution<int>(0, 9)(rng);
    if (op <= 3) {
      if (cache.Contains(key)) continue;
      const uint64_t bytes = std::uniform_int_distribution<uint64_t>(0, 350)(rng);
      const uint64_t pinned_before = cache.pinned_bytes();
      std::optional<std::vector<ExpertKey>> evicted = cache.Insert(key, bytes, kind);
      if (!evicted.has_value()) {
        if (kind != Priority::kLookahead) {
          EXPECT_GT(bytes, kCapacityBytes - pinned_before) << "step " << step;
        }
        continue;
      }
      for (const ExpertKey& victim : *evicted) {
        const auto victim_id = std::make_pair(victim.layer, victim.expert);
        EXPECT_EQ(pins[victim_id], 0) << "pinned key evicted at step " << step;
        EXPECT_EQ(resident.erase(victim_id), 1u);
      }
      resident[id] = bytes;
    } else if (op <= 6) {
      EXPECT_EQ(cache.Touch(key, kind), resident.contains(id));
    } else if (op == 7) {
      if (resident.contains(id)) {
        cache.Pin(key);
        ++pins[id];
      }
    } else if (op == 8) {
      if (pins[id] > 0) {
        cache.Unpin(key);
        --pins[id];
      }
    } else if (resident.contains(id) && pins[id] == 0) {
      cache.Erase(key);
      resident.erase(id);
    }

    uint64_t resident_bytes = 0;
    uint64_t pinned_bytes = 0;
    for (const auto& [resident_id, bytes] : resident) {
      resident_bytes += bytes;
      if (pins[resident_id] > 0) pinned_bytes += bytes;
    }
    ASSERT_LE(cache.used_bytes(), cache.capacity_bytes()) << "step " << step;
    ASSERT_EQ(cache.used_bytes(), resident_bytes) << "step " << step;
    ASSERT_EQ(cache.pinned_bytes(), pinned_bytes) << "step " << step;
    ASSERT_EQ(cache.size(), resident.size()) << "step " << step;
  }
  for (const auto& [id, bytes] : resident) {
    EXPECT_TRUE(cache.Contains(Key(id.second, id.first)));
  }
  EXPECT_GT(cache.stats().evictions, 0u);
  EXPECT_GT(cache.stats().rejected_inserts, 0u);
}

TEST(RecordCacheTest, PinnedKeysAreNeverEvicted) {
  RecordCache cache = MakeCache(3);
  for (uint32_t expert : {0, 1, 2}) InsertFresh(cache, Key(expert));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(cache.Touch(Key(2), Priority::kDemand));
  cache.Pin(Key(0));
  cache.Pin(Key(1));
  EXPECT_EQ(cache.pinned_bytes(), 2 * kRecordBytes);

  // Keys 0 and 1 have the lowest frequency, but only key 2 may go.
  EXPECT_THAT(cache.Insert(Key(3), kRecordBytes, Priority::kDemand), Optional(ElementsAre(Key(2))));

  cache.Pin(Key(3));
  EXPECT_EQ(cache.Insert(Key(4), kRecordBytes, Priority::kDemand), std::nullopt);
  EXPECT_EQ(cache.Insert(Key(4), kRecordBytes, Priority::kLookahead), std::nullopt);
  EXPECT_EQ(cache.stats().rejected_inserts, 2u);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.used_bytes(), 3 * kRecordBytes);
}

TEST(RecordCacheTest, PinCountsNest) {
  RecordCache cache = MakeCache(1);
  InsertFresh(cache, Key(0));
  cache.Pin(Key(0));
  cache.Pin(Key(0));
  cache.Unpin(Key(0));
  EXPECT_TRUE(cache.IsPinned(Key(0)));
  EXPECT_EQ(cache.pinned_bytes(), kRecordBytes);
  EXPECT_EQ(cache.Insert(Key(1), kRecordBytes, Priority::kDemand), std::nullopt);

  cache.Unpin(Key(0));
  EXPECT_FALSE(cache.IsPinned(Key(0)));
  EXPECT_EQ(cache.pinned_bytes(), 0u);
  EXPECT_THAT(cache.Insert(Key(1), kRecordBytes, Priority::kDemand), Optional(ElementsAre(Key(0))));
}

TEST(RecordCacheTest, LookaheadMayTakeFreeSpace) {
  RecordCache cache = MakeCache(3);
  InsertFresh(cache, Key(0));
  InsertFresh(cache, Key(1), Priority::kLookahead);
  EXPECT_TRUE(cache.Contains(Key(1)));
  EXPECT_EQ(cache.used_bytes(), 2 * kRecordBytes);
  EXPECT_EQ(cache.stats().inserts, 2u);
  EXPECT_EQ(cache.stats().speculative_inserts, 1u);
}

TEST(RecordCacheTest, LookaheadNeverEvictsAWarmDemandRecord) {
  RecordCache cache = MakeCache(2);  // window = number of resident entries
  InsertFresh(cache, Key(0));
  InsertFresh(cache, Key(1));

  EXPECT_EQ(cache.Insert(Key(2), kRecordBytes, Priority::kLookahead), std::nullopt);
  EXPECT_TRUE(cache.Contains(Key(0)));
  EXPECT_TRUE(cache.Contains(Key(1)));
  EXPECT_EQ(cache.stats().rejected_inserts, 1u);
  EXPECT_EQ(cache.stats().evictions, 0u);
}

// A cache that earns no demand hits (every demand a miss: smaller than the
// reuse distance, as a cache below a token's working set with spread routing)
// protects nothing by recency: a guess may take the least recently demanded
// unpinned record. With hits, the warm records are spared again.
TEST(RecordCacheTest, ACacheThatEarnsNoHitsLetsAGuessEvictItsOldestRecord) {
  // A window that keeps every record warm by recency alone.
  RecordCache cache = MakeCache(4, /*recent_window=*/1000);
  for (uint32_t e = 0; e < 300; ++e) {  // 300 demand misses, each evicting the oldest
    ASSERT_TRUE(cache.Insert(Key(e), kRecordBytes, Priority::kDemand).has_value());
  }
  EXPECT_THAT(cache.Insert(Key(1000), kRecordBytes, Priority::kLookahead),
              Optional(ElementsAre(Key(296))));

  RecordCache hitting = MakeCache(4, /*recent_window=*/1000);
  for (uint32_t e = 0; e < 300; ++e) {  // a hit for every miss
    const ExpertKey key = Key(e % 8);
    if (!hitting.Touch(key, Priority::kDemand)) {
      ASSERT_TRUE(hitting.Insert(key, kRecordBytes, Priority::kDemand).has_value());
      hitting.Touch(key, Priority::kDemand);
    }
  }
  EXPECT_EQ(hitting.Insert(Key(1000), kRecordBytes, Priority::kLookahead), std::nullopt);
}

TEST(RecordCacheTest, LookaheadEvictsOnlyColdUnpinnedRecords) {
  RecordCache cache = MakeCache(2, /*recent_window=*/3);
  InsertFresh(cache, Key(0));
  InsertFresh(cache, Key(1));
  cache.Pin(Key(1));
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(cache.Touch(Key(1), Priority::kDemand));
  // Demand clock 4: key 0 (used at 1) is cold; a demand touch at 2 would still be warm.
  EXPECT_THAT(cache.Insert(Key(2), kRecordBytes, Priority::kLookahead),
              Optional(ElementsAre(Key(0))));
  ASSERT_TRUE(cache.Touch(Key(2), Priority::kDemand));
  EXPECT_EQ(cache.Insert(Key(3), kRecordBytes, Priority::kLookahead), std::nullopt);
}

TEST(RecordCacheTest, LookaheadMayEvictColdRecords) {
  RecordCache cache = MakeCache(3, /*recent_window=*/2);
  for (uint32_t expert : {0, 1, 2}) InsertFresh(cache, Key(expert));
  // Key 0 gets the highest frequency but its last demand touch leaves the window.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(cache.Touch(Key(0), Priority::kDemand));
  ASSERT_TRUE(cache.Touch(Key(1), Priority::kDemand));
  ASSERT_TRUE(cache.Touch(Key(2), Priority::kDemand));

  EXPECT_THAT(cache.Insert(Key(3), kRecordBytes, Priority::kLookahead),
              Optional(ElementsAre(Key(0))));
  EXPECT_TRUE(cache.Contains(Key(1)));
  EXPECT_TRUE(cache.Contains(Key(2)));
  EXPECT_TRUE(cache.Contains(Key(3)));
}

TEST(RecordCacheTest, LookaheadEvictsUnusedSpeculativeRecordsFirst) {
  RecordCache cache = MakeCache(3, /*recent_window=*/1);
  InsertFresh(cache, Key(0));
  InsertFresh(cache, Key(1), Priority::kLookahead);
  InsertFresh(cache, Key(2));  // key 0 is now cold too
  cache.ForgetForesight(0);    // key 1's layer passed without using it

  EXPECT_THAT(cache.Insert(Key(3), kRecordBytes, Priority::kLookahead),
              Optional(ElementsAre(Key(1))));
  cache.ForgetForesight(0);
  EXPECT_THAT(cache.Insert(Key(4), 2 * kRecordBytes, Priority::kLookahead),
              Optional(ElementsAre(Key(3), Key(0))));
}

TEST(RecordCacheTest, LookaheadInsertUsedByDemandBecomesWarm) {
  {
    // Unused, a speculative record is cold and the next lookahead may take its place.
    RecordCache cache = MakeCache(2);
    InsertFresh(cache, Key(0), Priority::kLookahead);
    InsertFresh(cache, Key(1));
    cache.ForgetForesight(0);  // its layer passed
    EXPECT_THAT(cache.Insert(Key(2), kRecordBytes, Priority::kLookahead),
                Optional(ElementsAre(Key(0))));
  }
  RecordCache cache = MakeCache(2);
  InsertFresh(cache, Key(0), Priority::kLookahead);
  ASSERT_TRUE(cache.Touch(Key(0), Priority::kDemand));
  InsertFresh(cache, Key(1));
  EXPECT_EQ(cache.Insert(Key(2), kRecordBytes, Priority::kLookahead), std::nullopt);
  EXPECT_TRUE(cache.Contains(Key(0)));
}

TEST(RecordCacheTest, SpeculativeEvictedUnusedIsCounted) {
  RecordCache cache = MakeCache(2);
  InsertFresh(cache, Key(0), Priority::kLookahead);
  InsertFresh(cache, Key(1), Priority::kLookahead);
  ASSERT_TRUE(cache.Touch(Key(1), Priority::kDemand));
  ASSERT_TRUE(cache.Touch(Key(0), Priority::kLookahead));  // a hint is not a use
  cache.ForgetForesight(0);                                // and its layer passed

  // Key 0 never served a demand: frequency 0, evicted first and counted as waste.
  EXPECT_THAT(cache.Insert(Key(2), kRecordBytes, Priority::kDemand), Optional(ElementsAre(Key(0))));
  EXPECT_EQ(cache.stats().speculative_evicted_unused, 1u);

  // Key 1 was used before it went.
  EXPECT_THAT(cache.Insert(Key(3), kRecordBytes, Priority::kDemand), Optional(ElementsAre(Key(1))));
  EXPECT_EQ(cache.stats().speculative_evicted_unused, 1u);
  EXPECT_EQ(cache.stats().evictions, 2u);
  EXPECT_EQ(cache.stats().speculative_inserts, 2u);
}

TEST(RecordCacheTest, TooLargeRecordIsRejected) {
  RecordCache cache = MakeCache(1);
  InsertFresh(cache, Key(0), Priority::kDemand);
  EXPECT_EQ(cache.Insert(Key(1), kRecordBytes + 1, Priority::kDemand), std::nullopt);
  EXPECT_EQ(cache.Insert(Key(1), kRecordBytes + 1, Priority::kLookahead), std::nullopt);
  EXPECT_TRUE(cache.Contains(Key(0)));  // nothing evicted for a record that cannot fit
  EXPECT_EQ(cache.used_bytes(), kRecordBytes);
  EXPECT_EQ(cache.stats().rejected_inserts, 2u);
  EXPECT_EQ(cache.stats().evictions, 0u);
}

TEST(RecordCacheTest, EraseFreesBytes) {
  RecordCache cache = MakeCache(2);
  InsertFresh(cache, Key(0));
  ASSERT_THAT(cache.Insert(Key(1), kRecordBytes / 2, Priority::kDemand), Optional(IsEmpty()));
  cache.Erase(Key(0));
  EXPECT_FALSE(cache.Contains(Key(0)));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.used_bytes(), kRecordBytes / 2);
  EXPECT_EQ(cache.stats().evictions, 0u);

  EXPECT_THAT(cache.Insert(Key(0), kRecordBytes, Priority::kDemand), Optional(IsEmpty()));
}

TEST(RecordCacheTest, FrequenciesAge) {
  RecordCache cache = MakeCache(2);
  InsertFresh(cache, Key(0));
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(cache.Touch(Key(0), Priority::kDemand));
  InsertFresh(cache, Key(1));
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(cache.Touch(Key(1), Priority::kDemand));

  // Without aging key 0 (1001 uses) would beat key 1 (201 uses).
  EXPECT_THAT(cache.Insert(Key(2), kRecordBytes, Priority::kDemand), Optional(ElementsAre(Key(0))));
  EXPECT_TRUE(cache.Contains(Key(1)));
}

TEST(RecordCacheTest, RecentlyHotKeyStillBeatsAColdOneAfterAging) {
  RecordCache cache = MakeCache(2);
  InsertFresh(cache, Key(0));
  InsertFresh(cache, Key(1));
  for (int i = 0; i < 500; ++i) ASSERT_TRUE(cache.Touch(Key(1), Priority::kDemand));
  ASSERT_TRUE(cache.Touch(Key(0), Priority::kDemand));  // most recent, but rarely used

  EXPECT_THAT(cache.Insert(Key(2), kRecordBytes, Priority::kDemand), Optional(ElementsAre(Key(0))));
}

// Foresight: a predicted resident record is passed over by demand evictions
// while anything else can go, and taken (and counted) only when nothing can.
TEST(RecordCacheTest, ForeseenRecordsGoLast) {
  RecordCache cache = MakeCache(3);
  for (uint32_t expert : {0, 1, 2}) InsertFresh(cache, Key(expert, 1));
  ASSERT_TRUE(cache.Foresee(Key(0, 1)));  // LFRU's first victim otherwise
  ASSERT_TRUE(cache.IsForeseen(Key(0, 1)));
  EXPECT_FALSE(cache.Foresee(Key(9, 1)));  // not resident: nothing to spare

  EXPECT_THAT(cache.Insert(Key(3, 0), kRecordBytes, Priority::kDemand),
              Optional(ElementsAre(Key(1, 1))));
  // Two records needed, one unforeseen one left: the foreseen one goes second.
  cache.Pin(Key(3, 0));
  EXPECT_THAT(cache.Insert(Key(4, 0), 2 * kRecordBytes, Priority::kDemand),
              Optional(ElementsAre(Key(2, 1), Key(0, 1))));
  EXPECT_EQ(cache.stats().foreseen_evicted, 1u);
  EXPECT_FALSE(cache.IsForeseen(Key(0, 1)));
}

// The prediction ends with the demand that uses it, or when its layer passes;
// layers after the one passed keep theirs.
TEST(RecordCacheTest, ForesightEndsWithItsUseOrItsLayer) {
  RecordCache cache = MakeCache(4);
  for (uint32_t layer : {1, 2}) {
    for (uint32_t expert : {0, 1}) InsertFresh(cache, Key(expert, layer));
  }
  for (uint32_t layer : {1, 2}) {
    for (uint32_t expert : {0, 1}) ASSERT_TRUE(cache.Foresee(Key(expert, layer)));
  }
  ASSERT_TRUE(cache.Touch(Key(0, 1), Priority::kDemand));
  EXPECT_FALSE(cache.IsForeseen(Key(0, 1)));
  ASSERT_TRUE(cache.Touch(Key(1, 1), Priority::kLookahead));  // another guess: still foreseen
  EXPECT_TRUE(cache.IsForeseen(Key(1, 1)));
  cache.ForgetForesight(1);
  EXPECT_FALSE(cache.IsForeseen(Key(1, 1)));
  EXPECT_TRUE(cache.IsForeseen(Key(0, 2)));
  EXPECT_TRUE(cache.IsForeseen(Key(1, 2)));
  // A certain read is a prediction until the demand it was read for.
  cache.ForgetForesight(UINT32_MAX);
  ASSERT_TRUE(cache.Touch(Key(0, 2), Priority::kDemand));
  cache.Erase(Key(1, 2));
  InsertFresh(cache, Key(5, 3), Priority::kCertain);
  EXPECT_TRUE(cache.IsForeseen(Key(5, 3)));
  ASSERT_TRUE(cache.Touch(Key(5, 3), Priority::kDemand));
  EXPECT_FALSE(cache.IsForeseen(Key(5, 3)));
}

// A daemon's clients each foresee for themselves: a record stays spared until
// every client that predicted it has passed its layer.
TEST(RecordCacheTest, ForesightLastsUntilEveryClientThatForesawItHasPassed) {
  RecordCache cache = MakeCache(4);
  InsertFresh(cache, Key(0, 1));
  ASSERT_TRUE(cache.Foresee(Key(0, 1), /*client=*/7));
  ASSERT_TRUE(cache.Foresee(Key(0, 1), /*client=*/9));
  ASSERT_TRUE(cache.Foresee(Key(0, 1), /*client=*/9));  // twice is once
  cache.ForgetForesight(1, /*client=*/7);
  EXPECT_TRUE(cache.IsForeseen(Key(0, 1))) << "client 9 has not passed layer 1";
  cache.ForgetForesight(1, kLocalClient);
  EXPECT_TRUE(cache.IsForeseen(Key(0, 1)));
  cache.ForgetForesight(1, /*client=*/9);
  EXPECT_FALSE(cache.IsForeseen(Key(0, 1)));
  // A speculative insert is foreseen for the clients that hinted it.
  ClientSet hinted(3);
  hinted.Add(4);
  ASSERT_TRUE(cache.Insert(Key(1, 2), kRecordBytes, Priority::kLookahead, UINT64_MAX, hinted));
  cache.ForgetForesight(2, 3);
  EXPECT_TRUE(cache.IsForeseen(Key(1, 2)));
  cache.ForgetForesight(2, 4);
  EXPECT_FALSE(cache.IsForeseen(Key(1, 2)));
}

// A speculative read is a prediction: no other guess may evict it (even when
// cold), and a demand takes it only when nothing else can go.
TEST(RecordCacheTest, AGuessNeverEvictsAnotherGuess) {
  RecordCache cache = MakeCache(2, /*recent_window=*/1);
  InsertFresh(cache, Key(0, 1), Priority::kLookahead);
  InsertFresh(cache, Key(1, 1), Priority::kLookahead);
  EXPECT_EQ(cache.Insert(Key(2, 1), kRecordBytes, Priority::kLookahead), std::nullopt);
  cache.ForgetForesight(1);
  EXPECT_THAT(cache.Insert(Key(2, 1), kRecordBytes, Priority::kLookahead),
              Optional(ElementsAre(Key(0, 1))));
}

TEST(RecordCacheTest, WithoutForesightPredictionsSpareNothing) {
  RecordCache cache(
      {.capacity_bytes = 2 * kRecordBytes, .policy = EvictionPolicy::kLfru, .foresight = false});
  InsertFresh(cache, Key(0));
  InsertFresh(cache, Key(1), Priority::kLookahead);
  EXPECT_TRUE(cache.Foresee(Key(0)));  // resident, but no foresight kept
  EXPECT_FALSE(cache.IsForeseen(Key(0)));
  EXPECT_FALSE(cache.IsForeseen(Key(1)));
  EXPECT_THAT(cache.Insert(Key(2), kRecordBytes, Priority::kDemand),
              Optional(ElementsAre(Key(1))));
}

TEST(RecordCacheDeathTest, ContractViolationsAbort) {
  RecordCache cache = MakeCache(2);
  InsertFresh(cache, Key(0));
  EXPECT_DEATH(cache.Insert(Key(0), kRecordBytes, Priority::kDemand), "WARP_CHECK");
  EXPECT_DEATH(cache.Unpin(Key(0)), "WARP_CHECK");
  EXPECT_DEATH(cache.Pin(Key(1)), "WARP_CHECK");
  cache.Pin(Key(0));
  EXPECT_DEATH(cache.Erase(Key(0)), "WARP_CHECK");
}

}  // namespace
}  // namespace warp
