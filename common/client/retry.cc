#include "common/client/retry.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace warp {

bool Retryable(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kDeadlineExceeded;
}

absl::Status RunWithRetry(const RetryPolicy& policy, const std::function<absl::Status()>& attempt,
                          const std::function<void()>& before_retry) {
  absl::Status last;
  auto backoff = policy.backoff;
  for (int i = 0; i < policy.max_attempts; ++i) {
    last = attempt();
    if (last.ok()) return last;
    if (!Retryable(last)) break;  // a refusal: retrying cannot help
    if (before_retry) before_retry();
    Logger("computed.client")
        .warn("expertd at {}: {}; retrying in {} ms", policy.address, std::string(last.message()),
              backoff.count());
    std::this_thread::sleep_for(backoff);
    backoff *= 2;
  }
  if (Retryable(last)) {
    return absl::UnavailableError(absl::StrCat("expertd at ", policy.address,
                                               " is unreachable after ", policy.max_attempts,
                                               " attempts: ", last.message()));
  }
  return absl::Status(last.code(),
                      absl::StrCat("expertd at ", policy.address, ": ", last.message()));
}

}  // namespace warp
