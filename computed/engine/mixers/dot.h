#pragma once

// The attention kernels' dot product, in one fixed order whatever the build
// vectorizes it to, so a score never depends on what else is in the batch or
// on the ISA: 16 lanes (lane l sums the products of indices i = l mod 16, in
// order), then the tree s[l] += s[l + 8], s[l] += s[l + 4], s[l] += s[l + 2],
// s[0] + s[1]. The lanes are independent, so the compiler turns them into
// vector registers without reassociating: 10-15x the one-chain sum at a
// 576-wide latent score (docs/EFFICIENCY.md, "Attention at long contexts").

#include <cstddef>
#include <span>

namespace warp::computed {

inline float Dot(const float* a, const float* b, size_t n) {
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

// out[j] += the sum over k, in order from 0, of weights[k] * rows[k][j], for
// j < n (attention's weighted values): four rows a pass, so out is loaded and
// stored once per four rows; each out[j] keeps its order of additions.
template <typename RowOf>
void AddWeightedRows(std::span<const float> weights, const RowOf& row_of, size_t n, float* out) {
  size_t k = 0;
  for (; k + 4 <= weights.size(); k += 4) {
    const float *r0 = row_of(k), *r1 = row_of(k + 1), *r2 = row_of(k + 2), *r3 = row_of(k + 3);
    const float w0 = weights[k], w1 = weights[k + 1], w2 = weights[k + 2], w3 = weights[k + 3];
    for (size_t j = 0; j < n; ++j) {
      out[j] = (((out[j] + w0 * r0[j]) + w1 * r1[j]) + w2 * r2[j]) + w3 * r3[j];
    }
  }
  for (; k < weights.size(); ++k) {
    const float* row = row_of(k);
    for (size_t j = 0; j < n; ++j) out[j] += weights[k] * row[j];
  }
}

}  // namespace warp::computed
