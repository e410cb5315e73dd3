#include "computed/engine/router.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "common/compute/linear.h"
#include "computed/engine/ops.h"
#include "computed/model/kinds/moe.h"

namespace warp::computed {
namespace {

// Indices of the `k` largest `scores`, best first; ties go to the lower index.
std::vector<uint32_t> TopK(std::span<const float> scores, uint32_t k) {
  std::vector<uint32_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](uint32_t a, uint32_t b) {
    return scores[a] != scores[b] ? scores[a] > scores[b] : a < b;
  });
  order.resize(k);
  return order;
}

// The chosen experts' weights: their (unbiased) scores, over their sum if
// norm_topk_prob, times routed_scaling_factor.
void WeighByScores(const ModelConfig& config, std::span<const float> scores, Routing& routing) {
  float sum = 0.0f;
  for (uint32_t expert : routing.experts) {
    routing.weights.push_back(scores[expert]);
    sum += scores[expert];
  }
  for (float& w : routing.weights) {
    if (config.norm_topk_prob) w /= sum + 1e-20f;
    w *= config.routed_scaling_factor;
  }
}

Routing SoftmaxTopK(const ModelConfig& config, std::span<const float> logits, uint32_t top_k) {
  std::vector<float> probs(logits.begin(), logits.end());
  Softmax(probs);
  Routing routing{.experts = TopK(probs, top_k)};
  float sum = 0.0f;
  for (uint32_t expert : routing.experts) {
    routing.weights.push_back(probs[expert]);
    sum += probs[expert];
  }
  if (config.norm_topk_prob) {
    for (float& w : routing.weights) w /= sum;
  }
  return routing;
}

Routing SigmoidGroupTopK(const ModelConfig& config, std::span<const float> logits,
                         std::span<const float> bias, uint32_t top_k) {
  const size_t n = logits.size();
  std::vector<float> scores(n);
  std::vector<float> choice(n);
  for (size_t e = 0; e < n; ++e) {
    scores[e] = 1.0f / (1.0f + std::exp(-logits[e]));
    choice[e] = scores[e] + (bias.empty() ? 0.0f : bias[e]);
  }
  // Group score: the sum of the two best biased scores in the group.
  const size_t group_size = n / config.n_group;
  std::vector<float> group_scores(config.n_group);
  for (uint32_t g = 0; g < config.n_group; ++g) {
    std::span<const float> members(choice.data() + g * group_size, group_size);
    const std::vector<uint32_t> best = TopK(members, std::min<uint32_t>(2, group_size));
    for (uint32_t i : best) group_scores[g] += members[i];
  }
  std::vector<float> masked(n, -std::numeric_limits<float>::infinity());
  for (uint32_t g : TopK(group_scores, config.topk_group)) {
    std::copy_n(choice.begin() + g * group_size, group_size, masked.begin() + g * group_size);
  }
  Routing routing{.experts = TopK(masked, top_k)};
  WeighByScores(config, scores, routing);
  return routing;
}

// DeepSeek V4: scores sqrt(softplus(logit / gate_temp)) (V4.1's temperature;
// V4's is 1); the top-k of score + bias (or a hash layer's experts); weights
// the scores over their sum, x routed_scaling_factor.
Routing SqrtSoftplusTopK(const ModelConfig& config, std::span<const float> logits,
                         std::span<const float> bias, uint32_t top_k,
                         std::span<const float> hashed) {
  const size_t n = logits.size();
  std::vector<float> scores(n), choice(n);
  for (size_t e = 0; e < n; ++e) {
    const float x = logits[e] / config.router_temperature;
    scores[e] = std::sqrt(x > 20.0f ? x : std::log1p(std::exp(x)));  // softplus, threshold 20
    choice[e] = scores[e] + (bias.empty() ? 0.0f : bias[e]);
  }
  Routing routing;
  if (hashed.empty()) {
    routing.experts = TopK(choice, top_k);
  } else {
    for (float expert : hashed) routing.experts.push_back(static_cast<uint32_t>(expert));
  }
  WeighByScores(config, scores, routing);
  return routing;
}

// gpt-oss: top-k of the raw logits, then softmax over the chosen k.
Routing TopKSoftmax(std::span<const float> logits, uint32_t top_k) {
  Routing routing{.experts = TopK(logits, top_k)};
  for (uint32_t expert : routing.experts) routing.weights.push_back(logits[expert]);
  Softmax(routing.weights);
  return routing;
}

}  // namespace

Routing Route(const ModelConfig& config, std::span<const float> logits, std::span<const float> bias,
              uint32_t top_k, std::span<const float> hashed) {
  switch (config.router) {
    case RouterKind::kSoftmaxTopK:
      return SoftmaxTopK(config, logits, top_k);
    case RouterKind::kSigmoidGroupTopK:
      return SigmoidGroupTopK(config, logits, bias, top_k);
    case RouterKind::kTopKSoftmax:
      return TopKSoftmax(logits, top_k);
    case RouterKind::kSqrtSoftplusTopK:
      return SqrtSoftplusTopK(config, logits, bias, top_k, hashed);
  }
  return {};
}

Router::Router(const ModelConfig& config, const FfnPlan& plan, const TrunkWeights& weights,
               ComputeContext& compute)
    : config_(config), compute_(compute) {
  const MoeTensors t = MoeTensors::Of(config, plan);
  weight_ = weights.Matrix(t.router);
  logit_bias_ = weights.Vector(t.router_bias);
  selection_bias_ = weights.Vector(t.selection_bias);
  hash_table_ = weights.Vector(t.hash_table);
}

std::vector<Routing> Router::Route(std::span<const float> x, std::span<const int32_t> tokens,
                                   uint32_t top_k) const {
  const uint32_t n = static_cast<uint32_t>(tokens.size());
  const uint32_t num_experts = config_.num_experts;
  std::vector<float> logits(uint64_t{n} * num_experts);
  Linear(compute_, weight_, x.data(), n, logits.data());
  std::vector<Routing> routings;
  for (uint32_t t = 0; t < n; ++t) {
    std::span<float> row(&logits[uint64_t{t} * num_experts], num_experts);
    for (size_t e = 0; e < logit_bias_.size(); ++e) row[e] += logit_bias_[e];
    routings.push_back(
        computed::Route(config_, row, selection_bias_, top_k,
                        hashed() ? HashedExperts(tokens[t]) : std::span<const float>()));
  }
  return routings;
}

Routing Router::RouteLogits(std::span<float> logits, uint32_t top_k) const {
  for (size_t e = 0; e < logit_bias_.size(); ++e) logits[e] += logit_bias_[e];
  return computed::Route(config_, logits, selection_bias_, top_k);
}

bool Router::ScaleFree() const {
  const bool by_order =
      config_.router == RouterKind::kSoftmaxTopK || config_.router == RouterKind::kTopKSoftmax;
  return by_order && logit_bias_.empty() && selection_bias_.empty() && !hashed();
}

}  // namespace warp::computed
