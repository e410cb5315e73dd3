#pragma once

// ResidualScheme: how a model's sublayers join its residual stream — which
// input each sublayer sees and how its output is added back — and what the
// head reads at the end. Pre-norm today; hyper-connections (mHC) and
// attention residuals (AttnRes) are further schemes behind the same calls.
//
// Thread-compatible: one forward pass at a time.

#include <cstdint>
#include <array>
#include <memory>
#include <span>
#include <vector>

#include "computed/engine/trunk_weights.h"
#include "computed/model/layer_plan.h"

namespace warp::computed {

enum class Sublayer { kMixer, kFfn };

class ResidualScheme {
 public:
  virtual ~ResidualScheme() = default;

  // Starts a pass of n tokens from their embeddings [n][hidden].
  virtual void Begin(std::vector<float> embeddings, uint32_t n) = 0;
  // The input of `sublayer` of `layer`, [n][hidden], into x.
  virtual void SublayerInput(uint32_t layer, Sublayer sublayer, std::span<float> x) = 0;
  // An estimate of `layer`'s FFN input [n][hidden] before its mixer has run,
  // into x: the input it would get if the mixer added nothing. Changes no
  // state (the lookahead guesses the layer's routing from it).
  virtual void EstimateFfnInput(uint32_t layer, std::span<float> x) const = 0;
  // Adds what the sublayer computed, y [n][hidden].
  virtual void AddSublayerOutput(uint32_t layer, Sublayer sublayer, std::span<const float> y) = 0;
  // What the head reads after the last layer, [n][hidden], into x.
  virtual void FinalInput(std::span<float> x) = 0;
  // Pre-norm only: the stream h [n][hidden] that each sublayer reads as
  // RmsNorm(h) and adds its output to (EarlyRoute); empty for the other
  // schemes, whose inputs are no such function of the outputs before them.
  virtual std::span<const float> stream() const { return {}; }
  // Hyper-connections only: the streams [n][mult][hidden], which DeepSeek
  // V4.1's engram adds to before a layer's mixer; empty for the other schemes.
  virtual std::span<float> streams() { return {}; }

  // The scheme `plan` names, its norms bound.
  static std::unique_ptr<ResidualScheme> Create(const ModelConfig& config, const ModelPlan& plan,
                                                const TrunkWeights& weights);
};

}  // namespace warp::computed
