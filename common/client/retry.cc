#include "common/client/retry.h"

#include <algorithm>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/logging.h"

namespace warp {
namespace {

std::string Seconds(std::chrono::steady_clock::duration duration) {
  return absl::StrFormat("%.1f s", std::chrono::duration<double>(duration).count());
}

}  // namespace

bool Retryable(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kDeadlineExceeded;
}

std::chrono::milliseconds DefaultRetryDeadline(const std::string& address) {
  const bool network = absl::StartsWith(address, "tcp:") || absl::StartsWith(address, "tls:");
  return network ? kNetworkRetryDeadline : kLocalRetryDeadline;
}

absl::Status RetryWindow::Run(const std::function<absl::Status()>& attempt,
                              const std::function<void()>& before_retry,
                              const std::function<bool(const absl::Status&)>& retryable) {
  std::chrono::milliseconds backoff = policy_.first_backoff;
  while (true) {
    const absl::Status status = attempt();
    if (status.ok()) {
      Succeeded();
      return status;
    }
    if (!retryable(status)) {
      return absl::Status(status.code(),
                          absl::StrCat("expertd at ", policy_.address, ": ", status.message()));
    }
    const Clock::duration waited = Clock::now() - Failed(status);
    if (waited >= policy_.deadline) {
      return absl::UnavailableError(
          absl::StrCat("expertd at ", policy_.address, " is unreachable after waiting ",
                       Seconds(waited), " for it (--store-retry-seconds): ", status.message()));
    }
    if (before_retry) before_retry();
    // Never past the deadline, and always followed by an attempt: the last
    // one is made at the deadline itself.
    const auto pause =
        std::min(backoff, std::chrono::ceil<std::chrono::milliseconds>(policy_.deadline - waited));
    Logger("computed.client")
        .debug("expertd at {}: {}; next attempt in {} ms", policy_.address,
               std::string(status.message()), pause.count());
    if (policy_.wait) {
      policy_.wait(pause);
    } else {
      std::this_thread::sleep_for(pause);
    }
    backoff = std::min(backoff * 2, policy_.max_backoff);
  }
}

RetryWindow::Clock::time_point RetryWindow::Failed(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  if (!down_since_) {
    down_since_ = Clock::now();
    if (policy_.deadline.count() > 0) {
      Logger("computed.client")
          .warn("waiting for expertd at {} (up to {}): {}", policy_.address,
                Seconds(policy_.deadline), std::string(status.message()));
    }
  }
  return *down_since_;
}

void RetryWindow::Succeeded() {
  absl::MutexLock lock(&mu_);
  if (!down_since_) return;
  Logger("computed.client")
      .info("expertd at {} is back after {}", policy_.address,
            Seconds(Clock::now() - *down_since_));
  down_since_.reset();
}

}  // namespace warp
