#include "common/store/lfru_order.h"

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

bool IsUse(Priority priority) { return priority != Priority::kLookahead; }

}  // namespace

void LfruOrder::Insert(const ExpertKey& key, Priority priority) {
  Entry entry{.last_use = ++access_clock_};
  if (IsUse(priority)) {
    entry.frequency = 1;
    ++frequency_sum_;
  }
  WARP_CHECK(entries_.emplace(key, entry).second);
  order_.insert(OrderKey{entry.frequency, entry.last_use, key});
  if (IsUse(priority)) MaybeAge();
}

void LfruOrder::Touch(const ExpertKey& key, Priority priority) {
  auto it = entries_.find(key);
  WARP_CHECK(it != entries_.end());
  Entry& entry = it->second;
  WARP_CHECK(order_.erase(OrderKey{entry.frequency, entry.last_use, key}) == 1);
  entry.last_use = ++access_clock_;
  if (IsUse(priority)) {
    ++entry.frequency;
    ++frequency_sum_;
  }
  order_.insert(OrderKey{entry.frequency, entry.last_use, key});
  if (IsUse(priority)) MaybeAge();
}

void LfruOrder::Erase(const ExpertKey& key) {
  auto it = entries_.find(key);
  WARP_CHECK(it != entries_.end());
  WARP_CHECK(order_.erase(OrderKey{it->second.frequency, it->second.last_use, key}) == 1);
  frequency_sum_ -= it->second.frequency;
  entries_.erase(it);
}

void LfruOrder::ForEachCandidate(absl::FunctionRef<bool(const ExpertKey&)> visit) const {
  for (const OrderKey& order : order_) {
    if (!visit(order.key)) return;
  }
}

void LfruOrder::MaybeAge() {
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
  order_.clear();
  for (const auto& [key, entry] : entries_) {
    order_.insert(OrderKey{entry.frequency, entry.last_use, key});
  }
}

}  // namespace warp
