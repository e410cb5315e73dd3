#pragma once

// Router: picks a token's experts from its router logits with the exact rule
// of the architecture (softmax top-k; sigmoid + selection bias with
// group-limited top-k; top-k of the raw logits then softmax over the k), and
// the weights their outputs are combined with.

#include <cstdint>
#include <span>
#include <vector>

#include "computed/engine/thread_pool.h"
#include "computed/engine/trunk_weights.h"
#include "computed/kernels/matrix_view.h"
#include "computed/model/layer_plan.h"
#include "computed/model/model_config.h"

namespace warp::computed {

// The experts of one token in routing-rank order (best first), with weights.
struct Routing {
  std::vector<uint32_t> experts;
  std::vector<float> weights;
};

// `logits` [num_experts] are the router's outputs (x . W_gate^T, plus its bias
// where it has one); `bias` is e_score_correction_bias for sigmoid routing
// (selection only), else empty. Pure.
// Unselected groups are excluded entirely, as DeepSeek's reference does, even
// where every biased score in the kept groups is negative.
Routing Route(const ModelConfig& config, std::span<const float> logits, std::span<const float> bias,
              uint32_t top_k);

// The router of one MoE layer, its weights bound once.
//
// Thread-compatible (uses the pool for the logits).
class Router {
 public:
  Router(const ModelConfig& config, const FfnPlan& plan, const TrunkWeights& weights,
         ThreadPool& pool);

  // The top-k routing of each of the n tokens of x [n][hidden].
  std::vector<Routing> Route(std::span<const float> x, uint32_t n, uint32_t top_k) const;
  uint32_t num_experts() const { return config_.num_experts; }

 private:
  const ModelConfig& config_;
  ThreadPool& pool_;
  kernels::MatrixView weight_;
  std::span<const float> logit_bias_, selection_bias_;
};

}  // namespace warp::computed
