#include "common/store/lru_order.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/eviction_order.h"
#include "tests/testing/status_matchers.h"

namespace warp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::warp::testing::CandidateExperts;
using ::warp::testing::StatusIs;

ExpertKey Key(uint32_t expert) { return {.layer = 0, .expert = expert}; }

TEST(LruOrderTest, LeastRecentlyUsedGoesFirstWhateverThePriority) {
  LruOrder order;
  order.Insert(Key(0), Priority::kDemand);
  order.Insert(Key(1), Priority::kLookahead);
  order.Insert(Key(2), Priority::kCertain);
  EXPECT_THAT(CandidateExperts(order), ElementsAre(0, 1, 2));
  for (int i = 0; i < 3; ++i) order.Touch(Key(2), Priority::kDemand);  // frequency is no matter
  order.Touch(Key(0), Priority::kLookahead);
  EXPECT_THAT(CandidateExperts(order), ElementsAre(1, 2, 0));
}

TEST(LruOrderTest, EraseForgetsAKey) {
  LruOrder order;
  for (uint32_t expert : {0, 1, 2}) order.Insert(Key(expert), Priority::kDemand);
  order.Erase(Key(0));
  EXPECT_EQ(order.size(), 2u);
  order.Insert(Key(0), Priority::kDemand);
  EXPECT_THAT(CandidateExperts(order), ElementsAre(1, 2, 0));
}

TEST(EvictionPolicyTest, NamesParseBackAndUnknownNamesAreRefused) {
  for (EvictionPolicy policy :
       {EvictionPolicy::kLfru, EvictionPolicy::kLru, EvictionPolicy::kArc, EvictionPolicy::kDuel}) {
    absl::StatusOr<EvictionPolicy> parsed = ParseEvictionPolicy(EvictionPolicyName(policy));
    WARP_ASSERT_OK(parsed);
    EXPECT_EQ(*parsed, policy);
  }
  EXPECT_EQ(*ParseEvictionPolicy(""), EvictionPolicy::kDuel);
  EXPECT_THAT(ParseEvictionPolicy("fifo"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected lfru, lru, arc or duel")));
}

}  // namespace
}  // namespace warp
