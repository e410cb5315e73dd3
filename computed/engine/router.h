#pragma once

// Router: picks a token's experts from its router logits with the exact rule
// of the architecture (softmax top-k; sigmoid + selection bias with
// group-limited top-k; top-k of the raw logits then softmax over the k), and
// the weights their outputs are combined with.

#include <cstdint>
#include <span>
#include <vector>

#include "common/compute/compute_context.h"
#include "common/kernels/matrix_view.h"
#include "computed/engine/trunk_weights.h"
#include "computed/model/layer_plan.h"
#include "computed/model/model_config.h"

namespace warp::computed {

// The experts of one token in routing-rank order (best first), with weights.
struct Routing {
  std::vector<uint32_t> experts;
  std::vector<float> weights;
};

// `logits` [num_experts] are the router's outputs (x . W_gate^T, plus its bias
// where it has one); `bias` is e_score_correction_bias for sigmoid and
// sqrt-softplus routing (selection only), else empty; `hashed`, if not
// empty, the experts of a hash layer, which then only weighs them. Pure.
// Unselected groups are excluded entirely, as DeepSeek's reference does, even
// where every biased score in the kept groups is negative.
Routing Route(const ModelConfig& config, std::span<const float> logits, std::span<const float> bias,
              uint32_t top_k, std::span<const float> hashed = {});

// The router of one MoE layer, its weights bound once.
//
// Thread-compatible (uses the pool for the logits).
class Router {
 public:
  Router(const ModelConfig& config, const FfnPlan& plan, const TrunkWeights& weights,
         ComputeContext& compute);

  // The top-k routing of each of the n tokens of x [n][hidden]; a hash layer
  // takes its experts from the table by `tokens` (one per row of x).
  std::vector<Routing> Route(std::span<const float> x, std::span<const int32_t> tokens,
                             uint32_t top_k) const;
  // The top-k routing of one token from its raw logits (x . W_gate^T), which
  // it adds the router's bias to. REQUIRES: !hashed().
  Routing RouteLogits(std::span<float> logits, uint32_t top_k) const;
  // Whether the experts picked depend only on the order of the raw logits,
  // not on their scale (softmax or top-k of the logits, no bias of either kind).
  bool ScaleFree() const;
  const kernels::MatrixView& weight() const { return weight_; }
  uint32_t num_experts() const { return config_.num_experts; }
  // A hash layer's experts are known from the token alone (DeepSeek V4's tid2eid).
  bool hashed() const { return !hash_table_.empty(); }
  // The experts a hash layer gives `token`, in table order. REQUIRES: hashed().
  std::span<const float> HashedExperts(int32_t token) const {
    return hash_table_.subspan(uint64_t(token) * config_.experts_per_token,
                               config_.experts_per_token);
  }

 private:
  const ModelConfig& config_;
  ComputeContext& compute_;
  kernels::MatrixView weight_;
  std::span<const float> logit_bias_, selection_bias_;
  std::span<const float> hash_table_;  // [vocab][top-k] expert ids, or empty
};

}  // namespace warp::computed
