#include "computed/engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <span>
#include <vector>

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


// The sampler before it left zero-probability tokens out and sorted pairs:
// every id partially sorted through the logits. The same draws must follow.
int32_t SampleAsBefore(const SamplerOptions& options, std::mt19937_64& rng,
                       std::span<const float> logits) {
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  const size_t k = options.top_k == 0 ? ids.size() : std::min<size_t>(options.top_k, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  });
  ids.resize(k);
  std::vector<double> probs(k);
  double sum = 0;
  for (size_t i = 0; i < k; ++i) {
    probs[i] = std::exp((logits[ids[i]] - logits[ids[0]]) / options.temperature);
    sum += probs[i];
  }
  size_t keep = k;
  double mass = 0;
  for (size_t i = 0; i < k; ++i) {
    mass += probs[i] / sum;
    if (mass >= options.top_p) {
      keep = i + 1;
      break;
    }
  }
  const double kept = std::accumulate(probs.begin(), probs.begin() + keep, 0.0);
  double target = std::uniform_real_distribution<double>(0.0, kept)(rng);
  for (size_t i = 0; i < keep; ++i) {
    target -= probs[i];
    if (target < 0) return ids[i];
  }
  return ids[keep - 1];
}

TEST(SamplerTest, MaskedLogitsAreNeverDrawnAndTheDrawsAreAsBefore) {
  std::mt19937 data(3);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (const SamplerOptions base : {SamplerOptions{.temperature = 1.0f},
                                    SamplerOptions{.temperature = 0.7f, .top_k = 40},
                                    SamplerOptions{.temperature = 1.3f, .top_p = 0.9f},
                                    SamplerOptions{.temperature = 0.05f, .top_k = 5, .top_p = 0.5f}}) {
    SamplerOptions options = base;
    options.seed = 9;
    Sampler sampler(options);
    std::mt19937_64 reference_rng(options.seed);
    for (int draw = 0; draw < 300; ++draw) {
      std::vector<float> logits(500);
      for (float& l : logits) l = normal(data);
      // A constrained reply's mask: most logits refused, ties among the rest.
      if (draw % 2 == 0) {
        for (size_t t = 0; t < logits.size(); ++t) {
          if (t % 7 != 0) logits[t] = -INFINITY;
        }
        logits[14] = logits[21];
      }
      const int32_t token = sampler.Sample(logits);
      ASSERT_FALSE(std::isinf(logits[token])) << draw;
      ASSERT_EQ(token, SampleAsBefore(options, reference_rng, logits)) << draw;
    }
  }
}

}  // namespace
}  // namespace warp::computed
