#pragma once

// StageTimer: adds the wall time of its scope to one stage's counter
// (ForwardStats), so each stage is timed the same way in one line.
//
// Thread-compatible: the counter belongs to the thread running the scope.

#include <chrono>

namespace warp::computed {

class StageTimer {
 public:
  explicit StageTimer(double& seconds) : seconds_(seconds) {}
  ~StageTimer() {
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

 private:
  double& seconds_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace warp::computed
