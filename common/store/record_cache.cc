#include "common/store/record_cache.h"

#include <algorithm>

#include "common/check.h"

namespace warp {
namespace {

bool IsUse(Priority priority) { return priority != Priority::kLookahead; }

// The demand hit rate is a running mean over the first kHitRateWindow demands,
// then an exponential one over about as many; below kNoHits after the first
// window, the cache earns (almost) nothing from recency.
constexpr uint64_t kHitRateWindow = 256;
constexpr double kNoHits = 0.02;

}  // namespace

RecordCache::RecordCache(const Options& options)
    : options_(options),
      order_(MakeEvictionOrder(options.policy)),
      capacity_bytes_(options.capacity_bytes) {}

bool RecordCache::Contains(const ExpertKey& key) const { return entries_.contains(key); }

Served RecordCache::Origin(const ExpertKey& key) const {
  const Entry& entry = entries_.at(key);
  if (entry.certain_unclaimed) return Served::kCertain;
  return entry.last_demand == 0 ? Served::kLookahead : Served::kCache;
}

bool RecordCache::Touch(const ExpertKey& key, Priority priority) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  Entry& entry = it->second;
  if (IsUse(priority)) foreseen_.erase(key);  // the prediction came true: recency protects it now
  if (entry.certain_unclaimed && priority == Priority::kDemand) {
    entry.certain_unclaimed = false;
    priority = Priority::kLookahead;  // recency only: the insert counted this use
  } else if (priority == Priority::kDemand) {
    CountDemand(/*hit=*/entry.last_demand != 0);  // a guess's first use is not the cache's hit
  }
  const bool indexed = entry.pin_count == 0;
  if (indexed) {
    WARP_CHECK(by_last_demand_.erase(ColdKey{entry.last_demand, entry.last_use, key}) == 1);
  }
  entry.last_use = ++access_clock_;
  if (IsUse(priority)) entry.last_demand = ++demand_clock_;
  if (indexed) by_last_demand_.insert(ColdKey{entry.last_demand, entry.last_use, key});
  order_->Touch(key, priority);
  return true;
}

std::optional<std::vector<ExpertKey>> RecordCache::Insert(const ExpertKey& key, uint64_t bytes,
                                                          Priority priority, uint64_t limit_bytes,
                                                          const ClientSet& predicted_by) {
  WARP_CHECK(!Contains(key));
  const uint64_t capacity = std::min(capacity_bytes_, limit_bytes);
  // What must go for `bytes` to fit; more than `bytes` after a shrink left the
  // cache over its capacity (its pinned records could not go then).
  const uint64_t over = used_bytes_ + bytes > capacity ? used_bytes_ + bytes - capacity : 0;
  std::vector<ExpertKey> victims;
  if (bytes > capacity) {
    ++stats_.rejected_inserts;
    return std::nullopt;
  }
  if (!IsUse(priority)) {
    if (over > 0) {
      std::optional<std::vector<ExpertKey>> cold = PickColdVictims(over);
      if (!cold.has_value()) {
        ++stats_.rejected_inserts;
        return std::nullopt;
      }
      victims = *std::move(cold);
    }
  } else {
    if (pinned_bytes_ + bytes > capacity) {
      ++stats_.rejected_inserts;
      return std::nullopt;
    }
    if (over > 0) victims = PickVictims(over);
  }
  for (const ExpertKey& victim : victims) Evict(victim);

  if (priority == Priority::kDemand) CountDemand(/*hit=*/false);
  Entry entry{.bytes = bytes,
              .last_use = ++access_clock_,
              .certain_unclaimed = priority == Priority::kCertain};
  if (IsUse(priority)) {
    entry.last_demand = ++demand_clock_;
  } else {
    ++stats_.speculative_inserts;
  }
  entries_.emplace(key, entry);
  if (options_.foresight && priority != Priority::kDemand) {  // predicted
    foreseen_[key] = predicted_by.empty() ? ClientSet(kLocalClient) : predicted_by;
  }
  by_last_demand_.insert(ColdKey{entry.last_demand, entry.last_use, key});
  order_->Insert(key, priority);
  used_bytes_ += bytes;
  largest_entry_bytes_ = std::max(largest_entry_bytes_, bytes);
  ++stats_.inserts;
  return victims;
}

bool RecordCache::Foresee(const ExpertKey& key, ClientId client) {
  if (!entries_.contains(key)) return false;
  if (options_.foresight) foreseen_[key].Add(client);
  return true;
}

void RecordCache::ForgetForesight(uint32_t through_layer, ClientId client) {
  absl::erase_if(foreseen_, [&](auto& foreseen) {
    auto& [key, clients] = foreseen;
    if (key.layer > through_layer) return false;
    clients.Remove(client);
    return clients.empty();
  });
}

