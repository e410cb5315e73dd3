#pragma once

// RecordCache: admission, byte accounting and pins of the expert record
// cache, over a pluggable EvictionOrder (DuelOrder by default). Decides
// which records stay resident and which must go; never touches buffers or
// files (the ExpertStore owns the RecordArena slots and frees those of the
// keys Insert returns).
//
// Rules it owns, whatever the order:
// - Pinned records (a read in progress, a lease held) are never evicted.
// - Demand and certain inserts evict the order's first unpinned candidates.
// - A certain insert is the use of the demand it was read for: that demand's
//   touch (the first after the insert) refreshes recency but is not counted
//   again, so certain-read records do not outrank demand-read ones.
// - Speculative (lookahead) inserts may only take free bytes or cold records:
//   they never evict a record that a demand or certain access touched
//   recently; cold victims go least recently demanded first, never-used
//   speculative records before all others. While the cache earns no demand
//   hits (under 2% of the last ~256 demands: smaller than the reuse distance,
//   as a cache below a token's working set with spread routing), every
//   unpinned record is cold: recency protects nothing that is used again
//   before it goes.
// - Foresight: a record the router lookahead has just predicted (a speculative
//   or certain insert, or a prediction of a resident record) is spared by
//   every eviction until its demand uses it or its layer has passed for every
//   client that predicted it (ForgetForesight); it goes only when nothing else
//   can. Belady's MIN owes its edge to knowing the next uses; the lookahead
//   knows the next layer's.
// - A corrupt record never enters: the store admits and pins a key for its
//   read and Erases it if the read fails, so no failed record is ever found.
//
// Thread-compatible: the ExpertStore calls it under its mutex.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "common/store/client_set.h"
#include "common/store/eviction_order.h"
#include "common/store/expert_source.h"

namespace warp {

class RecordCache {
 public:
  struct Options {
    uint64_t capacity_bytes = 0;
    // A record is "warm" if a demand (or certain) access touched it within the
    // last `recent_window` demand/certain accesses to the cache; speculative
    // (kLookahead) inserts may never evict a warm record. 0 means: window =
    // number of resident entries.
    uint64_t recent_window = 0;
    EvictionPolicy policy = kDefaultEvictionPolicy;  // the order of demand evictions
    bool foresight = true;  // false: Foresee and speculative inserts spare nothing (A/B)
  };

  struct Stats {
    uint64_t inserts = 0;              // admitted, any priority
    uint64_t evictions = 0;            // keys returned by Insert (Erase is not an eviction)
    uint64_t rejected_inserts = 0;     // Insert returned nullopt
    uint64_t speculative_inserts = 0;  // admitted kLookahead inserts
    // kLookahead-inserted records evicted before any demand/certain touch:
    // speculative bytes read for nothing.
    uint64_t speculative_evicted_unused = 0;
    // Predicted records evicted before their layer passed, for want of any
    // other victim.
    uint64_t foreseen_evicted = 0;
  };

  explicit RecordCache(const Options& options);

  RecordCache(const RecordCache&) = delete;
  RecordCache& operator=(const RecordCache&) = delete;

  bool Contains(const ExpertKey& key) const;

  // How a resident record came in, for the first use's accounting: kCache
  // once a demand (or the certain read that counts as one) has used it,
  // kLookahead or kCertain while the prediction that read it waits for its
  // demand. REQUIRES: `key` is resident.
  Served Origin(const ExpertKey& key) const;

  // Records a hit at `priority`. Returns false if `key` is not resident.
  // Every hit is told to the eviction order; lookahead hits do not make the
  // record warm.
  bool Touch(const ExpertKey& key, Priority priority);

  // Tries to admit `key` charging `bytes`. On success returns the keys evicted
  // to make room (the caller frees their buffers), in eviction order. Returns
  // nullopt, evicting nothing, if `key` cannot be admitted: bytes > capacity,
  // or not enough evictable bytes (pinned records are never evicted;
  // kLookahead may only use free bytes or evict cold records). `limit_bytes`
  // caps the capacity for this insert alone: the cache evicts to stay within
  // it, without shrinking (ExpertStore's paced growth). A speculative or
  // certain insert is foreseen for the clients in `predicted_by` (empty:
  // kLocalClient).
  // REQUIRES: `key` is not resident.
  std::optional<std::vector<ExpertKey>> Insert(const ExpertKey& key, uint64_t bytes,
                                               Priority priority,
                                               uint64_t limit_bytes = UINT64_MAX,
                                               const ClientSet& predicted_by = {});

