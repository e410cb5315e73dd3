#pragma once

// The small per-token operations of the forward pass (norms, softmax, rotary
// embedding), in float32 with a fixed summation order so the
// result of a token never depends on what else is in its batch. Matrix
// products are in common/kernels/matmul.h, gated activations in common/compute/glu.h.

#include <cstdint>
#include <span>
#include <vector>

#include "computed/model/layer_plan.h"

namespace warp::computed {

// out = x * rsqrt(mean(x^2) + eps) * weight. `out` may alias `x`.
void RmsNorm(std::span<const float> x, std::span<const float> weight, float eps,
             std::span<float> out);

// The same without a weight (DeepSeek V4's per-head q norm and hyper-connection
// input): x * rsqrt(mean(x^2) + eps). `out` may alias `x`.
void RmsNormUnweighted(std::span<const float> x, float eps, std::span<float> out);

// In-place softmax; returns nothing. Subtracts the max first.
void Softmax(std::span<float> x);

// Rotary position embedding of one architecture: the frequencies (with YaRN
// when configured) and how pairs are formed. Thread-safe after construction.
class Rope {
 public:
  explicit Rope(const RopePlan& plan);

  // Rotates the first `dim` values of `x` for position `pos`. Interleaved
  // (DeepSeek): pairs (x[2i], x[2i+1]); otherwise (x[i], x[i + dim/2]).
  void Apply(std::span<float> x, uint32_t pos) const;
  // The inverse rotation (by -angle): DeepSeek V4 de-rotates its attention
  // output, whose values are the rotated keys.
  void Unapply(std::span<float> x, uint32_t pos) const;

  uint32_t dim() const { return dim_; }
  // YaRN's attention factor on cos/sin (1 without YaRN).
  float attention_factor() const { return attention_factor_; }

 private:
  void Rotate(std::span<float> x, uint32_t pos, float direction) const;

  uint32_t dim_;
  bool interleaved_;
  float attention_factor_ = 1.0f;
  std::vector<float> inv_freq_;  // [dim / 2]
};


}  // namespace warp::computed
