#include "expertd/stall_watch.h"

#include <algorithm>

#include "common/logging.h"

namespace warp::expertd {

StallWatch::StallWatch(std::chrono::milliseconds timeout)
    : timeout_(timeout), watcher_([this] { Watch(); }) {}

StallWatch::~StallWatch() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  watcher_.join();
}

StallWatch::Tracked::Tracked(StallWatch& watch, grpc::ServerContext* context)
    : watch_(watch), context_(context) {
  absl::MutexLock lock(&watch_.mu_);
  watch_.calls_[context_] = Clock::time_point{};
}

StallWatch::Tracked::~Tracked() {
  absl::MutexLock lock(&watch_.mu_);
  watch_.calls_.erase(context_);
}

void StallWatch::Tracked::WriteStarted() {
  absl::MutexLock lock(&watch_.mu_);
  watch_.calls_[context_] = Clock::now();
}

void StallWatch::Tracked::WriteDone() {
  absl::MutexLock lock(&watch_.mu_);
  watch_.calls_[context_] = Clock::time_point{};
}

uint64_t StallWatch::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

void StallWatch::Watch() {
  // Checked a few times per timeout: a stall ends between 1x and 1.25x of it.
  const auto period = std::max(std::chrono::milliseconds(10), timeout_ / 4);
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&stop_), absl::FromChrono(period))) {
    const Clock::time_point now = Clock::now();
    for (auto& [context, started] : calls_) {
      if (started == Clock::time_point{} || now - started < timeout_) continue;
      // TryCancel makes the pending Write return false; the call then ends.
      context->TryCancel();
      started = Clock::time_point{};
      ++cancelled_;
      Logger("expertd").warn("cancelled a Read from {}: it took no reply bytes for {} ms",
                             context->peer(), timeout_.count());
    }
  }
}

}  // namespace warp::expertd
