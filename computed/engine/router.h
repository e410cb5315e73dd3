#pragma once

// Router: picks a token's experts from its router logits with the exact rule
// of the architecture (softmax top-k, or sigmoid + selection bias with
// group-limited top-k), and the weights their outputs are combined with.
//
// Thread-safe: pure functions.

#include <cstdint>
#include <span>
#include <vector>

#include "computed/model/model_config.h"

namespace warp::computed {

// The experts of one token in routing-rank order (best first), with weights.
struct Routing {
  std::vector<uint32_t> experts;
  std::vector<float> weights;
};

// `logits` [num_experts] are the router's outputs (x . W_gate^T); `bias` is
// e_score_correction_bias for sigmoid routing (selection only), else empty.
// Unselected groups are excluded entirely, as DeepSeek's reference does, even
// where every biased score in the kept groups is negative.
Routing Route(const ModelConfig& config, std::span<const float> logits, std::span<const float> bias,
              uint32_t top_k);

}  // namespace warp::computed
