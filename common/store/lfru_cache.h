#pragma once

// LfruCache: replacement policy and byte accounting for the expert record
// cache. Decides which records stay resident and which must go; never touches
// buffers or files (the ExpertStore owns those and frees what Insert returns).
//
// Policy (DESIGN.md, expertd): demand and certain inserts evict by LFRU, the
// lowest frequency first and the least recently used among equals. Frequencies
// age (all halve) so a key that was hot long ago does not stay forever.
// Speculative (lookahead) inserts may only take free bytes or cold records:
// they never evict a record that a demand or certain access touched recently.
// Pinned records are never evicted.
//
// Thread-compatible: the ExpertStore calls it under its mutex.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "common/store/expert_source.h"

namespace warp {

// Why a record is accessed. kDemand and kCertain count as use; kLookahead is a guess.
enum class AccessKind { kDemand, kCertain, kLookahead };

class LfruCache {
 public:
  struct Options {
    uint64_t capacity_bytes = 0;
    // A record is "warm" if a demand (or certain) access touched it within the
    // last `recent_window` demand/certain accesses to the cache; speculative
    // (kLookahead) inserts may never evict a warm record. 0 means: window =
    // number of resident entries.
    uint64_t recent_window = 0;
  };

  struct Stats {
    uint64_t inserts = 0;              // admitted, any kind
    uint64_t evictions = 0;            // keys returned by Insert (Erase is not an eviction)
    uint64_t rejected_inserts = 0;     // Insert returned nullopt
    uint64_t speculative_inserts = 0;  // admitted kLookahead inserts
    // kLookahead-inserted records evicted before any demand/certain touch:
    // speculative bytes read for nothing.
    uint64_t speculative_evicted_unused = 0;
  };

  explicit LfruCache(const Options& options);

  LfruCache(const LfruCache&) = delete;
  LfruCache& operator=(const LfruCache&) = delete;

  bool Contains(const ExpertKey& key) const;

  // Records a hit of `kind`. Returns false if `key` is not resident.
  // Every hit refreshes recency; lookahead hits do not raise frequency and do
  // not make the record warm.
  bool Touch(const ExpertKey& key, AccessKind kind);

  // Tries to admit `key` charging `bytes`. On success returns the keys evicted
  // to make room (the caller frees their buffers), in eviction order. Returns
  // nullopt, evicting nothing, if `key` cannot be admitted: bytes > capacity,
  // or not enough evictable bytes (pinned records are never evicted; kLookahead
  // may only use free bytes or evict cold records, least recently demanded
  // first, never-used speculative records before all others).
  // A demand/certain insert counts as the record's first use (frequency 1); a
  // lookahead insert starts at frequency 0.
  // REQUIRES: `key` is not resident.
  std::optional<std::vector<ExpertKey>> Insert(const ExpertKey& key, uint64_t bytes,
                                               AccessKind kind);

  // Pins nest: pinning twice needs two Unpins.
  void Pin(const ExpertKey& key);    // REQUIRES: `key` is resident.
  void Unpin(const ExpertKey& key);  // REQUIRES: `key` is pinned.
  bool IsPinned(const ExpertKey& key) const;

  // Removes `key` (e.g. its buffer was found corrupt). Not counted as an eviction.
  // REQUIRES: `key` is resident and not pinned.
  void Erase(const ExpertKey& key);

  uint64_t used_bytes() const { return used_bytes_; }
  uint64_t capacity_bytes() const { return options_.capacity_bytes; }
  uint64_t pinned_bytes() const { return pinned_bytes_; }
  size_t size() const { return entries_.size(); }
  const Stats& stats() const { return stats_; }

 private:
  struct Entry {
    uint64_t bytes = 0;
    uint64_t frequency = 0;    // demand/certain uses, aged by halving
    uint64_t last_use = 0;     // access_clock_ at the last access of any kind
    uint64_t last_demand = 0;  // demand_clock_ at the last demand/certain access; 0: never
    uint32_t pin_count = 0;
  };

  // Position of an unpinned entry in an eviction order: ascending `rank`, then
  // ascending `last_use` (unique per entry, so the key only breaks impossible ties).
  struct OrderKey {
    uint64_t rank = 0;
    uint64_t last_use = 0;
    ExpertKey key;
    friend bool operator<(const OrderKey& a, const OrderKey& b) {
      return std::tie(a.rank, a.last_use, a.key.layer, a.key.expert) <
             std::tie(b.rank, b.last_use, b.key.layer, b.key.expert);
    }
  };

  struct KeyHash {
    size_t operator()(const ExpertKey& key) const;
  };

  using EntryMap = std::unordered_map<ExpertKey, Entry, KeyHash>;

  // Adds/removes an unpinned entry to/from both eviction orders.
  void Index(const ExpertKey& key, const Entry& entry);
  void Unindex(const ExpertKey& key, const Entry& entry);

  bool IsCold(const Entry& entry) const;
  // Collects cold victims, least recently demanded first, until `bytes` fit.
  std::optional<std::vector<ExpertKey>> PickColdVictims(uint64_t bytes) const;
  void Evict(const ExpertKey& key);
  void Remove(EntryMap::iterator it);
  // Halves every frequency while their sum exceeds max(8 x entries, 64).
  void MaybeAge();

  const Options options_;
  EntryMap entries_;
  std::set<OrderKey> by_frequency_;    // rank = frequency: demand/certain eviction order
  std::set<OrderKey> by_last_demand_;  // rank = last_demand: lookahead eviction order
  uint64_t access_clock_ = 0;          // every access
  uint64_t demand_clock_ = 0;          // demand/certain accesses only
  uint64_t frequency_sum_ = 0;
  uint64_t used_bytes_ = 0;
  uint64_t pinned_bytes_ = 0;
  Stats stats_;
};

}  // namespace warp
