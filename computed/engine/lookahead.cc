#include "computed/engine/lookahead.h"

#include <algorithm>

#include "common/check.h"
#include "common/store/read_window.h"

namespace warp::computed {

Lookahead::Lookahead(std::vector<const Router*> routers, uint32_t width, double min_precision,
                     ExpertSource& experts, uint32_t depth, uint64_t cache_records)
    : routers_(std::move(routers)), width_(width), experts_(experts), cache_records_(cache_records) {
  WARP_CHECK(depth >= 1 && depth <= 2);
  for (uint32_t d = 0; d < depth; ++d) {
    ahead_.push_back(Ahead{.gate = PrecisionGate(width, min_precision),
                           .predicted = std::vector<std::vector<std::vector<uint32_t>>>(
                               routers_.size()),
                           .hinted_ranks = std::vector<uint32_t>(routers_.size(), 0)});
  }
}

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

bool Lookahead::Predictable(uint32_t layer) const {
  return layer < routers_.size() && routers_[layer] != nullptr && !routers_[layer]->hashed();
}

bool Lookahead::Predicts(uint32_t layer) const { return width_ > 0 && Predictable(layer); }

uint32_t Lookahead::NextPredictable(uint32_t layer) const {
  uint32_t next = layer + 1;
  while (next < routers_.size() && routers_[next] == nullptr) ++next;
  return Predictable(next) ? next : static_cast<uint32_t>(routers_.size());
}

void Lookahead::Hint(uint32_t layer, std::span<const float> x, std::span<const int32_t> tokens) {
  WARP_CHECK(Predicts(layer));
  std::vector<ExpertKey> keys;  // this layer's first: the store reads hints in order
  uint32_t target = layer;
  for (Ahead& ahead : ahead_) {
    Predict(ahead, target, x, tokens, keys);
    target = NextPredictable(target);
    if (target >= routers_.size()) break;
  }
  if (!keys.empty()) experts_.Prefetch(FirstWave(keys, cache_records_), Priority::kLookahead);
}

void Lookahead::Predict(Ahead& ahead, uint32_t target, std::span<const float> x,
                        std::span<const int32_t> tokens, std::vector<ExpertKey>& keys) {
  const Router& router = *routers_[target];
  const uint32_t top_n = std::min(width_, router.num_experts());
  std::vector<bool> seen(router.num_experts(), false);
  const uint32_t hinted = std::min(ahead.gate.HintedRanks(), top_n);
  ahead.predicted[target].clear();
  ahead.hinted_ranks[target] = hinted;
  for (const Routing& routing : router.Route(x, tokens, top_n)) {
    ahead.predicted[target].push_back(routing.experts);
    for (size_t rank = 0; rank < std::min<size_t>(hinted, routing.experts.size()); ++rank) {
      const uint32_t expert = routing.experts[rank];
      ++ahead.stats.predicted;
      if (!seen[expert]) keys.push_back({target, expert});
      seen[expert] = true;
    }
  }
}

void Lookahead::Score(uint32_t layer, const std::vector<Routing>& routed, uint64_t record_bytes) {
  for (Ahead& ahead : ahead_) ScoreAhead(ahead, layer, routed, record_bytes);
}

void Lookahead::ScoreAhead(Ahead& ahead, uint32_t layer, const std::vector<Routing>& routed,
                           uint64_t record_bytes) {
  std::vector<std::vector<uint32_t>>& predicted = ahead.predicted[layer];
  if (!predicted.empty() && predicted.size() == routed.size()) {
    const uint32_t num_experts = routers_[layer]->num_experts();
    std::vector<bool> used(num_experts, false), hinted(num_experts, false);
    const size_t hinted_ranks = ahead.hinted_ranks[layer];
    for (size_t t = 0; t < routed.size(); ++t) {
      const std::vector<uint32_t>& guesses = predicted[t];
      const std::vector<uint32_t>& experts = routed[t].experts;
      for (size_t rank = 0; rank < guesses.size(); ++rank) {
        const bool right =
            std::find(experts.begin(), experts.end(), guesses[rank]) != experts.end();
        ahead.gate.Score(static_cast<uint32_t>(rank), right);
        if (rank < hinted_ranks) {
          hinted[guesses[rank]] = true;
          ahead.stats.hits += right;
        }
      }
      for (uint32_t expert : experts) used[expert] = true;
      ahead.stats.routed += experts.size();
    }
    for (uint32_t e = 0; e < num_experts; ++e) {
      if (hinted[e] && !used[e]) ahead.stats.wasted_bytes += record_bytes;
    }
  }
  predicted.clear();
}

}  // namespace warp::computed
