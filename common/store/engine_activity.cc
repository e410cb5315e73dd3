#include "common/store/engine_activity.h"

namespace warp {

EngineActivity& EngineActivity::Process() {
  static EngineActivity* const activity =
      new EngineActivity();  // never destroyed: threads may outlive main
  return *activity;
}

template <int EngineActivity::*kCount>
EngineActivity::Mark<kCount>::Mark(EngineActivity& activity) : activity_(activity) {
  absl::MutexLock lock(&activity_.mu_);
  ++(activity_.*kCount);
}

template <int EngineActivity::*kCount>
EngineActivity::Mark<kCount>::~Mark() {
  absl::MutexLock lock(&activity_.mu_);
  --(activity_.*kCount);
}

template class EngineActivity::Mark<&EngineActivity::waiting_>;
template class EngineActivity::Mark<&EngineActivity::prefills_>;

bool EngineActivity::AwaitPrefaultAllowed(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(
                                  +[](EngineActivity* activity) ABSL_SHARED_LOCKS_REQUIRED(
                                       activity->mu_) { return activity->PrefaultAllowed(); },
                                  this),
                              timeout);
}

}  // namespace warp
