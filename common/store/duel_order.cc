#include "common/store/duel_order.h"

#include <algorithm>

#include "common/check.h"

namespace warp {
namespace {

bool IsUse(Priority priority) { return priority != Priority::kLookahead; }

// A challenger takes over when its score passes the leader's by this share
// and by one hit more: every change of leader costs the misses of a cache
// holding the old leader's choice, so near-ties keep the leader. Chosen on the
// traces in docs/EFFICIENCY.md (a 3%-10% margin swapped on noise there).
constexpr double kTakeOverShare = 0.2;
constexpr double kTakeOverHits = 1.0;

}  // namespace

DuelOrder::DuelOrder() {
  for (size_t i = 0; i < kContestants.size(); ++i) {
    real_[i] = MakeEvictionOrder(kContestants[i]);
    shadows_[i].order = MakeEvictionOrder(kContestants[i]);
  }
}

void DuelOrder::Use(const ExpertKey& key, Priority priority) {
  const double keep =
      1.0 - 1.0 / static_cast<double>(kScoreWindow * std::max<uint64_t>(capacity_, 1));
  for (Shadow& shadow : shadows_) {
    shadow.score *= keep;
    if (shadow.keys.contains(key)) {
      shadow.score += 1;
      shadow.order->Touch(key, priority);
      continue;
    }
    if (!shadow.keys.empty() && shadow.keys.size() >= capacity_) EvictOne(shadow);
    shadow.order->Insert(key, priority);
    shadow.keys.insert(key);
  }
  size_t best = leader_;
  for (size_t i = 0; i < shadows_.size(); ++i) {
    if (shadows_[i].score > shadows_[best].score) best = i;
  }
  if (shadows_[best].score > shadows_[leader_].score * (1 + kTakeOverShare) + kTakeOverHits) {
    leader_ = best;
  }
}

void DuelOrder::EvictOne(Shadow& shadow) {
  ExpertKey victim;
  shadow.order->ForEachCandidate([&](const ExpertKey& first) {
    victim = first;
    return false;
  });
  shadow.order->Erase(victim);
  shadow.keys.erase(victim);
}

void DuelOrder::SetCapacity(uint64_t keys) {
  capacity_ = keys;
  for (auto& order : real_) order->SetCapacity(keys);
  for (Shadow& shadow : shadows_) {
    while (shadow.keys.size() > keys) EvictOne(shadow);
    shadow.order->SetCapacity(keys);
  }
}

size_t DuelOrder::largest_shadow() const {
  size_t largest = 0;
  for (const Shadow& shadow : shadows_) largest = std::max(largest, shadow.keys.size());
  return largest;
}

void DuelOrder::Insert(const ExpertKey& key, Priority priority) {
  for (auto& order : real_) order->Insert(key, priority);
  capacity_ = std::max<uint64_t>(capacity_, real_[0]->size());
  if (IsUse(priority)) Use(key, priority);
}

void DuelOrder::Touch(const ExpertKey& key, Priority priority) {
  for (auto& order : real_) order->Touch(key, priority);
  if (IsUse(priority)) Use(key, priority);
}

void DuelOrder::Erase(const ExpertKey& key) {
  for (auto& order : real_) order->Erase(key);
}

void DuelOrder::ForEachCandidate(absl::FunctionRef<bool(const ExpertKey&)> visit) const {
  real_[leader_]->ForEachCandidate(visit);
}

}  // namespace warp
