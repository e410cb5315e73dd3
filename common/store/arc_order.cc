#include "common/store/arc_order.h"

#include <algorithm>

#include "common/check.h"

namespace warp {
namespace {

bool IsUse(Priority priority) { return priority != Priority::kLookahead; }

}  // namespace

void ArcOrder::PushMru(ListId id, const ExpertKey& key,
                       absl::flat_hash_map<ExpertKey, Where>& index) {
  index[key] = Where{id, list(id).insert(list(id).end(), key)};
}

void ArcOrder::Insert(const ExpertKey& key, Priority priority) {
  WARP_CHECK(!resident_.contains(key));
  ListId to = kT1;
  if (auto ghost = ghosts_.find(key); ghost != ghosts_.end()) {
    const uint64_t b1 = std::max<uint64_t>(list(kB1).size(), 1);
    const uint64_t b2 = std::max<uint64_t>(list(kB2).size(), 1);
    if (IsUse(priority)) {
      // A ghost hit: the list it was evicted from was short of room.
      if (ghost->second.list == kB1) {
        p_ = std::min(capacity_, p_ + std::max<uint64_t>(b2 / b1, 1));
      } else {
        const uint64_t step = std::max<uint64_t>(b1 / b2, 1);
        p_ = p_ > step ? p_ - step : 0;
      }
      to = kT2;  // seen before: more than once now
    }
    list(ghost->second.list).erase(ghost->second.at);
    ghosts_.erase(ghost);
  }
  PushMru(to, key, resident_);
  capacity_ = std::max<uint64_t>(capacity_, resident_.size());
}

void ArcOrder::Touch(const ExpertKey& key, Priority priority) {
  auto it = resident_.find(key);
  WARP_CHECK(it != resident_.end());
  if (!IsUse(priority)) return;
  list(it->second.list).erase(it->second.at);
  PushMru(kT2, key, resident_);
}

void ArcOrder::Erase(const ExpertKey& key) {
  auto it = resident_.find(key);
  WARP_CHECK(it != resident_.end());
  const ListId ghost_list = it->second.list == kT1 ? kB1 : kB2;
  list(it->second.list).erase(it->second.at);
  resident_.erase(it);
  PushMru(ghost_list, key, ghosts_);
  TrimGhosts();
}

void ArcOrder::SetCapacity(uint64_t keys) {
  capacity_ = keys;
  p_ = std::min(p_, capacity_);
  TrimGhosts();
}

void ArcOrder::TrimGhosts() {
  // |T1| + |B1| <= c and |B1| + |B2| <= c, dropping the oldest ghosts.
  auto drop_oldest = [&](ListId id) {
    ghosts_.erase(list(id).front());
    list(id).pop_front();
  };
  while (!list(kB1).empty() && list(kT1).size() + list(kB1).size() > capacity_) drop_oldest(kB1);
  while (list(kB1).size() + list(kB2).size() > capacity_) {
    drop_oldest(list(kB2).empty() ? kB1 : kB2);
  }
}

void ArcOrder::ForEachCandidate(absl::FunctionRef<bool(const ExpertKey&)> visit) const {
  // ARC's REPLACE: T1's oldest while T1 is over its target, else T2's.
  const bool t1_first = lists_[kT1].size() > p_ || lists_[kT2].empty();
  for (ListId id : {t1_first ? kT1 : kT2, t1_first ? kT2 : kT1}) {
    for (const ExpertKey& key : lists_[id]) {
      if (!visit(key)) return;
    }
  }
}

}  // namespace warp
