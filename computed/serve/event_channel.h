#pragma once

// EventChannel: what the engine thread produces for one HTTP response (SSE
// events, or the final body), handed to the connection's thread, which
// writes it and sends keep-alives while it waits.
//
// Thread-safe: one producer (the engine thread), one consumer.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

namespace warp::computed::serve {

class EventChannel {
 public:
  void Push(std::string event) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      events_.push_back(std::move(event));
    }
    ready_.notify_one();
  }
  // No more events after those pushed.
  void Close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    ready_.notify_one();
  }

  enum class Wait { kEvent, kTimeout, kClosed };
  // The next event, or kTimeout after `timeout` without one, or kClosed once
  // every event was taken.
  Wait Pop(std::chrono::milliseconds timeout, std::string* event) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!ready_.wait_for(lock, timeout, [this] { return closed_ || !events_.empty(); })) {
      return Wait::kTimeout;
    }
    if (events_.empty()) return Wait::kClosed;
    *event = std::move(events_.front());
    events_.pop_front();
    return Wait::kEvent;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::string> events_;  // guarded by mutex_
  bool closed_ = false;             // guarded by mutex_
};

}  // namespace warp::computed::serve
