#include "common/store/engine_activity.h"

namespace warp {

EngineActivity& EngineActivity::Process() {
  static EngineActivity* const activity =
      new EngineActivity();  // never destroyed: threads may outlive main
  return *activity;
}

EngineActivity::Waiting::Waiting(EngineActivity& activity) : activity_(activity) {
  absl::MutexLock lock(&activity_.mu_);
  ++activity_.waiting_;
}

EngineActivity::Waiting::~Waiting() {
  absl::MutexLock lock(&activity_.mu_);
  --activity_.waiting_;
}

EngineActivity::Prefill::Prefill(EngineActivity& activity) : activity_(activity) {
  absl::MutexLock lock(&activity_.mu_);
  ++activity_.prefills_;
}

EngineActivity::Prefill::~Prefill() {
  absl::MutexLock lock(&activity_.mu_);
  --activity_.prefills_;
}

bool EngineActivity::AwaitPrefaultAllowed(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(
                                  +[](EngineActivity* activity) ABSL_SHARED_LOCKS_REQUIRED(
                                       activity->mu_) { return activity->PrefaultAllowed(); },
                                  this),
                              timeout);
}

}  // namespace warp
