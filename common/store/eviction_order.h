#pragma once

// EvictionOrder: the order in which a RecordCache gives up its unpinned
// records when a demand or certain read needs room. A small policy interface
// in the manner of CacheLib Navy's EvictionPolicy: it is told of every access
// and removal of the keys a cache holds and names victim candidates, first
// victim first; it never sees bytes, pins or slots (the RecordCache skips the
// pinned candidates and decides how many it needs). Implementations:
// LfruOrder (lfru_order.h), LruOrder (lru_order.h), ArcOrder (arc_order.h)
// and DuelOrder (duel_order.h, the default, which follows the best of the
// other three).
//
// Thread-compatible: its RecordCache calls it under the store's mutex.

#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "common/store/expert_source.h"

namespace warp {

class EvictionOrder {
 public:
  virtual ~EvictionOrder() = default;

  // `key` became resident through a read of `priority`. REQUIRES: not held.
  virtual void Insert(const ExpertKey& key, Priority priority) = 0;
  // A resident `key` was read again at `priority`. REQUIRES: held.
  virtual void Touch(const ExpertKey& key, Priority priority) = 0;
  // `key` left the cache (evicted or erased). REQUIRES: held.
  virtual void Erase(const ExpertKey& key) = 0;
  // Calls `visit` with every held key, the first victim first, until it
  // returns false. `visit` must not change the order.
  virtual void ForEachCandidate(absl::FunctionRef<bool(const ExpertKey&)> visit) const = 0;
  virtual size_t size() const = 0;
  // The cache now holds at most `keys` records (a memory governor's shrink or
  // regrowth). Orders that size themselves by the most keys held at once
  // (ARC's c, the duel's shadow caches) take it instead; the others ignore it.
  virtual void SetCapacity(uint64_t /*keys*/) {}
};

// Which EvictionOrder a store's cache uses (ExpertdConfig.cache_policy).
enum class EvictionPolicy {
  kLfru,  // LfruOrder: the lowest aged frequency first, then the least recently used
  kLru,   // LruOrder: the least recently used first
  kArc,   // ArcOrder: adaptive between recency and frequency (ARC)
  kDuel,  // DuelOrder: whichever of LFRU, LRU and ARC hits most on the recent past
};

// DUEL: on every trace of docs/EFFICIENCY.md ("Cache policies: the duel") it
// hits within 1% of the better of LRU and LFRU, and up to 19% more.
inline constexpr EvictionPolicy kDefaultEvictionPolicy = EvictionPolicy::kDuel;

std::unique_ptr<EvictionOrder> MakeEvictionOrder(EvictionPolicy policy);

// "lfru", "lru", "arc" or "duel"; "" is kDefaultEvictionPolicy. InvalidArgument names the others.
absl::StatusOr<EvictionPolicy> ParseEvictionPolicy(std::string_view name);
const char* EvictionPolicyName(EvictionPolicy policy);

}  // namespace warp
