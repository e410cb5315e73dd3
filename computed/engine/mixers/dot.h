#pragma once

// The attention kernels' dot product: one fixed left-to-right order, so a
// score never depends on what else is in the batch.

#include <cstddef>

namespace warp::computed {

inline float Dot(const float* a, const float* b, size_t n) {
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace warp::computed
