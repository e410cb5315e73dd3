#pragma once

// ArcOrder: adaptive replacement (Megiddo and Modha, ARC, FAST 2003) as an
// EvictionOrder. Resident keys sit in T1 (used once since they came in) or
// T2 (used again); keys evicted from each leave a ghost in B1 or B2. A key
// that comes back while its ghost is in B1 says recency was short of room:
// the target size p of T1 grows; one from B2 says frequency was: p shrinks.
// Victims come from T1 while it is larger than p, else from T2, least
// recently used first; then the rest of both. So on a scan-like workload it
// behaves as LRU, on a skewed one as LFU-like, without a tuned knob.
//
// DEMAND and CERTAIN accesses count as use (promote to T2); LOOKAHEAD inserts
// enter T1 and LOOKAHEAD touches change nothing, so an unused prediction is
// never promoted. c (which bounds the ghost lists) is the most keys held at
// once, or the capacity SetCapacity last gave, whichever came later.
//
// Thread-compatible.

#include <cstdint>
#include <list>

#include "absl/container/flat_hash_map.h"
#include "common/store/eviction_order.h"

namespace warp {

class ArcOrder final : public EvictionOrder {
 public:
  void Insert(const ExpertKey& key, Priority priority) override;
  void Touch(const ExpertKey& key, Priority priority) override;
  void Erase(const ExpertKey& key) override;
  void ForEachCandidate(absl::FunctionRef<bool(const ExpertKey&)> visit) const override;
  size_t size() const override { return resident_.size(); }
  void SetCapacity(uint64_t keys) override;

  uint64_t target_t1() const { return p_; }         // for tests
  size_t ghosts() const { return ghosts_.size(); }  // for tests

 private:
  enum ListId { kT1, kT2, kB1, kB2 };
  using List = std::list<ExpertKey>;  // front: the least recently used
  struct Where {
    ListId list;
    List::iterator at;
  };

  List& list(ListId id) { return lists_[id]; }
  void PushMru(ListId id, const ExpertKey& key, absl::flat_hash_map<ExpertKey, Where>& index);
  void TrimGhosts();

  List lists_[4];
  absl::flat_hash_map<ExpertKey, Where> resident_;  // in T1 or T2
  absl::flat_hash_map<ExpertKey, Where> ghosts_;    // in B1 or B2
  uint64_t p_ = 0;                                  // target size of T1, in keys
  uint64_t capacity_ = 0;                           // c, in keys
};

}  // namespace warp
