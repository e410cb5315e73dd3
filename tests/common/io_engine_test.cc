// IoEngine: each thread runs its start hook before its first read; queued
// reads run by priority.

#include "common/store/io_engine.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace warp {
namespace {

TEST(IoEngineTest, EveryThreadRunsItsStartHookBeforeItsFirstRead) {
  absl::Mutex mu;
  std::vector<std::thread::id> started;  // threads whose hook ran
  std::atomic<int> runs_before_start{0};
  std::atomic<int> runs{0};
  {
    IoEngine engine(
        3,
        [&](const ExpertKey&, Priority) {
          absl::MutexLock lock(&mu);
          if (std::find(started.begin(), started.end(), std::this_thread::get_id()) ==
              started.end()) {
            ++runs_before_start;
          }
          ++runs;
        },
        [](const ExpertKey&, Priority) {},
        [&] {
          absl::MutexLock lock(&mu);
          started.push_back(std::this_thread::get_id());
        });
    for (uint32_t expert = 0; expert < 64; ++expert) engine.Submit({1, expert}, Priority::kDemand);
    while (runs < 64) std::this_thread::yield();
  }
  EXPECT_EQ(runs_before_start, 0);
  EXPECT_EQ(started.size(), 3u) << "each thread's hook runs once, at its start";
}

TEST(IoEngineTest, QueuedDemandReadsRunBeforeQueuedGuesses) {
  absl::Notification release;
  absl::Notification first_running;
  absl::Mutex mu;
  std::vector<Priority> order;
  IoEngine engine(
      1,
      [&](const ExpertKey& key, Priority priority) {
        if (key.expert == 0) {
          first_running.Notify();
          release.WaitForNotification();
          return;
        }
        absl::MutexLock lock(&mu);
        order.push_back(priority);
      },
      [](const ExpertKey&, Priority) {});
  engine.Submit({1, 0}, Priority::kDemand);  // holds the one thread
  first_running.WaitForNotification();
  engine.Submit({1, 1}, Priority::kLookahead);
  engine.Submit({1, 2}, Priority::kCertain);
  engine.Submit({1, 3}, Priority::kDemand);
  release.Notify();
  absl::MutexLock lock(&mu);
  mu.Await(absl::Condition(
      +[](std::vector<Priority>* seen) { return seen->size() == 3; }, &order));
  EXPECT_EQ(order,
            (std::vector<Priority>{Priority::kDemand, Priority::kCertain, Priority::kLookahead}));
}

}  // namespace
}  // namespace warp
