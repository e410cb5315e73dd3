#include "computed/engine/engram_memory.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/compute/linear.h"

namespace warp::computed {

EngramMemory::EngramMemory(const ModelConfig& c, const EngramPlan& plan, const TrunkWeights& w,
                           ComputeContext& compute)
    : hidden_(c.hidden_size), streams_(c.hyper.mult), eps_(c.rms_norm_eps), compute_(compute) {
  const EngramTensors t = EngramTensors::Of(c, plan);
  kv_ = w.Matrix(t.kv);
  q_weight_ = w.Vector(t.q_weight);
  k_weight_ = w.Vector(t.k_weight);
}

void EngramMemory::Apply(std::span<const float> rows, uint32_t n, std::span<float> streams) const {
  const uint64_t hidden = hidden_, out = uint64_t{streams_ + 1} * hidden;
  std::vector<float> kv(n * out);
  Linear(compute_, kv_, rows.data(), n, kv.data());
  const float inv_sqrt_hidden = 1.0f / std::sqrt(static_cast<float>(hidden));
  for (uint32_t t = 0; t < n; ++t) {
    const float* value = &kv[t * out + streams_ * hidden];
    for (uint32_t c = 0; c < streams_; ++c) {
      const float* key = &kv[t * out + c * hidden];
      float* h = &streams[(uint64_t{t} * streams_ + c) * hidden];
      const float* q_w = &q_weight_[c * hidden];
      const float* k_w = &k_weight_[c * hidden];
      float h_squares = 0.0f, k_squares = 0.0f, dot = 0.0f;
      for (uint64_t i = 0; i < hidden; ++i) {
        h_squares += h[i] * h[i];
        k_squares += key[i] * key[i];
        dot += h[i] * (q_w[i] * k_w[i]) * key[i];
      }
      const float rstd = (1.0f / std::sqrt(h_squares / hidden + eps_)) *
                         (1.0f / std::sqrt(k_squares / hidden + eps_));
      const float d = dot * rstd * inv_sqrt_hidden;
      const float root = std::sqrt(std::max(std::fabs(d), 1e-6f));
      const float gate = 1.0f / (1.0f + std::exp(-std::copysign(root, d)));
      for (uint64_t i = 0; i < hidden; ++i) h[i] += gate * value[i];
    }
  }
}

}  // namespace warp::computed
