#pragma once

// Multi-head latent attention (DeepSeek V3 / Kimi K2): caches the normalized
// compressed latent and the rotated rope key, and attends in the latent space
// with kv_b's key part folded into q and its value part applied after the
// softmax (the absorbed form; tests/reference/selftest.py checks it equals
// the naive form).
//
// Thread-compatible: one Forward at a time.

#include <memory>

#include "computed/engine/mixers/pooled_indexer.h"
#include "computed/engine/ops.h"
#include "computed/engine/token_mixer.h"

namespace warp::computed {

class MlaAttention : public TokenMixer {
 public:
  MlaAttention(const ModelConfig& config, const MixerPlan& plan, const TrunkWeights& weights,
               uint32_t context, ThreadPool& pool);

  void Forward(std::span<const float> x, uint32_t n, uint32_t first_pos,
               std::span<float> out) override;
  LayerState& state() override { return cache_; }
  std::optional<OutputProjection> output_projection() const override {
    return OutputProjection{.weight = o_, .bias = {}};
  }

 private:
  const ModelConfig& c_;
  ThreadPool& pool_;
  Rope rope_;
  float scale_;
  float latent_eps_;  // q_a_layernorm / kv_a_layernorm
  kernels::MatrixView q_a_, q_b_, kv_a_, o_, gate_;  // gate_: output gate (rows 0: none)
  // Both kv_b_proj, or (ModelConfig::kv_b_split) k_b_proj, whose row
  // h * kv_lora + j holds head h's key weights of latent dim j, and v_b_proj.
  kernels::MatrixView key_b_, value_b_;
  bool key_b_transposed_ = false;
  std::span<const float> q_a_norm_, kv_a_norm_;
  std::unique_ptr<PooledIndexer> indexer_;  // DSA (GLM-5.3)
  // kinds 0: latent [kv_lora_rank] after kv_a_layernorm, 1: rotated k_rope;
  // DSA: 2, 3: the indexer's keys and gates [index_head_dim]
  PositionRows cache_;
};

}  // namespace warp::computed
