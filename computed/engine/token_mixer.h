#pragma once

// TokenMixer: the part of a decoder layer that mixes information across
// positions (softmax attention today; linear attention, compressed attention
// tomorrow), with the state it keeps between forward passes. One object per
// layer, built from the layer plan with its weights bound once.
//
// Thread-compatible: one Forward at a time.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>

#include "common/compute/compute_context.h"
#include "common/kernels/matrix_view.h"
#include "computed/engine/layer_state.h"
#include "computed/engine/trunk_weights.h"
#include "computed/model/layer_plan.h"

namespace warp::computed {

class TokenMixer {
 public:
  virtual ~TokenMixer() = default;

  // x: [n][hidden] normalized inputs of tokens at positions first_pos ..
  // first_pos + n - 1; writes out [n][hidden]. Every token sees the state up
  // to its own position only, so a chunk gives the bits of n single steps.
  virtual void Forward(std::span<const float> x, uint32_t n, uint32_t first_pos,
                       std::span<float> out) = 0;

  virtual LayerState& state() = 0;

  // The mixer's last step, out = weight a + bias, on which what the layer
  // computes next depends linearly (EarlyRoute); nullopt where it ends otherwise.
  struct OutputProjection {
    kernels::MatrixView weight;
    std::span<const float> bias;  // [weight.rows], or empty
  };
  virtual std::optional<OutputProjection> output_projection() const { return std::nullopt; }

  // Told a [n][weight.cols], the output projection's input, just before the
  // projection runs (on the calling thread); nullptr: nobody is told.
  using BeforeOutput = std::function<void(std::span<const float> a, uint32_t n)>;
  void set_before_output(BeforeOutput hook) { before_output_ = std::move(hook); }

 protected:
  void TellBeforeOutput(std::span<const float> a, uint32_t n) const {
    if (before_output_) before_output_(a, n);
  }

 private:
  BeforeOutput before_output_;
};

// The mixer `plan` names. `earlier`: the same sequence's mixers of the
// layers before it (DeepSeek V4.1's read their sources' caches). REQUIRES:
// the trunk holds its tensors (checked at engine creation against
// TrunkTensorSpecs).
std::unique_ptr<TokenMixer> CreateMixer(const ModelConfig& config, const MixerPlan& plan,
                                        const TrunkWeights& weights, uint32_t context,
                                        ComputeContext& compute,
                                        std::span<const std::unique_ptr<TokenMixer>> earlier);

}  // namespace warp::computed
