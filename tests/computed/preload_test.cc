// PreloadSet: which records `--preload` reads, in which order, within the cache.
// (The preload itself, its reads and its refusals: bit_identity_test.cc.)

#include "computed/run/preload.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warp::computed {
namespace {

using ::testing::ElementsAre;

// Two MoE layers: 1 (4 records of 4 KiB) and 3 (2 of 8 KiB); layer 2 is dense.
Manifest TwoBanks() {
  Manifest manifest;
  manifest.banks.push_back({.layer = 1, .num_experts = 4, .record_bytes = 4096});
  manifest.banks.push_back({.layer = 3, .num_experts = 2, .record_bytes = 8192});
  return manifest;
}

TEST(PreloadSetTest, EveryRecordByLayerAndExpertWhenTheyAllFit) {
  EXPECT_THAT(PreloadSet(TwoBanks(), 1 << 20, {}),
              ElementsAre(ExpertKey{1, 0}, ExpertKey{1, 1}, ExpertKey{1, 2}, ExpertKey{1, 3},
                          ExpertKey{3, 0}, ExpertKey{3, 1}));
}

TEST(PreloadSetTest, TheLearnedHottestComeFirstOnceAndUnknownKeysAreSkipped) {
  const std::vector<ExpertKey> hottest = {{3, 1}, {1, 2}, {1, 2}, {2, 0}, {1, 9}};
  EXPECT_THAT(PreloadSet(TwoBanks(), 1 << 20, hottest),
              ElementsAre(ExpertKey{3, 1}, ExpertKey{1, 2}, ExpertKey{1, 0}, ExpertKey{1, 1},
                          ExpertKey{1, 3}, ExpertKey{3, 0}));
}

TEST(PreloadSetTest, StopsAtTheCacheAndFillsWhatStillFits) {
  // 12 KiB: the hottest 8 KiB record, then one 4 KiB record; nothing else fits.
  EXPECT_THAT(PreloadSet(TwoBanks(), 3 * 4096, std::vector<ExpertKey>{{3, 0}}),
              ElementsAre(ExpertKey{3, 0}, ExpertKey{1, 0}));
  EXPECT_THAT(PreloadSet(TwoBanks(), 4095, {}), ::testing::IsEmpty());
}

}  // namespace
}  // namespace warp::computed
