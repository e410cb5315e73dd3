#include "computed/engine/lookahead.h"

#include <algorithm>

namespace warp::computed {

Lookahead::Lookahead(std::vector<const Router*> routers, uint32_t width, ExpertSource& experts)
    : routers_(std::move(routers)), width_(width), experts_(experts), predicted_(routers_.size()) {}

void Lookahead::Hint(uint32_t layer, std::span<const float> x, std::span<const int32_t> tokens) {
  uint32_t next = layer + 1;
  while (next < routers_.size() && routers_[next] == nullptr) ++next;
  if (width_ == 0 || next >= routers_.size() || routers_[next]->hashed()) return;
  const Router& router = *routers_[next];
  const uint32_t top_n = std::min(width_, router.num_experts());
  std::vector<ExpertKey> keys;
  std::vector<bool> seen(router.num_experts(), false);
  predicted_[next].clear();
  for (const Routing& routing : router.Route(x, tokens, top_n)) {
    predicted_[next].push_back(routing.experts);
    stats_.predicted += routing.experts.size();
    for (uint32_t expert : routing.experts) {
      if (!seen[expert]) keys.push_back({next, expert});
      seen[expert] = true;
    }
  }
  experts_.Prefetch(keys, Priority::kLookahead);
}

void Lookahead::Score(uint32_t layer, const std::vector<Routing>& routed, uint64_t record_bytes) {
  std::vector<std::vector<uint32_t>>& predicted = predicted_[layer];
  if (!predicted.empty() && predicted.size() == routed.size()) {
    const uint32_t num_experts = routers_[layer]->num_experts();
    std::vector<bool> used(num_experts, false), hinted(num_experts, false);
    for (size_t t = 0; t < routed.size(); ++t) {
      for (uint32_t expert : predicted[t]) hinted[expert] = true;
      for (uint32_t expert : routed[t].experts) {
        used[expert] = true;
        ++stats_.routed;
        stats_.hits += std::count(predicted[t].begin(), predicted[t].end(), expert);
      }
    }
    for (uint32_t e = 0; e < num_experts; ++e) {
      if (hinted[e] && !used[e]) stats_.wasted_bytes += record_bytes;
    }
  }
  predicted.clear();
}

}  // namespace warp::computed