std::vector<ExpertKey> RecordCache::SetCapacity(uint64_t bytes) {
  capacity_bytes_ = bytes;
  std::vector<ExpertKey> victims;
  if (used_bytes_ > bytes) {
    // Pinned records stay; the order's first unpinned ones go until the rest fit.
    const uint64_t need = std::min(used_bytes_ - bytes, used_bytes_ - pinned_bytes_);
    if (need > 0) victims = PickVictims(need);
    for (const ExpertKey& victim : victims) Evict(victim);
  }
  // The order's shadows and ghosts size themselves in keys: as many records
  // as the new capacity holds (the store charges every record one slot).
  if (largest_entry_bytes_ > 0) order_->SetCapacity(bytes / largest_entry_bytes_);
  return victims;
}

void RecordCache::Pin(const ExpertKey& key) {
  auto it = entries_.find(key);
  WARP_CHECK(it != entries_.end());
  Entry& entry = it->second;
  if (entry.pin_count == 0) {
    WARP_CHECK(by_last_demand_.erase(ColdKey{entry.last_demand, entry.last_use, key}) == 1);
    pinned_bytes_ += entry.bytes;
  }
  ++entry.pin_count;
}

void RecordCache::Unpin(const ExpertKey& key) {
  auto it = entries_.find(key);
  WARP_CHECK(it != entries_.end());
  Entry& entry = it->second;
  WARP_CHECK(entry.pin_count > 0);
  --entry.pin_count;
  if (entry.pin_count == 0) {
    pinned_bytes_ -= entry.bytes;
    by_last_demand_.insert(ColdKey{entry.last_demand, entry.last_use, key});
  }
}

bool RecordCache::IsPinned(const ExpertKey& key) const {
  auto it = entries_.find(key);
  return it != entries_.end() && it->second.pin_count > 0;
}

void RecordCache::Erase(const ExpertKey& key) {
  auto it = entries_.find(key);
  WARP_CHECK(it != entries_.end());
  WARP_CHECK(it->second.pin_count == 0);
  Remove(it);
}

void RecordCache::CountDemand(bool hit) {
  ++demand_accesses_;
  const double weight = std::max(1.0 / kHitRateWindow, 1.0 / demand_accesses_);
  demand_hit_rate_ += weight * ((hit ? 1.0 : 0.0) - demand_hit_rate_);
}

bool RecordCache::EarnsNoHits() const {
  return demand_accesses_ >= kHitRateWindow && demand_hit_rate_ < kNoHits;
}

bool RecordCache::IsCold(const Entry& entry) const {
  const uint64_t window = options_.recent_window != 0 ? options_.recent_window : entries_.size();
  return entry.last_demand == 0 || EarnsNoHits() || demand_clock_ - entry.last_demand >= window;
}

std::optional<std::vector<ExpertKey>> RecordCache::PickColdVictims(uint64_t bytes) const {
  // Coldness depends only on last_demand, so the cold entries are a prefix of
  // by_last_demand_: the walk stops at the first warm one.
  std::vector<ExpertKey> victims;
  uint64_t freed_bytes = 0;
  for (const ColdKey& cold : by_last_demand_) {
    const Entry& entry = entries_.at(cold.key);
    if (!IsCold(entry)) break;
    if (foreseen_.contains(cold.key)) continue;
    victims.push_back(cold.key);
    freed_bytes += entry.bytes;
    if (freed_bytes >= bytes) return victims;
  }
  return std::nullopt;
}

std::vector<ExpertKey> RecordCache::PickVictims(uint64_t bytes) const {
  std::vector<ExpertKey> victims;
  uint64_t freed_bytes = 0;
  // First the order's unpinned candidates that no prediction spares, then,
  // only if those do not free enough, the foreseen ones in the same order.
  for (const bool take_foreseen : {false, true}) {
    if (take_foreseen && (freed_bytes >= bytes || foreseen_.empty())) break;
    order_->ForEachCandidate([&](const ExpertKey& key) {
      const Entry& entry = entries_.at(key);
      if (entry.pin_count > 0 || foreseen_.contains(key) != take_foreseen) return true;
      victims.push_back(key);
      freed_bytes += entry.bytes;
      return freed_bytes < bytes;
    });
  }
  // The caller checked that the unpinned bytes suffice.
  WARP_CHECK(freed_bytes >= bytes);
  return victims;
}

void RecordCache::Evict(const ExpertKey& key) {
  auto it = entries_.find(key);
  WARP_CHECK(it != entries_.end());
  WARP_CHECK(it->second.pin_count == 0);
  if (it->second.last_demand == 0) ++stats_.speculative_evicted_unused;
  if (foreseen_.contains(key)) ++stats_.foreseen_evicted;
  ++stats_.evictions;
  Remove(it);
}

void RecordCache::Remove(EntryMap::iterator it) {
  if (it->second.pin_count == 0) {
    WARP_CHECK(by_last_demand_.erase(
                   ColdKey{it->second.last_demand, it->second.last_use, it->first}) == 1);
  }
  order_->Erase(it->first);
  foreseen_.erase(it->first);
  used_bytes_ -= it->second.bytes;
  entries_.erase(it);
}

}  // namespace warp
