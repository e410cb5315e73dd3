#include "computed/engine/mixers/lightning_indexer.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/compute/linear.h"
#include "computed/engine/mixers/dot.h"

namespace warp::computed {

LightningIndexer::LightningIndexer(const ModelConfig& c, const TrunkWeights& w,
                                   const LightningIndexerTensors& t, uint32_t rate,
                                   const Rope& rope, uint32_t context, ComputeContext& compute)
    : shape_(c.compressed),
      rope_(rope),
      compute_(compute),
      q_b_(w.Matrix(t.q_b)),
      weights_proj_(w.Matrix(t.weights_proj)),
      keys_(w, t.keys, c.compressed.index_head_dim, rate, /*overlap=*/true,
            c.rms_norm_eps, rope, context) {}

void LightningIndexer::Project(std::span<const float> x, std::span<const float> q_residual,
                               uint32_t n) {
  const uint32_t heads = shape_.index_heads, dim = shape_.index_head_dim;
  q_.resize(uint64_t{n} * heads * dim);
  head_weights_.resize(uint64_t{n} * heads);
  kv_.resize(uint64_t{n} * keys_.width());
  gate_.resize(uint64_t{n} * keys_.width());
  Linear(compute_, q_b_, q_residual.data(), n, q_.data());
  Linear(compute_, weights_proj_, x.data(), n, head_weights_.data());
  Linear(compute_, keys_.kv_proj(), x.data(), n, kv_.data());
  Linear(compute_, keys_.gate_proj(), x.data(), n, gate_.data());
}

std::vector<uint32_t> LightningIndexer::Select(uint32_t t, uint32_t pos) {
  const uint32_t heads = shape_.index_heads, dim = shape_.index_head_dim;
  keys_.Add(&kv_[uint64_t{t} * keys_.width()], &gate_[uint64_t{t} * keys_.width()]);
  const uint32_t visible = keys_.VisibleAt(pos);
  float* q = &q_[uint64_t{t} * heads * dim];
  for (uint32_t h = 0; h < heads; ++h)
    rope_.Apply({q + uint64_t{h} * dim + dim - rope_.dim(), rope_.dim()}, pos);
  const float score_scale = 1.0f / std::sqrt(static_cast<float>(dim));
  const float weight_scale = 1.0f / std::sqrt(static_cast<float>(heads));
  std::vector<float> scores(visible, 0.0f);
  for (uint32_t s = 0; s < visible; ++s) {
    for (uint32_t h = 0; h < heads; ++h) {
      const float qk = Dot(q + uint64_t{h} * dim, keys_.Entry(s), dim);
      scores[s] += std::max(qk, 0.0f) * score_scale *
                   (head_weights_[uint64_t{t} * heads + h] * weight_scale);
    }
  }
  std::vector<uint32_t> order(visible);
  std::iota(order.begin(), order.end(), 0);
  const uint32_t k = std::min(shape_.index_topk, visible);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](uint32_t a, uint32_t b) {
    return scores[a] != scores[b] ? scores[a] > scores[b] : a < b;
  });
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace warp::computed
