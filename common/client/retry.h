#pragma once

// The retry rule the expertd clients share: a batch is attempted again, with
// a doubling backoff, while its failure may clear when the daemon comes back
// (UNAVAILABLE, DEADLINE_EXCEEDED); a refusal is final at once.
//
// Thread-safe: pure functions.

#include <chrono>
#include <functional>
#include <string>

#include "absl/status/status.h"

namespace warp {

// True for failures a daemon restart can clear.
bool Retryable(const absl::Status& status);

struct RetryPolicy {
  std::string address;  // for messages: "expertd at ADDRESS ..."
  int max_attempts = 6;
  std::chrono::milliseconds backoff{100};  // before the 2nd attempt; doubled after each
};

// Calls `attempt` until it succeeds, fails for good, or max_attempts pass;
// `before_retry` (if set) runs before each wait. Returns OK, or the final
// failure: "expertd at ADDRESS is unreachable after N attempts: ..." (UNAVAILABLE)
// or "expertd at ADDRESS: ..." with the refusal's code.
absl::Status RunWithRetry(const RetryPolicy& policy, const std::function<absl::Status()>& attempt,
                          const std::function<void()>& before_retry = nullptr);

}  // namespace warp
