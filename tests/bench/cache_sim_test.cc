#include "tests/bench/cache_sim.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp::bench {

// Lets gtest print accesses in failure messages (found by ADL, so not in the unnamed namespace).
static void PrintTo(const TraceAccess& access, std::ostream* os) {
  *os << "L" << access.layer << "E" << access.expert;
}

namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

// A trace of one layer's experts, one access each.
std::vector<TraceAccess> Experts(const std::vector<uint32_t>& experts, uint32_t layer = 0) {
  std::vector<TraceAccess> accesses;
  for (uint32_t expert : experts) accesses.push_back({.layer = layer, .expert = expert});
  return accesses;
}

std::vector<TraceAccess> RandomTrace(uint64_t seed, size_t length, uint32_t layers,
                                     uint32_t experts) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint32_t> layer(0, layers - 1);
  // Skewed so that frequency matters: expert = floor(experts * u^2).
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<TraceAccess> accesses;
  for (size_t i = 0; i < length; ++i) {
    const double x = u(rng);
    accesses.push_back(
        {.layer = layer(rng), .expert = std::min<uint32_t>(experts - 1, experts * x * x)});
  }
  return accesses;
}

// The most hits any demand-paging policy gets (every miss is admitted, evicting
// any resident record when full), by exhaustive search over eviction choices.
uint64_t BruteForceBestHits(const std::vector<TraceAccess>& accesses, size_t capacity, size_t i,
                            std::set<std::pair<uint32_t, uint32_t>> resident) {
  if (i == accesses.size()) return 0;
  const std::pair<uint32_t, uint32_t> key{accesses[i].layer, accesses[i].expert};
  if (resident.contains(key)) return 1 + BruteForceBestHits(accesses, capacity, i + 1, resident);
  if (resident.size() < capacity) {
    resident.insert(key);
    return BruteForceBestHits(accesses, capacity, i + 1, resident);
  }
  uint64_t best = 0;
  for (const auto& victim : resident) {
    std::set<std::pair<uint32_t, uint32_t>> next = resident;
    next.erase(victim);
    next.insert(key);
    best = std::max(best, BruteForceBestHits(accesses, capacity, i + 1, next));
  }
  return best;
}

TEST(CacheSimTest, MinBeatsLruAndLfruOnRandomTraces) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const std::vector<TraceAccess> trace = RandomTrace(seed, 2000, 3, 16);
    for (uint64_t capacity : {1, 2, 4, 8, 16, 32, 48}) {
      const uint64_t min = CountHits(Policy::kMin, trace, capacity);
      EXPECT_GE(min, CountHits(Policy::kLru, trace, capacity))
          << "seed " << seed << " capacity " << capacity;
      EXPECT_GE(min, CountHits(Policy::kLfru, trace, capacity))
          << "seed " << seed << " capacity " << capacity;
    }
  }
}

TEST(CacheSimTest, MinMatchesExhaustiveSearchOnSmallTraces) {
  for (uint64_t seed = 0; seed < 30; ++seed) {
    const std::vector<TraceAccess> trace = RandomTrace(seed, 11, 1, 6);
    for (size_t capacity : {1, 2, 3}) {
      EXPECT_EQ(CountHits(Policy::kMin, trace, capacity),
                BruteForceBestHits(trace, capacity, 0, {}))
          << "seed " << seed << " capacity " << capacity;
    }
  }
}

TEST(CacheSimTest, MinOnHandMadeTraces) {
  // 1 2 3 1 2 3 1 2 with 2 records: 3 misses evict 2 (next use 4 > 3), 1 hits,
  // 2 misses evicting 1 (6 > 5), 3 hits, 1 misses evicting 3 (never used
  // again), 2 hits: 3 hits. LRU gets none on this cyclic pattern.
  const std::vector<TraceAccess> cyclic = Experts({1, 2, 3, 1, 2, 3, 1, 2});
  EXPECT_EQ(CountHits(Policy::kMin, cyclic, 2), 3u);
  EXPECT_EQ(CountHits(Policy::kLru, cyclic, 2), 0u);
  // The textbook reference string (Silberschatz, "Operating System Concepts"):
  // with 3 frames the optimal algorithm takes 9 faults, so 20 - 9 = 11 hits
  // (LRU takes 12 faults: 8 hits).
  const std::vector<TraceAccess> textbook =
      Experts({7, 0, 1, 2, 0, 3, 0, 4, 2, 3, 0, 3, 2, 1, 2, 0, 1, 7, 0, 1});
  EXPECT_EQ(CountHits(Policy::kMin, textbook, 3), 11u);
  EXPECT_EQ(CountHits(Policy::kLru, textbook, 3), 8u);
  EXPECT_DOUBLE_EQ(HitRate(Policy::kMin, textbook, 3), 11.0 / 20);
}

TEST(CacheSimTest, CyclicScanDefeatsLruButNotMin) {
  constexpr uint32_t kCapacity = 8;
  std::vector<uint32_t> experts;
  for (int cycle = 0; cycle < 10; ++cycle) {
    for (uint32_t expert = 0; expert <= kCapacity; ++expert) experts.push_back(expert);
  }
  const std::vector<TraceAccess> scan = Experts(experts);
  EXPECT_EQ(CountHits(Policy::kLru, scan, kCapacity), 0u);
  EXPECT_GT(CountHits(Policy::kMin, scan, kCapacity), 0u);
}

