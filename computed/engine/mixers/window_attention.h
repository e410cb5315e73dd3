#pragma once

// What DeepSeek V4's and V4.1's one-KV-head attention share: the query and
// window projections, and one head's query (already rotated) against the
// K = V rows of its sliding window and the compressed entries it reads, with
// the head's sink joining the softmax (then dropped); the output is the
// weighted sum of the same rows.
//
// Thread-safe: pure functions of their arguments.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "common/compute/compute_context.h"
#include "common/compute/linear.h"
#include "computed/engine/layer_state.h"
#include "computed/engine/mixers/dot.h"
#include "computed/engine/ops.h"

namespace warp::computed {

// The projections of n tokens x: the q-LoRA latent rmsnorm(wq_a x) [n][q_lora]
// (the indexers read it too), the queries wq_b latent [n][heads x dim] and
// the window's K = V rows wkv x [n][dim], before their norms and rope.
struct QueriesAndKv {
  std::vector<float> latent, q, kv;
};
inline QueriesAndKv ProjectQueriesAndKv(ComputeContext& compute, const kernels::MatrixView& q_a,
                                        std::span<const float> q_norm,
                                        const kernels::MatrixView& q_b,
                                        const kernels::MatrixView& kv, std::span<const float> x,
                                        uint32_t n, uint32_t q_lora, uint64_t q_width,
                                        uint32_t dim, float eps) {
  QueriesAndKv p{.latent = std::vector<float>(uint64_t{n} * q_lora),
                 .q = std::vector<float>(n * q_width),
                 .kv = std::vector<float>(uint64_t{n} * dim)};
  Linear(compute, q_a, x.data(), n, p.latent.data());
  for (uint32_t t = 0; t < n; ++t) {
    std::span<float> row(&p.latent[uint64_t{t} * q_lora], q_lora);
    RmsNorm(row, q_norm, eps, row);
  }
  Linear(compute, q_b, p.latent.data(), n, p.q.data());
  Linear(compute, kv, x.data(), n, p.kv.data());
  return p;
}

// q [dim] at `pos` over rows [FirstVisible(pos), pos] and entry_of(entries[e]) ([dim] each), into o.
template <class EntryOf>
void AttendWindowAndEntries(const float* q, uint32_t dim, const PositionRows& rows, uint32_t pos,
                            const std::vector<uint32_t>& entries, const EntryOf& entry_of,
                            float sink, float* o) {
  const uint32_t first = rows.FirstVisible(pos);
  const uint32_t sliding = pos + 1 - first;
  std::vector<float> scores(sliding + entries.size() + 1);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
  for (uint32_t s = first; s <= pos; ++s) scores[s - first] = Dot(q, rows.Row(0, s), dim) * scale;
  for (size_t e = 0; e < entries.size(); ++e) {
    scores[sliding + e] = Dot(q, entry_of(entries[e]), dim) * scale;
  }
  scores.back() = sink;
  Softmax(scores);
  std::fill(o, o + dim, 0.0f);
  const std::span<const float> weights(scores);
  AddWeightedRows(
      weights.first(sliding),
      [&](size_t k) { return rows.Row(0, first + static_cast<uint32_t>(k)); }, dim, o);
  AddWeightedRows(
      weights.subspan(sliding, entries.size()), [&](size_t e) { return entry_of(entries[e]); },
      dim, o);
}

}  // namespace warp::computed
