#include "computed/engine/lookahead.h"

#include <algorithm>

namespace warp::computed {

Lookahead::Lookahead(std::vector<const Router*> routers, uint32_t width, double min_precision,
                     ExpertSource& experts)
    : routers_(std::move(routers)),
      width_(width),
      gate_(width, min_precision),
      experts_(experts),
      predicted_(routers_.size()),
      hinted_ranks_(routers_.size(), 0) {}

uint32_t PrecisionGate::HintedRanks() const {
  const auto ranks = static_cast<uint32_t>(scored_.size());
  if (min_precision_ <= 0) return ranks;
  uint32_t hinted = 0;
  while (hinted < ranks &&
         (scored_[hinted] < kWarmUp || static_cast<double>(right_[hinted]) >=
                                           min_precision_ * static_cast<double>(scored_[hinted]))) {
    ++hinted;
  }
  return hinted;
}

void Lookahead::Hint(uint32_t layer, std::span<const float> x, std::span<const int32_t> tokens) {
  uint32_t next = layer + 1;
  while (next < routers_.size() && routers_[next] == nullptr) ++next;
  if (width_ == 0 || next >= routers_.size() || routers_[next]->hashed()) return;
  const Router& router = *routers_[next];
  const uint32_t top_n = std::min(width_, router.num_experts());
  std::vector<ExpertKey> keys;
  std::vector<bool> seen(router.num_experts(), false);
  const uint32_t hinted = std::min(gate_.HintedRanks(), top_n);
  predicted_[next].clear();
  hinted_ranks_[next] = hinted;
  for (const Routing& routing : router.Route(x, tokens, top_n)) {
    predicted_[next].push_back(routing.experts);
    for (size_t rank = 0; rank < std::min<size_t>(hinted, routing.experts.size()); ++rank) {
      const uint32_t expert = routing.experts[rank];
      ++stats_.predicted;
      if (!seen[expert]) keys.push_back({next, expert});
      seen[expert] = true;
    }
  }
  if (!keys.empty()) experts_.Prefetch(keys, Priority::kLookahead);
}

void Lookahead::Score(uint32_t layer, const std::vector<Routing>& routed, uint64_t record_bytes) {
  std::vector<std::vector<uint32_t>>& predicted = predicted_[layer];
  if (!predicted.empty() && predicted.size() == routed.size()) {
    const uint32_t num_experts = routers_[layer]->num_experts();
    std::vector<bool> used(num_experts, false), hinted(num_experts, false);
    const size_t hinted_ranks = hinted_ranks_[layer];
    for (size_t t = 0; t < routed.size(); ++t) {
      const std::vector<uint32_t>& guesses = predicted[t];
      const std::vector<uint32_t>& experts = routed[t].experts;
      for (size_t rank = 0; rank < guesses.size(); ++rank) {
        const bool right =
            std::find(experts.begin(), experts.end(), guesses[rank]) != experts.end();
        gate_.Score(static_cast<uint32_t>(rank), right);
        if (rank < hinted_ranks) {
          hinted[guesses[rank]] = true;
          stats_.hits += right;
        }
      }
      for (uint32_t expert : experts) used[expert] = true;
      stats_.routed += experts.size();
    }
    for (uint32_t e = 0; e < num_experts; ++e) {
      if (hinted[e] && !used[e]) stats_.wasted_bytes += record_bytes;
    }
  }
  predicted.clear();
}

}  // namespace warp::computed
