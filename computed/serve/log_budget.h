#pragma once

// LogBudget: at most `per_minute` log lines a minute for one kind of event
// (a refused request, a wrong API key), so that a client cannot flood the log;
// the lines dropped are counted and said with the next one allowed.
//
// Thread-safe.

#include <chrono>
#include <cstdint>
#include <mutex>

namespace warp::computed::serve {

class LogBudget {
 public:
  explicit LogBudget(uint32_t per_minute) : per_minute_(per_minute) {}

  // Whether to log this event; then `*dropped` is how many were not logged
  // since the last line.
  bool Allow(uint64_t* dropped) {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mutex_);
    if (now - window_ >= std::chrono::minutes(1)) {
      window_ = now;
      used_ = 0;
    }
    if (used_ >= per_minute_) {
      ++dropped_;
      return false;
    }
    ++used_;
    *dropped = dropped_;
    dropped_ = 0;
    return true;
  }

 private:
  const uint32_t per_minute_;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point window_{};
  uint32_t used_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace warp::computed::serve
