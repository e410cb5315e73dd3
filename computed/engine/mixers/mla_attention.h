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
  MlaAttention(const ModelConfig& config, const MixerPlan& plan, const MlaParams& params,
               const TrunkWeights& weights, uint32_t context, ComputeContext& compute);

  void Forward(std::span<const float> x, uint32_t n, uint32_t first_pos,
               std::span<float> out) override;
  LayerState& state() override { return cache_; }
  std::optional<OutputProjection> output_projection() const override {
    return OutputProjection{.weight = o_, .bias = {}};
  }

 private:
  // Tokens whose value absorb is one matrix product (bounds the scratch).
  static constexpr uint32_t kValueBatch = 16;
  // One thread's buffers for AttendHead.
  struct HeadScratch {
    HeadScratch(const MlaAttention& mla, uint32_t n);
    std::vector<float> key_b;      // W_kb(h), [nope][kv_lora]
    std::vector<float> row;        // a k_b_proj row
    std::vector<float> q_latent;   // [kv_lora]
    std::vector<float> context;    // [kValueBatch][kv_lora]
    std::vector<float> value_out;  // [kValueBatch][value_b_.rows]
    std::vector<float> scores;
  };
  // Head h of the chunk's n tokens: rotates their q rope parts (q [n][heads][q
  // head]), attends in the latent space to keys[t], writes attn [n][heads][v_dim].
  void AttendHead(uint32_t h, std::span<float> q, uint32_t n, uint32_t first_pos,
                  std::span<const std::vector<uint32_t>> keys, HeadScratch& scratch,
                  std::span<float> attn) const;

  const ModelConfig& c_;
  ComputeContext& compute_;
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
