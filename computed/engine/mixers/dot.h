#pragma once

// The attention kernels' dot product and weighted sum of rows, each in one
// fixed order whatever the build or the CPU vectorizes them to, so a score
// never depends on what else is in the batch or on the ISA. Dot: 16 lanes
// (lane l sums the products of indices i = l mod 16, in order), then the tree
// s[l] += s[l + 8], s[l] += s[l + 4], s[l] += s[l + 2], s[0] + s[1]. The lanes
// are independent, so they become vector registers without reassociation:
// one AVX-512 register, two AVX2 or four SSE ones (dot.cc has a clone per
// ISA, chosen at load; none fuses a multiply-add). docs/EFFICIENCY.md,
// "Attention at long contexts".

#include <cstddef>
#include <span>

namespace warp::computed {

float Dot(const float* a, const float* b, size_t n);

// out[j] = (((out[j] + w[0] r[0][j]) + w[1] r[1][j]) + w[2] r[2][j]) + w[3] r[3][j],
// for j < n.
void AddWeightedFour(const float* const rows[4], const float weights[4], size_t n, float* out);
// out[j] += w r[j], for j < n.
void AddWeighted(const float* row, float weight, size_t n, float* out);

// out[j] += the sum over k, in order from 0, of weights[k] * row_of(k)[j], for
// j < n (attention's weighted values): four rows a pass, so out is loaded and
// stored once per four rows; each out[j] keeps its order of additions.
template <typename RowOf>
void AddWeightedRows(std::span<const float> weights, const RowOf& row_of, size_t n, float* out) {
  size_t k = 0;
  for (; k + 4 <= weights.size(); k += 4) {
    const float* const rows[4] = {row_of(k), row_of(k + 1), row_of(k + 2), row_of(k + 3)};
    AddWeightedFour(rows, &weights[k], n, out);
  }
  for (; k < weights.size(); ++k) AddWeighted(row_of(k), weights[k], n, out);
}

}  // namespace warp::computed
