#include "computed/engine/sampler.h"

#include <map>

#include "gtest/gtest.h"

namespace warp::computed {
namespace {

const std::vector<float> kLogits = {1.0f, 3.0f, 2.5f, -1.0f, 2.9f};

TEST(SamplerTest, TemperatureZeroIsGreedy) {
  Sampler sampler({.temperature = 0.0f, .seed = 7});
  for (int i = 0; i < 10; ++i) EXPECT_EQ(sampler.Sample(kLogits), 1);
}

TEST(SamplerTest, TopKOneIsGreedy) {
  Sampler sampler({.temperature = 5.0f, .top_k = 1, .seed = 7});
  for (int i = 0; i < 10; ++i) EXPECT_EQ(sampler.Sample(kLogits), 1);
}

TEST(SamplerTest, SameSeedSameTokensOtherSeedDiffers) {
  auto draw = [](uint64_t seed) {
    Sampler sampler({.temperature = 2.0f, .seed = seed});
    std::vector<int32_t> tokens;
    for (int i = 0; i < 50; ++i) tokens.push_back(sampler.Sample(kLogits));
    return tokens;
  };
  EXPECT_EQ(draw(1), draw(1));
  EXPECT_NE(draw(1), draw(2));
}

TEST(SamplerTest, TopKLimitsTheCandidates) {
  Sampler sampler({.temperature = 100.0f, .top_k = 2, .seed = 3});
  std::map<int32_t, int> seen;
  for (int i = 0; i < 400; ++i) ++seen[sampler.Sample(kLogits)];
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_GT(seen[1], 0);
  EXPECT_GT(seen[4], 0);
}

TEST(SamplerTest, TopPKeepsTheSmallestNucleus) {
  // At temperature 1 the best token (3.0) has ~37% of the mass and the next
  // (2.9) ~34%: top_p 0.5 keeps exactly those two.
  Sampler sampler({.temperature = 1.0f, .top_p = 0.5f, .seed = 11});
  std::map<int32_t, int> seen;
  for (int i = 0; i < 400; ++i) ++seen[sampler.Sample(kLogits)];
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_GT(seen[1], 0);
  EXPECT_GT(seen[4], 0);
}

TEST(SamplerTest, HighTemperatureReachesEveryToken) {
  Sampler sampler({.temperature = 50.0f, .seed = 5});
  std::map<int32_t, int> seen;
  for (int i = 0; i < 1000; ++i) ++seen[sampler.Sample(kLogits)];
  EXPECT_EQ(seen.size(), kLogits.size());
}

}  // namespace
}  // namespace warp::computed
