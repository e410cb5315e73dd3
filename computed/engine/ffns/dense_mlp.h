#pragma once

// A dense gated MLP, down(act(gate x, up x)) with SiLU (SwiGLU) or SiTU:
// the dense layers and the shared experts of MoE layers.
//
// Thread-compatible: one Forward at a time.

#include <string>

#include "common/compute/compute_context.h"
#include "computed/engine/ffn.h"
#include "computed/engine/forward_stats.h"
#include "computed/engine/trunk_weights.h"
#include "computed/model/layer_plan.h"
#include "computed/model/model_config.h"

namespace warp::computed {

class DenseMlp : public Ffn {
 public:
  // Binds `tensors`; times itself into `seconds`.
  DenseMlp(const TrunkWeights& weights, const MlpTensors& tensors, const GluActivation& act,
           ComputeContext& compute, double& seconds);

  absl::Status Forward(std::span<const float> x, const PassTokens& tokens,
                       std::span<float> out) override;
  // The same over n rows (what a shared expert needs).
  void Run(std::span<const float> x, uint32_t n, std::span<float> out);

 private:
  ComputeContext& compute_;
  double& seconds_;
  GluActivation act_;
  kernels::MatrixView gate_, up_, down_;
};

}  // namespace warp::computed
