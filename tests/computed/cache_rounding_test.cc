// The number-format round trips of DeepSeek V4.1's attention
// (engine/mixers/cache_rounding.h) against values worked out by hand from
// the formats: E4M3 (3 mantissa bits, subnormals from 2^-9, max 448), E2M1
// ({0, .5, 1, 1.5, 2, 3, 4, 6}) with transformers' tie rules, and the
// power-of-two and E4M3 block scales.

#include <vector>

#include "computed/engine/mixers/cache_rounding.h"
#include "gtest/gtest.h"

namespace warp::computed {
namespace {

TEST(CacheRoundingTest, E4m3RoundsToNearestWithTiesToEven) {
  EXPECT_EQ(RoundToE4m3(1.0f), 1.0f);
  EXPECT_EQ(RoundToE4m3(1.0625f), 1.0f);     // halfway between 1 and 1.125: to even
  EXPECT_EQ(RoundToE4m3(1.1875f), 1.25f);    // halfway between 1.125 and 1.25: to even
  EXPECT_EQ(RoundToE4m3(1.07f), 1.125f);
  EXPECT_EQ(RoundToE4m3(-3.3f), -3.25f);
  EXPECT_EQ(RoundToE4m3(447.0f), 448.0f);
  EXPECT_EQ(RoundToE4m3(0x1p-9f), 0x1p-9f);  // the smallest subnormal
  EXPECT_EQ(RoundToE4m3(0x1.8p-9f), 0x1p-8f);  // halfway: to even (2 x 2^-9)
  EXPECT_EQ(RoundToE4m3(0x1p-11f), 0.0f);
  EXPECT_EQ(RoundToE4m3(1.96875f), 2.0f);    // rounds up into the next binade
}

TEST(CacheRoundingTest, E2m1FollowsTransformersTies) {
  EXPECT_EQ(RoundToE2m1(0.25f), 0.0f);  // ties at 0.25, 1.25, 2.5, 5 go down
  EXPECT_EQ(RoundToE2m1(0.26f), 0.5f);
  EXPECT_EQ(RoundToE2m1(0.75f), 1.0f);  // ties at 0.75, 1.75, 3.5 go up
  EXPECT_EQ(RoundToE2m1(1.25f), 1.0f);
  EXPECT_EQ(RoundToE2m1(1.75f), 2.0f);
  EXPECT_EQ(RoundToE2m1(2.5f), 2.0f);
  EXPECT_EQ(RoundToE2m1(3.5f), 4.0f);
  EXPECT_EQ(RoundToE2m1(5.0f), 4.0f);
  EXPECT_EQ(RoundToE2m1(5.5f), 6.0f);
  EXPECT_EQ(RoundToE2m1(-2.6f), -3.0f);
}

TEST(CacheRoundingTest, Pow2CeilIsTheNextPowerOfTwo) {
  EXPECT_EQ(Pow2Ceil(1.0f), 1.0f);
  EXPECT_EQ(Pow2Ceil(1.5f), 2.0f);
  EXPECT_EQ(Pow2Ceil(0.3f), 0.5f);
  EXPECT_EQ(Pow2Ceil(0x1p-20f), 0x1p-20f);
}

TEST(CacheRoundingTest, BlocksRoundWithTheirOwnScaleAndRaggedLengthsAreLeft) {
  // FP8, block 2: amax 3 -> scale 2^ceil(log2(3 / 448)) = 2^-7; 3 / 2^-7 = 384 exact.
  std::vector<float> x = {3.0f, 0.1f, 896.0f, -1.0f};
  RoundTripFp8(x, 2);
  EXPECT_EQ(x[0], 3.0f);
  EXPECT_EQ(x[1], RoundToE4m3(0.1f * 128.0f) / 128.0f);
  // Block two: amax 896 -> scale 2 (896 / 2 = 448, the largest E4M3); -1 / 2 exact.
  EXPECT_EQ(x[2], 896.0f);
  EXPECT_EQ(x[3], -1.0f);
  // FP4 with a power-of-two scale, block 2: amax 6 -> scale 1.
  std::vector<float> y = {6.0f, 2.6f};
  RoundTripFp4Pow2Scale(y, 2);
  EXPECT_EQ(y, (std::vector<float>{6.0f, 3.0f}));
  // FP4 with an E4M3 scale: amax 7 -> 7 / 6 rounds to 1.125 in E4M3.
  std::vector<float> z = {7.0f, 1.0f};
  RoundTripFp4E4m3Scale(z, 2);
  EXPECT_EQ(z[0], 6.0f * 1.125f);  // 7 / 1.125 = 6.2 clamps to 6
  EXPECT_EQ(z[1], 1.0f * 1.125f);  // 1 / 1.125 = 0.89 -> 1
  std::vector<float> ragged = {0.1f, 0.2f, 0.3f};
  RoundTripFp8(ragged, 2);
  EXPECT_EQ(ragged, (std::vector<float>{0.1f, 0.2f, 0.3f}));
}

}  // namespace
}  // namespace warp::computed
