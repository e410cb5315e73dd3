#pragma once

// LruOrder: least-recently-used eviction. Every access, of any priority,
// makes its key the most recently used; victims go oldest first.
//
// Thread-compatible.

#include <list>

#include "absl/container/flat_hash_map.h"
#include "common/store/eviction_order.h"

namespace warp {

class LruOrder final : public EvictionOrder {
 public:
  void Insert(const ExpertKey& key, Priority priority) override;
  void Touch(const ExpertKey& key, Priority priority) override;
  void Erase(const ExpertKey& key) override;
  void ForEachCandidate(absl::FunctionRef<bool(const ExpertKey&)> visit) const override;
  size_t size() const override { return positions_.size(); }

 private:
  std::list<ExpertKey> order_;  // front: the least recently used
  absl::flat_hash_map<ExpertKey, std::list<ExpertKey>::iterator> positions_;
};

}  // namespace warp
