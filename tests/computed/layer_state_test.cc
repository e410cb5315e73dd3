// PositionRows: the per-position state of attention layers, full or a sliding ring.

#include "computed/engine/layer_state.h"

#include "computed/model/layer_plan.h"
#include "gtest/gtest.h"

namespace warp::computed {
namespace {

TEST(PositionRowsTest, FullContextHoldsEveryPositionAndRewindsAnywhere) {
  PositionRows rows(/*context=*/32, /*window=*/0, {4, 2});
  EXPECT_EQ(rows.bytes(), 32u * (4 + 2) * sizeof(float));
  for (uint32_t pos = 0; pos < 30; ++pos) {
    rows.Row(0, pos)[0] = static_cast<float>(pos);
    rows.Written(pos);
  }
  EXPECT_EQ(rows.FirstVisible(29), 0u);
  EXPECT_EQ(rows.Rewind(3), 3u);
  EXPECT_EQ(rows.Row(0, 2)[0], 2.0f);
}

TEST(PositionRowsTest, SlidingRingHoldsTheWindowPlusTheRewindSlack) {
  PositionRows rows(/*context=*/1000, /*window=*/8, {1});
  EXPECT_EQ(rows.bytes(), (8u + kSlidingRewindSlack) * sizeof(float));
  for (uint32_t pos = 0; pos < 100; ++pos) {
    rows.Row(0, pos)[0] = static_cast<float>(pos);
    rows.Written(pos);
  }
  EXPECT_EQ(rows.FirstVisible(99), 92u);  // itself and the 7 before it
  EXPECT_EQ(rows.FirstVisible(3), 0u);
  for (uint32_t pos = 92; pos < 100; ++pos) EXPECT_EQ(rows.Row(0, pos)[0], pos);
}

TEST(PositionRowsTest, RewindWithinTheSlackKeepsThePositionFurtherBackRestarts) {
  PositionRows rows(/*context=*/1000, /*window=*/8, {1});
  for (uint32_t pos = 0; pos < 100; ++pos) rows.Written(pos);
  // Held: 100 - 24 = 76 .. 99. Position 90 needs 83 .. 89: held.
  EXPECT_EQ(rows.Rewind(90), 90u);
  for (uint32_t pos = 90; pos < 100; ++pos) rows.Written(pos);
  // Position 80 needs 73 .. 79, but 73 .. 75 were overwritten: start over.
  EXPECT_EQ(rows.Rewind(80), 0u);
  EXPECT_EQ(rows.Rewind(50), 0u);
}

TEST(PositionRowsTest, RewindPastTheEndStaysAtTheEnd) {
  PositionRows rows(/*context=*/16, /*window=*/0, {1});
  for (uint32_t pos = 0; pos < 5; ++pos) rows.Written(pos);
  EXPECT_EQ(rows.Rewind(9), 5u);
}

}  // namespace
}  // namespace warp::computed
