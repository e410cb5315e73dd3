#pragma once

// LfruOrder: least-frequently-then-least-recently-used eviction. Victims go by ascending frequency, ties by the oldest access
// of any kind. DEMAND and CERTAIN accesses count as use (frequency + 1; an
// insert starts at 1); LOOKAHEAD accesses only refresh recency (an insert
// starts at 0, so an unused prediction goes first). Frequencies age: all
// halve while their sum exceeds max(8 x held keys, 64), so a key that was hot
// long ago does not stay forever.
//
// Thread-compatible.

#include <cstdint>
#include <set>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "common/store/eviction_order.h"

namespace warp {

class LfruOrder final : public EvictionOrder {
 public:
  void Insert(const ExpertKey& key, Priority priority) override;
  void Touch(const ExpertKey& key, Priority priority) override;
  void Erase(const ExpertKey& key) override;
  void ForEachCandidate(absl::FunctionRef<bool(const ExpertKey&)> visit) const override;
  size_t size() const override { return entries_.size(); }

 private:
  struct Entry {
    uint64_t frequency = 0;  // demand/certain uses, aged by halving
    uint64_t last_use = 0;   // access_clock_ at the last access of any kind
  };
  // Ascending frequency, then ascending last_use (unique per entry, so the
  // key only breaks impossible ties).
  struct OrderKey {
    uint64_t frequency = 0;
    uint64_t last_use = 0;
    ExpertKey key;
    friend bool operator<(const OrderKey& a, const OrderKey& b) {
      return std::tie(a.frequency, a.last_use, a.key.layer, a.key.expert) <
             std::tie(b.frequency, b.last_use, b.key.layer, b.key.expert);
    }
  };
  // Halves every frequency while their sum exceeds max(8 x entries, 64).
  void MaybeAge();

  absl::flat_hash_map<ExpertKey, Entry> entries_;
  std::set<OrderKey> order_;
  uint64_t access_clock_ = 0;
  uint64_t frequency_sum_ = 0;
};

}  // namespace warp