TEST(CacheSimTest, FrequentKeySurvivesScanUnderLfru) {
  constexpr uint32_t kHot = 100;
  std::vector<uint32_t> experts(10, kHot);                                     // 1 miss, 9 hits
  for (uint32_t expert = 0; expert < 20; ++expert) experts.push_back(expert);  // a scan
  experts.push_back(kHot);
  const std::vector<TraceAccess> trace = Experts(experts);
  EXPECT_EQ(CountHits(Policy::kLfru, trace, 4), 10u);  // the hot record stayed
  EXPECT_EQ(CountHits(Policy::kLru, trace, 4), 9u);    // the scan pushed it out
}

TEST(CacheSimTest, ZeroCapacityNeverHits) {
  const std::vector<TraceAccess> trace = Experts({1, 1, 1});
  for (Policy policy : {Policy::kLru, Policy::kLfru, Policy::kMin}) {
    EXPECT_EQ(CountHits(policy, trace, 0), 0u) << PolicyName(policy);
  }
  EXPECT_EQ(HitRate(Policy::kMin, {}, 4), 0.0);
}

TEST(CacheSimTest, ParsesTraceInFileOrderWithLayersAsDistinctRecords) {
  auto trace = ParseTrace(
      "# position layer experts (routing rank order)\n"
      "0 1 5,3\n"
      "\n"
      "0 2 5\r\n"
      "  1\t1 3  \n",
      "t.txt");
  WARP_ASSERT_OK(trace);
  EXPECT_THAT(*trace, ElementsAre(TraceAccess{1, 5}, TraceAccess{1, 3}, TraceAccess{2, 5},
                                  TraceAccess{1, 3}));
  EXPECT_EQ(DistinctRecords(*trace), 3u);
  EXPECT_EQ(CountHits(Policy::kLru, *trace, 3), 1u);
}

TEST(CacheSimTest, MalformedLinesAreNamed) {
  const std::string good = "# header\n0 0 1,2\n";
  struct Case {
    std::string line;
    std::string reason;
  };
  for (const Case& bad : std::vector<Case>{{"1 0", "got 2 fields"},
                                           {"1 0 1,2 9", "got 4 fields"},
                                           {"x 0 1", "bad position 'x'"},
                                           {"1 -1 1", "bad layer '-1'"},
                                           {"1 0 1,,2", "bad expert ''"},
                                           {"1 0 1,2,", "bad expert ''"},
                                           {"1 0 1,z", "bad expert 'z'"},
                                           {"1 0 99999999999", "bad expert '99999999999'"},
                                           {"1 0 4,2,4", "expert 4 repeated"}}) {
    EXPECT_THAT(ParseTrace(good + bad.line + "\n0 0 1\n", "dir/t.txt"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("dir/t.txt:3: "), HasSubstr(bad.reason))))
        << bad.line;
  }
}

TEST(CacheSimTest, ReadTraceReadsFilesAndNamesMissingOnes) {
  warp::testing::TempDir dir;
  const std::string path = (dir / "trace.txt").string();
  std::ofstream(path) << "# position layer experts (routing rank order)\n0 0 7,1\n0 1 7\n";
  auto trace = ReadTrace(path);
  WARP_ASSERT_OK(trace);
  EXPECT_THAT(*trace, ElementsAre(TraceAccess{0, 7}, TraceAccess{0, 1}, TraceAccess{1, 7}));

  std::ofstream(path) << "0 0 7\n1 0 seven\n";
  EXPECT_THAT(ReadTrace(path),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(path + ":2: bad expert")));

  const std::string missing = (dir / "missing.txt").string();
  EXPECT_THAT(ReadTrace(missing).status().message(), HasSubstr(missing));
}

TEST(CacheSimTest, ZipfTraceIsDeterministicDistinctPerTokenAndSkewed) {
  const ZipfTraceOptions options{
      .experts = 64, .layers = 3, .top_k = 4, .tokens = 500, .s = 1.0, .seed = 7};
  const std::vector<TraceAccess> trace = ZipfTrace(options);
  ASSERT_EQ(trace.size(), 500u * 3 * 4);
  EXPECT_EQ(trace, ZipfTrace(options));
  std::map<std::pair<uint32_t, uint32_t>, int> counts;
  for (size_t group = 0; group < trace.size(); group += 4) {
    std::set<uint32_t> experts;
    for (size_t i = group; i < group + 4; ++i) {
      EXPECT_EQ(trace[i].layer, (group / 4) % 3);
      EXPECT_LT(trace[i].expert, 64u);
      experts.insert(trace[i].expert);
      ++counts[{trace[i].layer, trace[i].expert}];
    }
    EXPECT_EQ(experts.size(), 4u);
  }
  int hottest = 0;
  for (const auto& [key, count] : counts) hottest = std::max(hottest, count);
  EXPECT_GT(hottest, 3 * 500 * 4 / 64);  // far above the uniform share
  // top_k == experts: every expert once per token and layer.
  const std::vector<TraceAccess> all =
      ZipfTrace({.experts = 5, .layers = 1, .top_k = 5, .tokens = 3, .s = 2.0});
  EXPECT_EQ(DistinctRecords(all), 5u);
  EXPECT_EQ(all.size(), 15u);
}

