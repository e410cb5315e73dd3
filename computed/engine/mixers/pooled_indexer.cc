#include "computed/engine/mixers/pooled_indexer.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/compute/linear.h"
#include "computed/engine/mixers/dot.h"
#include "computed/engine/ops.h"

namespace warp::computed {
namespace {

// nn.LayerNorm as the indexer's k_norm is built: biased variance, eps 1e-6.
constexpr float kKeyNormEps = 1e-6f;

void LayerNorm(float* x, std::span<const float> w, std::span<const float> b, uint32_t n) {
  float mean = 0.0f;
  for (uint32_t i = 0; i < n; ++i) mean += x[i];
  mean /= static_cast<float>(n);
  float var = 0.0f;
  for (uint32_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= static_cast<float>(n);
  const float inv = 1.0f / std::sqrt(var + kKeyNormEps);
  for (uint32_t i = 0; i < n; ++i) x[i] = (x[i] - mean) * inv * w[i] + b[i];
}

}  // namespace

PooledIndexer::PooledIndexer(const ModelConfig& c, const TrunkWeights& w,
                             const PooledIndexerTensors& t, ComputeContext& compute)
    : c_(c),
      shape_(c.dsa),
      compute_(compute),
      q_b_(w.Matrix(t.q_b)),
      wk_(w.Matrix(t.wk)),
      gate_(w.Matrix(t.kpool_gate)),
      weights_proj_(w.Matrix(t.weights_proj)),
      k_norm_w_(w.Vector(t.k_norm_weight)),
      k_norm_b_(w.Vector(t.k_norm_bias)),
      ape_(w.Vector(t.kpool_ape)) {}

void PooledIndexer::Project(std::span<const float> x, std::span<const float> q_residual,
                            uint32_t n) {
  const uint32_t heads = shape_.index_heads, dim = shape_.index_head_dim;
  q_.resize(uint64_t{n} * heads * dim);
  k_.resize(uint64_t{n} * dim);
  g_.resize(uint64_t{n} * dim);
  head_weights_.resize(uint64_t{n} * heads);
  Linear(compute_, q_b_, q_residual.data(), n, q_.data());
  Linear(compute_, wk_, x.data(), n, k_.data());
  Linear(compute_, gate_, x.data(), n, g_.data());
  Linear(compute_, weights_proj_, x.data(), n, head_weights_.data());
  for (uint32_t t = 0; t < n; ++t) LayerNorm(&k_[uint64_t{t} * dim], k_norm_w_, k_norm_b_, dim);
}

std::vector<uint32_t> PooledIndexer::Select(uint32_t t, uint32_t pos, PositionRows& rows,
                                            size_t key_kind) {
  const uint32_t heads = shape_.index_heads, dim = shape_.index_head_dim, kpool = shape_.kpool;
  std::copy_n(&k_[uint64_t{t} * dim], dim, rows.Row(key_kind, pos));
  std::copy_n(&g_[uint64_t{t} * dim], dim, rows.Row(key_kind + 1, pos));
  const uint32_t pools = (pos + 1) / kpool;  // complete, so visible
  const uint32_t keep = std::min(shape_.index_topk / kpool, pools);
  std::vector<uint32_t> chosen(pools);
  std::iota(chosen.begin(), chosen.end(), 0u);
  if (keep < pools) {
    const float* q = &q_[uint64_t{t} * heads * dim];
    const float* w = &head_weights_[uint64_t{t} * heads];
    const float head_scale = 1.0f / std::sqrt(static_cast<float>(heads));
    const float qk_scale = 1.0f / std::sqrt(static_cast<float>(dim));
    std::vector<float> scores(pools, 0.0f), key(dim), logits(kpool);
    for (uint32_t p = 0; p < pools; ++p) {
      for (uint32_t ch = 0; ch < dim; ++ch) {  // the pool's key: gate-softmax over its positions
        for (uint32_t j = 0; j < kpool; ++j) {
          logits[j] = rows.Row(key_kind + 1, p * kpool + j)[ch] + ape_[uint64_t{j} * dim + ch];
        }
        Softmax(logits);
        float sum = 0.0f;
        for (uint32_t j = 0; j < kpool; ++j)
          sum += logits[j] * rows.Row(key_kind, p * kpool + j)[ch];
        key[ch] = sum;
      }
      for (uint32_t h = 0; h < heads; ++h) {
        const float s = Dot(q + uint64_t{h} * dim, key.data(), dim) * qk_scale;
        scores[p] += w[h] * head_scale * std::max(s, 0.0f);
      }
    }
    std::partial_sort(chosen.begin(), chosen.begin() + keep, chosen.end(),
                      [&](uint32_t a, uint32_t b) {
                        return scores[a] != scores[b] ? scores[a] > scores[b] : a < b;
                      });
    chosen.resize(keep);
    std::sort(chosen.begin(), chosen.end());
  }
  std::vector<uint32_t> positions;
  for (uint32_t p : chosen) {
    for (uint32_t j = 0; j < kpool; ++j) positions.push_back(p * kpool + j);
  }
  if (shape_.select_tail) {  // the incomplete pool of the query, itself included
    for (uint32_t s = pools * kpool; s <= pos; ++s) positions.push_back(s);
  }
  return positions;
}

}  // namespace warp::computed
