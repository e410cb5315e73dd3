#include "computed/serve/response_store.h"

#include <utility>

namespace warp::computed::serve {

void ResponseStore::Put(const std::string& id, nlohmann::ordered_json conversation) {
  absl::MutexLock lock(&mu_);
  if (conversations_.insert_or_assign(id, std::move(conversation)).second) order_.push_back(id);
  while (order_.size() > capacity_) {
    conversations_.erase(order_.front());
    order_.pop_front();
  }
}

std::optional<nlohmann::ordered_json> ResponseStore::Get(const std::string& id) const {
  absl::MutexLock lock(&mu_);
  const auto it = conversations_.find(id);
  if (it == conversations_.end()) return std::nullopt;
  return it->second;
}

}  // namespace warp::computed::serve
