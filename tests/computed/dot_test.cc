// The attentions' dot product and weighted row sums give the order dot.h
// defines, bit for bit, in whichever ISA clone this CPU runs.

#include "computed/engine/mixers/dot.h"

#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace warp::computed {
namespace {

std::vector<float> RandomFloats(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// dot.h's order written out plainly: 16 lanes, then the tree.
float DefinedDot(const float* a, const float* b, size_t n) {
  float lanes[16] = {};
  for (size_t i = 0; i < n; ++i) lanes[i % 16] += a[i] * b[i];
  for (size_t width = 8; width >= 1; width /= 2) {
    for (size_t l = 0; l < width; ++l) lanes[l] += lanes[l + width];
  }
  return lanes[0];
}

TEST(DotTest, EveryLengthSumsInTheDefinedOrder) {
  std::mt19937 rng(1);
  for (size_t n : {0, 1, 15, 16, 17, 64, 100, 128, 512, 576, 1000}) {
    const std::vector<float> a = RandomFloats(n, rng), b = RandomFloats(n, rng);
    const float got = Dot(a.data(), b.data(), n), want = DefinedDot(a.data(), b.data(), n);
    EXPECT_EQ(0, std::memcmp(&got, &want, sizeof(float)))
        << "n " << n << ": " << got << " vs " << want;
  }
}

TEST(DotTest, WeightedRowsAddInRowOrder) {
  std::mt19937 rng(2);
  for (size_t rows : {1, 3, 4, 7, 33}) {
    for (size_t n : {1, 31, 128, 512}) {
      const std::vector<float> weights = RandomFloats(rows, rng);
      const std::vector<float> matrix = RandomFloats(rows * n, rng);
      std::vector<float> got = RandomFloats(n, rng), want = got;
      AddWeightedRows(
          weights, [&](size_t k) { return &matrix[k * n]; }, n, got.data());
      for (size_t k = 0; k < rows; ++k) {
        for (size_t j = 0; j < n; ++j) want[j] += weights[k] * matrix[k * n + j];
      }
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), n * sizeof(float)))
          << rows << " rows of " << n;
    }
  }
}

}  // namespace
}  // namespace warp::computed