TEST(CacheSimTest, LinesKeepEachTokenLayerTogether) {
  auto lines = ParseTraceLines("# header\n0 1 5,3\n0 2 5\n1 1 3\n", "t.txt");
  WARP_ASSERT_OK(lines);
  ASSERT_EQ(lines->size(), 3u);
  EXPECT_EQ((*lines)[0].layer, 1u);
  EXPECT_THAT((*lines)[0].experts, ElementsAre(5, 3));
  EXPECT_EQ((*lines)[1].layer, 2u);
  EXPECT_THAT(Flatten(*lines), ElementsAre(TraceAccess{1, 5}, TraceAccess{1, 3},
                                           TraceAccess{2, 5}, TraceAccess{1, 3}));
  EXPECT_THAT(ZipfTrace({.experts = 8, .layers = 2, .top_k = 3, .tokens = 4}),
              ::testing::ContainerEq(
                  Flatten(ZipfTraceLines({.experts = 8, .layers = 2, .top_k = 3, .tokens = 4}))));
}

// Two records of room. Layer 2's expert 3, then layer 3's expert 5, then a
// new token's layer 1: its miss evicts the oldest record, layer 2's, just
// before layer 2 needs it again, unless the lookahead foresaw that use.
TEST(CacheSimTest, ForesightSparesTheNextLayersRecord) {
  const std::vector<TraceLine> lines = {
      {.layer = 2, .experts = {3}}, {.layer = 3, .experts = {5}},
      {.layer = 1, .experts = {1}}, {.layer = 2, .experts = {3}}};
  EXPECT_EQ(CountCacheHits(EvictionPolicy::kLfru, lines, 2, {}), 0u);
  EXPECT_EQ(CountCacheHits(EvictionPolicy::kLfru, lines, 2, {.foresight = true, .recall = 1}), 1u);
  // A wrong guess spares another record, not this one.
  EXPECT_EQ(CountCacheHits(EvictionPolicy::kLfru, lines, 2, {.foresight = true, .recall = 0}), 0u);
  // Without the room for one spare record foresight changes nothing.
  EXPECT_EQ(CountCacheHits(EvictionPolicy::kLfru, lines, 1, {.foresight = true, .recall = 1}), 0u);
}

// The replay through RecordCache agrees with the order-only replay where
// nothing is pinned across accesses: one expert a line, no foresight.
TEST(CacheSimTest, CacheReplayMatchesTheOrderReplayOnSingleExpertLines) {
  std::mt19937_64 rng(3);
  std::vector<TraceLine> lines;
  for (int i = 0; i < 3000; ++i) {
    lines.push_back({.layer = static_cast<uint32_t>(i % 3),
                     .experts = {static_cast<uint32_t>(rng() % 20)}});
  }
  for (const auto& [policy, order] :
       std::vector<std::pair<Policy, EvictionPolicy>>{{Policy::kLru, EvictionPolicy::kLru},
                                                      {Policy::kLfru, EvictionPolicy::kLfru},
                                                      {Policy::kDuel, EvictionPolicy::kDuel}}) {
    EXPECT_EQ(CountCacheHits(order, lines, 16, {}), CountHits(policy, Flatten(lines), 16))
        << PolicyName(policy);
  }
}

// Shard daemons: each caches the records its shard owns. Two hot experts of
// one parity share a shard under e % N, while heat spreads them; a trace
// whose every shard fits its cache hits as one cache of the sum does.
TEST(CacheSimTest, ShardCachesAddUpAndHeatSpreadsHotExperts) {
  std::vector<TraceAccess> accesses;
  for (int i = 0; i < 100; ++i) {
    accesses.push_back({1, 0});
    accesses.push_back({1, 2});
    if (i % 10 == 0) accesses.push_back({1, 1});
  }
  EXPECT_DOUBLE_EQ(LargestShardShare(accesses, 2, Placement::kModulo), 200.0 / 210);
  EXPECT_DOUBLE_EQ(LargestShardShare(accesses, 2, Placement::kHeat), 110.0 / 210);
  // Shard 0 of e % 2 needs 2 records for experts 0 and 2; one each is a miss a time.
  EXPECT_EQ(CountShardedHits(Policy::kLru, accesses, 2, 1, Placement::kModulo), 10u - 1);
  // Heat: 0 alone on shard 0 but for the rare 1 (which evicts it), 2 alone on shard 1.
  EXPECT_EQ(CountShardedHits(Policy::kLru, accesses, 2, 1, Placement::kHeat), 89u + 99);
  // Enough room everywhere: every access after the first of its record hits, as in one cache.
  EXPECT_EQ(CountShardedHits(Policy::kLru, accesses, 2, 2, Placement::kModulo),
            CountHits(Policy::kLru, accesses, 4));
}

}  // namespace
}  // namespace warp::bench
