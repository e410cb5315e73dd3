#pragma once

// DuelOrder: an EvictionOrder that follows whichever of its contestant
// policies (LRU, LFRU and ARC) would be hitting most right now. Each
// contestant keeps an order over the real cache's keys, and also runs a shadow
// cache of its own (keys only, no bytes) that sees the same demand accesses
// and evicts by its own rule. A hit in a shadow earns its contestant a point;
// points decay, so the leader is the best policy of the recent past
// (`kScoreWindow` cache-fulls of accesses), and a challenger must beat it by
// a clear margin to take over. Victims are named by the leader's real order. On a trace where one
// policy is best throughout, DuelOrder evicts as that policy does; where the best changes (a
// trained model's recency, a skewed popularity), it changes with it. Set dueling (Qureshi et al.,
// ISCA 2007) with whole shadow caches instead of sampled sets: an expert cache
// holds hundreds to thousands of records, so a full shadow is cheap.
//
// DEMAND and CERTAIN accesses are the shadows' workload; LOOKAHEAD inserts and
// touches reach the real orders only (a prediction is not a use). The
// shadows hold as many keys as the real cache has held at once, or as
// SetCapacity last said (a governor's shrink empties them down to it).
//
// Thread-compatible.

#include <array>
#include <cstdint>
#include <memory>

#include "absl/container/flat_hash_set.h"
#include "common/store/eviction_order.h"

namespace warp {

class DuelOrder final : public EvictionOrder {
 public:
  // Scores decay by 1/(kScoreWindow x capacity) a use: a contestant's lead
  // counts over about this many cache-fulls of demand accesses.
  static constexpr uint64_t kScoreWindow = 64;

  DuelOrder();

  void Insert(const ExpertKey& key, Priority priority) override;
  void Touch(const ExpertKey& key, Priority priority) override;
  void Erase(const ExpertKey& key) override;
  void ForEachCandidate(absl::FunctionRef<bool(const ExpertKey&)> visit) const override;
  size_t size() const override { return real_[0]->size(); }
  void SetCapacity(uint64_t keys) override;

  // The policy whose order names the victims now (for tests and the stats).
  EvictionPolicy leader() const { return kContestants[leader_]; }
  // The most keys any shadow holds (for tests).
  size_t largest_shadow() const;

 private:
  static constexpr std::array<EvictionPolicy, 3> kContestants = {
      EvictionPolicy::kLfru, EvictionPolicy::kLru, EvictionPolicy::kArc};

  // A contestant's cache of keys, run on the demand accesses alone.
  struct Shadow {
    std::unique_ptr<EvictionOrder> order;
    absl::flat_hash_set<ExpertKey> keys;
    double score = 0;  // decayed hits
  };

  // Replays one use of `key` in every shadow and scores the hits.
  void Use(const ExpertKey& key, Priority priority);
  // Evicts the shadow's first victim.
  static void EvictOne(Shadow& shadow);

  std::array<std::unique_ptr<EvictionOrder>, kContestants.size()> real_;
  std::array<Shadow, kContestants.size()> shadows_;
  size_t leader_ = 0;      // index into kContestants; LFRU until another scores more
  uint64_t capacity_ = 0;  // of the shadows, in keys
};

}  // namespace warp
