#pragma once

// Kimi Delta Attention (Kimi-Linear): per head a gated delta rule on a
// [head_dim, head_dim] state S. q, k, v are projections through a causal
// depthwise convolution and SiLU; each key channel has its own forget gate
// -exp(A_log) softplus(f_b(f_a(x)) + dt_bias); beta = sigmoid(b_proj x);
// with q, k L2-normalized and q scaled by head_dim^-0.5, a token does
//   S *= exp(g) (row-wise);  S += k (beta (v - k^T S))^T;  o = q^T S,
// then o is RMS-normalized per head, gated by sigmoid(g_b(g_a(x))) and
// projected by o_proj. Kimi K3 bounds the decay instead,
// g = gate_lower_bound sigmoid(exp(A_log) (f + dt_bias)), and gates the
// output with one full-rank g_proj. Tokens run one by one through the recurrence, so a
// chunk gives the bits of single steps; the projections see the whole chunk.
//
// Thread-compatible: one Forward at a time.

#include "computed/engine/token_mixer.h"

namespace warp::computed {

class KdaAttention : public TokenMixer {
 public:
  KdaAttention(const ModelConfig& config, const MixerPlan& plan, const KdaParams& params,
               const TrunkWeights& weights, ComputeContext& compute);

  void Forward(std::span<const float> x, uint32_t n, uint32_t first_pos,
               std::span<float> out) override;
  LayerState& state() override { return state_; }
  std::optional<OutputProjection> output_projection() const override {
    return OutputProjection{.weight = o_, .bias = {}};
  }

 private:
  // The causal convolution of token row `in` ([3][width]: q, k, v inputs)
  // with the history; writes SiLU of it to `out` and pushes `in` into the history.
  void Convolve(const float* in, float* out);
  // One token's recurrence and gated norm for head `h`.
  void Head(uint32_t h, const float* qkv, const float* gate, float beta, const float* out_gate,
            float* o);

  const ModelConfig& c_;
  const LinearAttention& kda_;
  ComputeContext& compute_;
  uint64_t width_;  // num_heads * head_dim
  kernels::MatrixView q_, k_, v_, f_a_, f_b_, b_, g_a_, g_b_, g_full_, o_;
  std::span<const float> conv_[3];  // [width][conv_kernel] taps of q, k, v
  std::span<const float> a_log_, dt_bias_, o_norm_;
  RecurrentState state_;  // parts kS [heads][dim][dim], kHistory [conv_kernel - 1][3][width]
};

}  // namespace warp::computed
