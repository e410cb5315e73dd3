#include "common/store/lru_order.h"

#include "common/check.h"

namespace warp {

void LruOrder::Insert(const ExpertKey& key, Priority) {
  WARP_CHECK(!positions_.contains(key));
  positions_.emplace(key, order_.insert(order_.end(), key));
}

void LruOrder::Touch(const ExpertKey& key, Priority) {
  auto it = positions_.find(key);
  WARP_CHECK(it != positions_.end());
  order_.splice(order_.end(), order_, it->second);
}

void LruOrder::Erase(const ExpertKey& key) {
  auto it = positions_.find(key);
  WARP_CHECK(it != positions_.end());
  order_.erase(it->second);
  positions_.erase(it);
}

void LruOrder::ForEachCandidate(absl::FunctionRef<bool(const ExpertKey&)> visit) const {
  for (const ExpertKey& key : order_) {
    if (!visit(key)) return;
  }
}

}  // namespace warp
