#include "computed/engine/mixers/dot.h"

namespace warp::computed {

[[gnu::target_clones("avx512f", "avx2", "default")]] float Dot(const float* a, const float* b,
                                                               size_t n) {
  constexpr size_t kLanes = 16;
  float lanes[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t l = 0; l < kLanes; ++l) lanes[l] += a[i + l] * b[i + l];
  }
  for (size_t l = 0; i + l < n; ++l) lanes[l] += a[i + l] * b[i + l];
  for (size_t width = kLanes / 2; width >= 1; width /= 2) {
    for (size_t l = 0; l < width; ++l) lanes[l] += lanes[l + width];
  }
  return lanes[0];
}

[[gnu::target_clones("avx512f", "avx2", "default")]] void AddWeightedFour(
    const float* const rows[4], const float weights[4], size_t n, float* out) {
  const float *r0 = rows[0], *r1 = rows[1], *r2 = rows[2], *r3 = rows[3];
  const float w0 = weights[0], w1 = weights[1], w2 = weights[2], w3 = weights[3];
  for (size_t j = 0; j < n; ++j) {
    out[j] = (((out[j] + w0 * r0[j]) + w1 * r1[j]) + w2 * r2[j]) + w3 * r3[j];
  }
}

[[gnu::target_clones("avx512f", "avx2", "default")]] void AddWeighted(const float* row,
                                                                      float weight, size_t n,
                                                                      float* out) {
  for (size_t j = 0; j < n; ++j) out[j] += weight * row[j];
}

}  // namespace warp::computed
