#pragma once

// Grouped-query softmax attention (qwen3_moe, glm4_moe, mixtral, gpt_oss):
// q/k/v projections (optionally with biases), optional per-head q/k RMSNorm,
// rope on the rotary part, a K/V cache per kv head — the whole context, or a
// sliding window — and optionally a learned sink logit per head that joins
// each softmax and is then dropped (gpt-oss).
//
// Thread-compatible: one Forward at a time.

#include "computed/engine/ops.h"
#include "computed/engine/token_mixer.h"

namespace warp::computed {

class GqaAttention : public TokenMixer {
 public:
  GqaAttention(const ModelConfig& config, const MixerPlan& plan, const GqaParams& params,
               const TrunkWeights& weights, uint32_t context, ComputeContext& compute);

  void Forward(std::span<const float> x, uint32_t n, uint32_t first_pos,
               std::span<float> out) override;
  LayerState& state() override { return cache_; }
  std::optional<OutputProjection> output_projection() const override {
    return OutputProjection{.weight = o_, .bias = o_bias_};
  }

 private:
  // Per-head RMSNorm (when the model has one), then rope on the rotary part.
  void Prepare(float* head, std::span<const float> norm, uint32_t pos) const;
  // Multiply-adds of a token's scores below which its heads run on the
  // calling thread alone.
  static constexpr uint64_t kParallelWork = uint64_t{1} << 18;
  // Attention of the token at `pos` over the cache, added into attn
  // [heads * head_dim] (zeros).
  void Attend(const float* q, uint32_t pos, float* attn) const;

  const ModelConfig& c_;
  ComputeContext& compute_;
  Rope rope_;
  float scale_;
  kernels::MatrixView q_, k_, v_, o_;
  std::span<const float> q_bias_, k_bias_, v_bias_, o_bias_, q_norm_, k_norm_, sinks_;
  uint64_t kv_dim_;
  PositionRows cache_;  // kinds 0: K (normed, rotated), 1: V; [kv_heads * head_dim] each
};

}  // namespace warp::computed
