#pragma once

// ClientSet: the clients of a shared store whose hints ask for one record (a
// read in flight, a foreseen record). Few at once, so kept inline, unordered.
//
// Thread-compatible: its owner's mutex guards it.

#include <algorithm>

#include "absl/container/inlined_vector.h"
#include "common/store/expert_source.h"

namespace warp {

class ClientSet {
 public:
  ClientSet() = default;
  explicit ClientSet(ClientId client) : ids_{client} {}

  void Add(ClientId client) {
    if (!Contains(client)) ids_.push_back(client);
  }
  void Remove(ClientId client) {
    ids_.erase(std::remove(ids_.begin(), ids_.end(), client), ids_.end());
  }
  bool Contains(ClientId client) const {
    return std::find(ids_.begin(), ids_.end(), client) != ids_.end();
  }
  bool empty() const { return ids_.empty(); }

 private:
  absl::InlinedVector<ClientId, 2> ids_;
};

}  // namespace warp
