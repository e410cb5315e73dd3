// The per-layer floor (DESIGN.md Invariant 4): a model of many MoE layers run
// with a cache of two layers' records, a fraction of one token's working set.
// Records of earlier layers are evicted within the token and read again the
// next; a prefill chunk's union, larger than the cache, is read in waves. Every
// logit is the bytes of a run that caches everything, in every mode.

#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "common/byte_size.h"
#include "common/format/container.h"
#include "computed/planner/planner.h"
#include "tests/computed/bit_identity_fixture.h"

namespace warp::computed {
namespace {

// deepseek_v3 "tiny" scaled to 3 MiB: 8 MoE layers of 16 experts, top-4.
class PerLayerFloorTest : public BitIdentityTest {
 protected:
  void MakeModel() override {
    auto result = RunBinary(
        "computed", "synth --quiet --arch deepseek_v3 --preset tiny --size 3M " + Model());
    ASSERT_EQ(result.exit_code, 0) << result.output;
    std::vector<int> prompt;
    for (int i = 0; i < 24; ++i) prompt.push_back((i * 37 + 11) % 256);
    tokens_ = absl::StrJoin(prompt, ",");
  }

  void SetUp() override {
    BitIdentityTest::SetUp();
    auto container = Container::Open(Model());
    WARP_ASSERT_OK(container);
    auto plan = ComputePlan((*container)->manifest(), num_tokens_ + kGreedy + 1);
    WARP_ASSERT_OK(plan);
    plan_ = *plan;
    record_bytes_ = (*container)->manifest().banks.front().record_bytes;
    floor_ = " --budget " + std::to_string(plan_.floor_bytes);
  }

  PlanFigures plan_;
  uint64_t record_bytes_ = 0;
  std::string floor_;  // " --budget FLOOR"
};

TEST_F(PerLayerFloorTest, TheFloorHoldsTwoLayersRecordsNotAWorkingSet) {
  ASSERT_GE(plan_.num_moe_layers, 7u);
  EXPECT_EQ(plan_.layer_records_bytes, 4 * record_bytes_);
  EXPECT_EQ(plan_.floor_cache_bytes, 2 * 4 * record_bytes_);
  EXPECT_EQ(plan_.floor_bytes, plan_.fixed_bytes() + plan_.floor_cache_bytes);
  // A quarter of a token's working set or less.
  EXPECT_LE(4 * plan_.floor_cache_bytes, plan_.working_set_bytes + 4 * record_bytes_);

  // One byte below is refused with the figure and what makes it up.
  auto refused = RunBinary("computed", "logits " + Model() + " --tokens " + tokens_ + " --greedy " +
                                           std::to_string(kGreedy) + " --budget " +
                                           std::to_string(plan_.floor_bytes - 1));
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.output, ::testing::HasSubstr("is below the floor: this model needs at least " +
                                                   FormatBytes(plan_.floor_bytes)));
  EXPECT_THAT(refused.output, ::testing::HasSubstr("2 MoE layers' records"));
}

TEST_F(PerLayerFloorTest, LogitsAtTheFloorDoNotDependOnAnyMode) {
  SetReference("--no-prefetch --lookahead 0 --prefill-chunk 1 --budget 64M");
  for (const char* mode :
       {"--no-prefetch --lookahead 0 --prefill-chunk 1", "--prefill-chunk 1", "--prefill-chunk 16",
        "--no-prefetch --prefill-chunk 16", "--threads 2 --prefill-chunk 5",
        "--threads 1 --prefill-chunk 24", "--lookahead 16 --lookahead-precision 0 --prefill-chunk 3",
        "--lookahead-depth 2 --lookahead-precision 0 --prefill-chunk 8",
        "--io-engine pread --prefill-chunk 16", "--cache-policy lru --prefill-chunk 16",
        "--cache-policy arc", "--cache-policy lfru --no-foresight --prefill-chunk 16",
        "--early-route --prefill-chunk 16", "--no-early-route", "--io-depth 1 --io-piece-kib 4"}) {
    ExpectIdentical(mode + floor_);
  }
}

// A prefill chunk whose union outgrows the cache is read in waves that fit:
// each record of a layer's union read once a chunk, not once a token.
TEST_F(PerLayerFloorTest, APrefillChunkLargerThanTheCacheIsReadInWaves) {
  SetReference("--budget 64M --prefill-chunk 24");
  const std::string no_guess = " --lookahead 0 --no-early-route";
  for (const char* mode : {"--prefill-chunk 24", "--no-prefetch --prefill-chunk 24"}) {
    ExpectIdentical(mode + floor_);
    const RunStats waves = Stats(mode + no_guess + floor_);
    EXPECT_GT(waves.waves, waves.layer_passes) << mode;
    EXPECT_GT(waves.layer_passes, 0u) << mode;
  }
  // The same prompt a token at a time reads a layer's top-4 for every token.
  const RunStats chunked = Stats("--prefill-chunk 24" + no_guess + floor_);
  const RunStats token_by_token = Stats("--prefill-chunk 1" + no_guess + floor_);
  EXPECT_EQ(token_by_token.waves, 0u);  // one wave a pass: not printed
  const double chunk_prefill = chunked.read_bytes - chunked.decode_read_bytes;
  const double token_prefill = token_by_token.read_bytes - token_by_token.decode_read_bytes;
  EXPECT_LT(chunk_prefill, token_prefill);
  // At most each layer's 16 experts, once.
  EXPECT_LE(chunk_prefill, static_cast<double>(plan_.bank_bytes));
}

// The cache holds two layers' records of a token's eight: the rest of each
// token's records were evicted within the token before and are read again,
// and with no guesses every byte read is a miss's.
TEST_F(PerLayerFloorTest, EachDecodeTokenReadsWhatTheCacheCouldNotKeep) {
  const RunStats stats = Stats("--lookahead 0 --no-early-route" + floor_);
  ASSERT_GT(stats.decode_tokens, 0u);
  const uint64_t uncached_per_token = plan_.working_set_bytes - plan_.floor_cache_bytes;
  EXPECT_GE(stats.decode_read_bytes, static_cast<double>(stats.decode_tokens * uncached_per_token));
  // FormatBytes rounds to 3 significant digits.
  EXPECT_NEAR(stats.decode_read_bytes, static_cast<double>(stats.decode_misses * record_bytes_),
              0.01 * stats.decode_read_bytes);
}

// Daemons and shards whose caches add up to the floor's.
TEST_F(PerLayerFloorTest, DaemonsAndShardsAtTheFloorGiveTheSameLogits) {
  SetReference("--no-prefetch --lookahead 0 --budget 64M");
  std::vector<std::string> addresses;
  ASSERT_NO_FATAL_FAILURE(
      StartHalves("half", std::to_string(plan_.floor_cache_bytes / 2), addresses));
  ExpectIdentical("--prefill-chunk 16 --stores " + absl::StrJoin(addresses, ","));
  ExpectIdentical("--prefill-chunk 1 --lookahead 16 --stores " + absl::StrJoin(addresses, ","));
  std::vector<std::string> shards;
  for (int i = 0; i < 2; ++i) shards.push_back((dir_ / ("s" + std::to_string(i))).string());
  auto shard = RunBinary("expertd", "shard " + Model() + " --dirs " + absl::StrJoin(shards, ","));
  ASSERT_EQ(shard.exit_code, 0) << shard.output;
  ExpectIdentical("--prefill-chunk 16 --banks " + absl::StrJoin(shards, ",") + floor_);
}

}  // namespace
}  // namespace warp::computed
