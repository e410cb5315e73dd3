#include "common/store/lfru_cache.h"

#include <algorithm>

#include "common/check.h"

namespace warp {
namespace {

// Frequencies halve once their sum exceeds this many per entry: a key must
// keep being used to stay ahead, while a burst of a few hundred hits is
// forgotten after a few cache-fulls of traffic.
constexpr uint64_t kAgingFrequencyPerEntry = 8;
// Floor of the aging threshold, so a nearly empty cache does not age on every hit.
constexpr uint64_t kMinAgingFrequencySum = 64;

bool IsUse(AccessKind kind) { return kind != AccessKind::kLookahead; }

}  // namespace

size_t LfruCache::KeyHash::operator()(const ExpertKey& key) const {
  const uint64_t packed = (uint64_t{key.layer} << 32) | key.expert;
  return static_cast<size_t>((packed * 0x9E3779B97F4A7C15ull) >> 16);
}

LfruCache::LfruCache(const Options& options) : options_(options) {}

bool LfruCache::Contains(const ExpertKey& key) const { return entries_.contains(key); }

bool LfruCache::Touch(const ExpertKey& key, AccessKind kind) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  Entry& entry = it->second;
  Unindex(key, entry);
  entry.last_use = ++access_clock_;
  if (IsUse(kind)) {
    entry.last_demand = ++demand_clock_;
    ++entry.frequency;
    ++frequency_sum_;
  }
  Index(key, entry);
  if (IsUse(kind)) MaybeAge();
  return true;
}

std::optional<std::vector<ExpertKey>> LfruCache::Insert(const ExpertKey& key, uint64_t bytes,
                                                        AccessKind kind) {
  WARP_CHECK(!Contains(key));
  const uint64_t capacity = options_.capacity_bytes;
  const uint64_t free_bytes = capacity - used_bytes_;
  std::vector<ExpertKey> victims;
  if (bytes > capacity) {
    ++stats_.rejected_inserts;
    return std::nullopt;
  }
  if (!IsUse(kind)) {
    if (bytes > free_bytes) {
      std::optional<std::vector<ExpertKey>> cold = PickColdVictims(bytes - free_bytes);
      if (!cold.has_value()) {
        ++stats_.rejected_inserts;
        return std::nullopt;
      }
      victims = *std::move(cold);
      for (const ExpertKey& victim : victims) Evict(victim);
    }
  } else {
    if (bytes > capacity - pinned_bytes_) {
      ++stats_.rejected_inserts;
      return std::nullopt;
    }
    while (capacity - used_bytes_ < bytes) {
      WARP_CHECK(!by_frequency_.empty());
      victims.push_back(by_frequency_.begin()->key);
      Evict(victims.back());
    }
  }

  Entry entry{.bytes = bytes, .last_use = ++access_clock_};
  if (IsUse(kind)) {
    entry.frequency = 1;
    entry.last_demand = ++demand_clock_;
    ++frequency_sum_;
  } else {
    ++stats_.speculative_inserts;
  }
  entries_.emplace(key, entry);
  Index(key, entry);
  used_bytes_ += bytes;
  ++stats_.inserts;
  if (IsUse(kind)) MaybeAge();
  return victims;
}

void LfruCache::Pin(const ExpertKey& key) {
  auto it = entries_.find(key);
  WARP_CHECK(it != entries_.end());
  Entry& entry = it->second;
  if (entry.pin_count == 0) {
    Unindex(key, entry);
    pinned_bytes_ += entry.bytes;
  }
  ++entry.pin_count;
}

void LfruCache::Unpin(const ExpertKey& key) {
  auto it = entries_.find(key);
  WARP_CHECK(it != entries_.end());
  Entry& entry = it->second;
  WARP_CHECK(entry.pin_count > 0);
  --entry.pin_count;
  if (entry.pin_count == 0) {
    pinned_bytes_ -= entry.bytes;
    Index(key, entry);
  }
}

bool LfruCache::IsPinned(const ExpertKey& key) const {
  auto it = entries_.find(key);
  return it != entries_.end() && it->second.pin_count > 0;
}

void LfruCache::Erase(const ExpertKey& key) {
  auto it = entries_.find(key);
  WARP_CHECK(it != entries_.end());
  WARP_CHECK(it->second.pin_count == 0);
  Remove(it);
}

void LfruCache::Index(const ExpertKey& key, const Entry& entry) {
  if (entry.pin_count > 0) return;
  by_frequency_.insert(OrderKey{entry.frequency, entry.last_use, key});
  by_last_demand_.insert(OrderKey{entry.last_demand, entry.last_use, key});
}

void LfruCache::Unindex(const ExpertKey& key, const Entry& entry) {
  if (entry.pin_count > 0) return;
  WARP_CHECK(by_frequency_.erase(OrderKey{entry.frequency, entry.last_use, key}) == 1);
  WARP_CHECK(by_last_demand_.erase(OrderKey{entry.last_demand, entry.last_use, key}) == 1);
}

bool LfruCache::IsCold(const Entry& entry) const {
  const uint64_t window = options_.recent_window != 0 ? options_.recent_window : entries_.size();
  return entry.last_demand == 0 || demand_clock_ - entry.last_demand >= window;
}

std::optional<std::vector<ExpertKey>> LfruCache::PickColdVictims(uint64_t bytes) const {
  // Coldness depends only on last_demand, so the cold entries are a prefix of
  // by_last_demand_: the walk stops at the first warm one.
  std::vector<ExpertKey> victims;
  uint64_t freed_bytes = 0;
  for (const OrderKey& order : by_last_demand_) {
    const Entry& entry = entries_.at(order.key);
    if (!IsCold(entry)) break;
    victims.push_back(order.key);
    freed_bytes += entry.bytes;
    if (freed_bytes >= bytes) return victims;
  }
  return std::nullopt;
}

void LfruCache::Evict(const ExpertKey& key) {
  auto it = entries_.find(key);
  WARP_CHECK(it != entries_.end());
  WARP_CHECK(it->second.pin_count == 0);
  if (it->second.last_demand == 0) ++stats_.speculative_evicted_unused;
  ++stats_.evictions;
  Remove(it);
}

void LfruCache::Remove(EntryMap::iterator it) {
  Unindex(it->first, it->second);
  used_bytes_ -= it->second.bytes;
  frequency_sum_ -= it->second.frequency;
  entries_.erase(it);
}

void LfruCache::MaybeAge() {
  const uint64_t threshold =
      std::max<uint64_t>(kAgingFrequencyPerEntry * entries_.size(), kMinAgingFrequencySum);
  if (frequency_sum_ <= threshold) return;
  // O(n log n), but the sum then needs about 4 x entries more uses to cross
  // the threshold again, so aging costs O(log n) amortized per use.
  while (frequency_sum_ > threshold) {
    frequency_sum_ = 0;
    for (auto& [key, entry] : entries_) {
      entry.frequency /= 2;
      frequency_sum_ += entry.frequency;
    }
  }
  by_frequency_.clear();
  for (const auto& [key, entry] : entries_) {
    if (entry.pin_count == 0) by_frequency_.insert(OrderKey{entry.frequency, entry.last_use, key});
  }
}

}  // namespace warp
