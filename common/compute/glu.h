#pragma once

// The elementwise part of a gated MLP, act(gate) * up, shared by computed's
// dense MLPs and routed experts and by expertd's compute RPC (the same bits).
//
// Thread-safe: pure functions.

#include <cmath>
#include <span>

namespace warp {

// SiLU, or Kimi K3's SiTU beta tanh(g / beta) sigmoid(g) * linear_beta
// tanh(u / linear_beta). With `limit` (DeepSeek V4), SiLU's inputs are clamped
// first: gate <= limit, |up| <= limit.
struct GluActivation {
  float limit = 0.0f;
  bool situ = false;
  float beta = 0.0f;         // activation_situ_beta
  float linear_beta = 0.0f;  // activation_situ_linear_beta; <= 0: u as it is
};

// gpt-oss's gated unit of a clamped gate: gate * sigmoid(1.702 gate).
inline float GptOssGlu(float gate) {
  constexpr float kAlpha = 1.702f;
  return gate / (1.0f + std::exp(-gate * kAlpha));
}

// gate[i] = silu(gate[i]) * up[i].
void SiluMul(std::span<float> gate, std::span<const float> up);
// gate[i] = act(gate[i], up[i]) per `act`.
void GluMul(const GluActivation& act, std::span<float> gate, std::span<const float> up);

}  // namespace warp
