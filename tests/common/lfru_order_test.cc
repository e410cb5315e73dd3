#include "common/store/lfru_order.h"

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

TEST(LfruOrderTest, LowerFrequencyGoesFirstThenLeastRecentlyUsed) {
  LfruOrder order;
  for (uint32_t expert : {0, 1, 2}) order.Insert(Key(expert), Priority::kDemand);
  order.Touch(Key(0), Priority::kDemand);  // frequency 2
  EXPECT_THAT(CandidateExperts(order), ElementsAre(1, 2, 0));
  order.Touch(Key(1), Priority::kCertain);  // certain counts as use: frequency 2, newer than 0
  EXPECT_THAT(CandidateExperts(order), ElementsAre(2, 0, 1));
}

TEST(LfruOrderTest, LookaheadRefreshesRecencyOnly) {
  LfruOrder order;
  order.Insert(Key(0), Priority::kLookahead);  // frequency 0
  order.Insert(Key(1), Priority::kDemand);     // frequency 1
  for (int i = 0; i < 5; ++i) order.Touch(Key(0), Priority::kLookahead);
  EXPECT_THAT(CandidateExperts(order), ElementsAre(0, 1));
  order.Insert(Key(2), Priority::kLookahead);
  EXPECT_THAT(CandidateExperts(order), ElementsAre(0, 2, 1));  // frequency 0 before 1; older first
}

TEST(LfruOrderTest, FrequenciesAge) {
  LfruOrder order;
  order.Insert(Key(0), Priority::kDemand);
  for (int i = 0; i < 1000; ++i) order.Touch(Key(0), Priority::kDemand);
  order.Insert(Key(1), Priority::kDemand);
  for (int i = 0; i < 200; ++i) order.Touch(Key(1), Priority::kDemand);
  // Without aging key 0 (1001 uses) would stay ahead of key 1 (201 uses).
  EXPECT_THAT(CandidateExperts(order), ElementsAre(0, 1));
}

TEST(LfruOrderTest, EraseForgetsAKeyAndVisitCanStopEarly) {
  LfruOrder order;
  for (uint32_t expert : {0, 1, 2}) order.Insert(Key(expert), Priority::kDemand);
  order.Erase(Key(1));
  EXPECT_EQ(order.size(), 2u);
  EXPECT_THAT(CandidateExperts(order), ElementsAre(0, 2));
  std::vector<uint32_t> first;
  order.ForEachCandidate([&](const ExpertKey& key) {
    first.push_back(key.expert);
    return false;
  });
  EXPECT_THAT(first, ElementsAre(0));
  order.Insert(Key(1), Priority::kDemand);  // re-inserted: frequency 1 again, newest
  EXPECT_THAT(CandidateExperts(order), ElementsAre(0, 2, 1));
}

}  // namespace
}  // namespace warp
