#pragma once

// The waiting rule the expertd clients share. A failure that a daemon coming
// back can clear (UNAVAILABLE, DEADLINE_EXCEEDED) is attempted again, with a
// backoff doubling from 50 ms to at most 500 ms, until the daemon has been
// unreachable for the stated deadline; a refusal is final at once. The
// deadline is counted from the first failure of an outage, for every batch
// of the client alike: once it has passed, later batches fail after one
// attempt, until an attempt succeeds again.
//
// Thread-safe: one RetryWindow per client, shared by its reader threads.

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace warp {

// True for failures a daemon restart can clear.
bool Retryable(const absl::Status& status);

// How long a client waits for a daemon that went away, by default: 30 s on
// this machine (unix:, fastpath:): systemd restarts expertd 2 s after a crash
// (RestartSec) and it listens within a few seconds of that even with a large
// container, so 30 s covers a restart with room for a slow disk but not a
// daemon that will not come back. 60 s over the network (tcp:, tls:): the
// same restart, plus what the path itself may take to heal (a link or switch
// port flapping, a route or ARP entry renewed: tens of seconds); longer than
// that is a machine down, which the user should hear about rather than wait.
inline constexpr std::chrono::seconds kLocalRetryDeadline{30};
inline constexpr std::chrono::seconds kNetworkRetryDeadline{60};
std::chrono::milliseconds DefaultRetryDeadline(const std::string& address);

struct RetryPolicy {
  std::string address;  // for messages: "expertd at ADDRESS ..."
  // How long a daemon may stay unreachable; 0: one attempt, no waiting.
  std::chrono::milliseconds deadline{kLocalRetryDeadline};
  std::chrono::milliseconds first_backoff{50};
  // The longest wait between attempts: a daemon that comes back is used
  // within about this long (attempts on a refused connection cost nothing).
  std::chrono::milliseconds max_backoff{500};
  // Waits between attempts (null: sleeps). The gRPC client waits for its
  // channel to connect instead, so it returns as soon as the daemon is back.
  std::function<void(std::chrono::milliseconds)> wait;
};

class RetryWindow {
 public:
  explicit RetryWindow(RetryPolicy policy) : policy_(std::move(policy)) {}

  // Calls `attempt` until it succeeds, fails for good (`retryable` says no),
  // or the daemon has been unreachable for the deadline; `before_retry` (if
  // set) runs before each wait. The first failure of an outage is logged once
  // at info ("waiting for expertd at ADDRESS ..."), each later one at debug.
  // Returns OK, or the final failure: "expertd at ADDRESS is unreachable
  // after waiting N s for it (--store-retry-seconds): ..." (UNAVAILABLE), or
  // "expertd at ADDRESS: ..." with a refusal's code.
  absl::Status Run(const std::function<absl::Status()>& attempt,
                   const std::function<void()>& before_retry = nullptr,
                   const std::function<bool(const absl::Status&)>& retryable = Retryable);

  const RetryPolicy& policy() const { return policy_; }

 private:
  using Clock = std::chrono::steady_clock;
  // Notes a retryable failure; returns when the outage began.
  Clock::time_point Failed(const absl::Status& status);
  void Succeeded();

  const RetryPolicy policy_;
  absl::Mutex mu_;
  // Set from the first failure of an outage until an attempt succeeds.
  std::optional<Clock::time_point> down_since_ ABSL_GUARDED_BY(mu_);
};

}  // namespace warp