  // `client`'s lookahead predicts a use of the resident `key`: spare it until
  // that use or `client`'s ForgetForesight. Returns false if `key` is not resident.
  bool Foresee(const ExpertKey& key, ClientId client = kLocalClient);
  // The layers up to `through_layer` have passed for `client`: its
  // predictions of them no longer spare anything (another client's still do).
  void ForgetForesight(uint32_t through_layer, ClientId client = kLocalClient);
  bool IsForeseen(const ExpertKey& key) const { return foreseen_.contains(key); }

  // Changes the capacity (a memory governor's shrink or regrowth). Returns the
  // keys evicted to fit under it, in eviction order (the caller frees their
  // buffers); pinned records stay, so used_bytes() may exceed the capacity
  // until they are unpinned and later inserts evict them. The order is told
  // the capacity in records of the largest size admitted so far.
  std::vector<ExpertKey> SetCapacity(uint64_t bytes);

  // Pins nest: pinning twice needs two Unpins.
  void Pin(const ExpertKey& key);    // REQUIRES: `key` is resident.
  void Unpin(const ExpertKey& key);  // REQUIRES: `key` is pinned.
  bool IsPinned(const ExpertKey& key) const;

  // Removes `key` (e.g. its buffer was found corrupt). Not counted as an eviction.
  // REQUIRES: `key` is resident and not pinned.
  void Erase(const ExpertKey& key);

  uint64_t used_bytes() const { return used_bytes_; }
  uint64_t capacity_bytes() const { return capacity_bytes_; }
  uint64_t pinned_bytes() const { return pinned_bytes_; }
  size_t size() const { return entries_.size(); }
  EvictionPolicy policy() const { return options_.policy; }
  bool foresight() const { return options_.foresight; }
  const Stats& stats() const { return stats_; }

 private:
  struct Entry {
    uint64_t bytes = 0;
    uint64_t last_use = 0;     // access_clock_ at the last access of any kind
    uint64_t last_demand = 0;  // demand_clock_ at the last demand/certain access; 0: never
    uint32_t pin_count = 0;
    // Inserted by a CERTAIN read whose demand has not come yet: that demand is
    // the use the insert already counted, not a second one.
    bool certain_unclaimed = false;
  };

  // Position of an unpinned entry in the order of speculative evictions:
  // ascending last_demand, then ascending last_use (unique per entry, so the
  // key only breaks impossible ties).
  struct ColdKey {
    uint64_t last_demand = 0;
    uint64_t last_use = 0;
    ExpertKey key;
    friend bool operator<(const ColdKey& a, const ColdKey& b) {
      return std::tie(a.last_demand, a.last_use, a.key.layer, a.key.expert) <
             std::tie(b.last_demand, b.last_use, b.key.layer, b.key.expert);
    }
  };

  using EntryMap = absl::flat_hash_map<ExpertKey, Entry>;

  bool IsCold(const Entry& entry) const;
  // A demand access: a hit (Touch) or a miss (Insert).
  void CountDemand(bool hit);
  // The cache has earned (almost) no demand hits lately (IsCold).
  bool EarnsNoHits() const;
  // Collects cold victims that are not foreseen, least recently demanded
  // first, until `bytes` fit (a guess never evicts another).
  std::optional<std::vector<ExpertKey>> PickColdVictims(uint64_t bytes) const;
  // Collects the order's first unpinned candidates until `bytes` fit, the
  // foreseen ones only if the others do not suffice.
  std::vector<ExpertKey> PickVictims(uint64_t bytes) const;
  void Evict(const ExpertKey& key);
  void Remove(EntryMap::iterator it);

  const Options options_;
  const std::unique_ptr<EvictionOrder> order_;  // every resident key, pinned ones included
  uint64_t capacity_bytes_;                     // options_.capacity_bytes until SetCapacity
  EntryMap entries_;
  std::set<ColdKey> by_last_demand_;         // unpinned entries only
  // Resident, predicted, not used yet: the clients whose predictions spare it.
  absl::flat_hash_map<ExpertKey, ClientSet> foreseen_;
  uint64_t access_clock_ = 0;                // every access
  uint64_t demand_clock_ = 0;                // demand/certain accesses only
  uint64_t used_bytes_ = 0;
  uint64_t pinned_bytes_ = 0;
  uint64_t largest_entry_bytes_ = 0;  // to tell the order its capacity in keys
  double demand_hit_rate_ = 0;        // over the recent demands (CountDemand)
  uint64_t demand_accesses_ = 0;
  Stats stats_;
};

}  // namespace warp
