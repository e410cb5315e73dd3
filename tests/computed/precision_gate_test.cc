// PrecisionGate: which leading ranks of the lookahead's predictions are hinted.

#include <cstdint>

#include "computed/engine/lookahead.h"
#include "gtest/gtest.h"

namespace warp::computed {
namespace {

constexpr uint64_t kWarmUp = PrecisionGate::kWarmUp;

// Scores `n` predictions of `rank`, `right` of them right.
void ScoreMany(PrecisionGate& gate, uint32_t rank, uint64_t n, uint64_t right) {
  for (uint64_t i = 0; i < n; ++i) gate.Score(rank, i < right);
}

TEST(PrecisionGateTest, EveryRankIsHintedUntilItHasBeenScored) {
  PrecisionGate gate(4, 0.9);
  EXPECT_EQ(gate.HintedRanks(), 4u);
  ScoreMany(gate, 0, kWarmUp - 1, 0);  // wrong every time, but not yet warmed up
  EXPECT_EQ(gate.HintedRanks(), 4u);
  gate.Score(0, false);
  EXPECT_EQ(gate.HintedRanks(), 0u);  // rank 0 failed: nothing after it either
}

TEST(PrecisionGateTest, HintsTheLeadingRanksAtThePrecision) {
  PrecisionGate gate(4, 0.75);
  ScoreMany(gate, 0, 100, 95);
  ScoreMany(gate, 1, 100, 75);  // exactly at the precision: hinted
  ScoreMany(gate, 2, 100, 74);
  ScoreMany(gate, 3, 100, 100);  // precise, but after a rank that is not
  EXPECT_EQ(gate.HintedRanks(), 2u);
}

TEST(PrecisionGateTest, ARankThatBecomesPreciseIsHintedAgain) {
  PrecisionGate gate(2, 0.5);
  ScoreMany(gate, 0, 100, 100);
  ScoreMany(gate, 1, 100, 10);
  EXPECT_EQ(gate.HintedRanks(), 1u);
  ScoreMany(gate, 1, 100, 100);  // 110 of 200
  EXPECT_EQ(gate.HintedRanks(), 2u);
}

TEST(PrecisionGateTest, ZeroPrecisionHintsEveryRank) {
  PrecisionGate gate(3, 0.0);
  ScoreMany(gate, 0, 100, 0);
  EXPECT_EQ(gate.HintedRanks(), 3u);
}

}  // namespace
}  // namespace warp::computed
