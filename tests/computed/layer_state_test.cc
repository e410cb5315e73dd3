// PositionRows: the per-position state of attention layers, full or a sliding
// ring; RecurrentState: the fixed-size state of KDA layers and its checkpoint.

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

// Folds `n` tokens into part 0: each adds its position to every float.
void Fold(RecurrentState& state, uint32_t first, uint32_t n) {
  for (uint32_t pos = first; pos < first + n; ++pos) {
    for (float& x : state.Part(0)) x += static_cast<float>(pos);
    state.Advanced(pos);
  }
}

TEST(RecurrentStateTest, HoldsTheSameBytesAtAnyContextCheckpointIncluded) {
  RecurrentState state({6, 3});
  EXPECT_EQ(state.bytes(), 2u * (6 + 3) * sizeof(float));
  Fold(state, 0, 1000);
  EXPECT_EQ(state.bytes(), 2u * (6 + 3) * sizeof(float));
}

TEST(RecurrentStateTest, RewindReturnsToTheCheckpointWithItsBytes) {
  RecurrentState state({4});
  Fold(state, 0, 10);
  state.Checkpoint();
  const std::vector<float> at_ten(state.Part(0).begin(), state.Part(0).end());
  Fold(state, 10, 7);
  EXPECT_EQ(state.Rewind(17), 17u);  // nothing to forget
  EXPECT_EQ(state.Rewind(14), 10u);  // the checkpoint lies before 14
  EXPECT_EQ(std::vector<float>(state.Part(0).begin(), state.Part(0).end()), at_ten);
  Fold(state, 10, 3);
  EXPECT_EQ(state.Rewind(10), 10u);  // and it stays for the next turn
  EXPECT_EQ(std::vector<float>(state.Part(0).begin(), state.Part(0).end()), at_ten);
}

TEST(RecurrentStateTest, RewindBeforeTheCheckpointStartsOverAndDropsIt) {
  RecurrentState state({4});
  Fold(state, 0, 10);
  state.Checkpoint();
  Fold(state, 10, 5);
  EXPECT_EQ(state.Rewind(9), 0u);
  for (float x : state.Part(0)) EXPECT_EQ(x, 0.0f);
  Fold(state, 0, 12);  // a different history: the old checkpoint must not come back
  EXPECT_EQ(state.Rewind(11), 0u);
}

}  // namespace
}  // namespace warp::computed
