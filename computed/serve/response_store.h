#pragma once

// ResponseStore: the conversations of recent Responses API replies, so that a
// request naming `previous_response_id` continues one. Each entry is the
// conversation as Responses items (every input item, then the reply's output
// items); the oldest goes when `capacity` are held. In memory: a restarted
// server holds none, and such an id is refused by name.
//
// Thread-safe.

#include <cstddef>
#include <deque>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"

namespace warp::computed::serve {

class ResponseStore {
 public:
  explicit ResponseStore(size_t capacity) : capacity_(capacity) {}

  void Put(const std::string& id, nlohmann::ordered_json conversation);
  std::optional<nlohmann::ordered_json> Get(const std::string& id) const;
  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, nlohmann::ordered_json> conversations_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> order_ ABSL_GUARDED_BY(mu_);  // oldest first
};

}  // namespace warp::computed::serve
