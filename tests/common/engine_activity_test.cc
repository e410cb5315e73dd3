// EngineActivity: the prefault may run unless a prefill pass computes with no
// thread waiting for reads; a thread blocked on a ReadBatch or a landing
// record counts as waiting.

#include "common/store/engine_activity.h"

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "common/store/expert_source.h"
#include "common/store/landing_record.h"
#include "gtest/gtest.h"

namespace warp {
namespace {

constexpr absl::Duration kBrief = absl::Milliseconds(20);
constexpr absl::Duration kLong = absl::Seconds(10);

TEST(EngineActivityTest, APrefillPassHoldsThePrefaultUntilItEnds) {
  EngineActivity activity;
  EXPECT_TRUE(activity.AwaitPrefaultAllowed(kBrief));  // decode or idle
  {
    EngineActivity::Prefill prefill(activity);
    EXPECT_FALSE(activity.AwaitPrefaultAllowed(kBrief));
    EngineActivity::Prefill batch(activity);  // two passes at once: both must end
    EXPECT_FALSE(activity.AwaitPrefaultAllowed(kBrief));
  }
  EXPECT_TRUE(activity.AwaitPrefaultAllowed(kBrief));
}

TEST(EngineActivityTest, APrefillWaitingForReadsLetsThePrefaultRun) {
  EngineActivity activity;
  EngineActivity::Prefill prefill(activity);
  {
    EngineActivity::Waiting waiting(activity);
    EXPECT_TRUE(activity.AwaitPrefaultAllowed(kBrief));
  }
  EXPECT_FALSE(activity.AwaitPrefaultAllowed(kBrief));
}

TEST(EngineActivityTest, AWaiterWakesThePrefaultBlockedByAPrefill) {
  EngineActivity activity;
  EngineActivity::Prefill prefill(activity);
  std::atomic<bool> allowed{false};
  std::thread prefault([&] { allowed = activity.AwaitPrefaultAllowed(kLong); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(allowed);
  {
    EngineActivity::Waiting waiting(activity);
    prefault.join();
  }
  EXPECT_TRUE(allowed);
}

// The process's instance, as the store and the engine use it: a thread blocked
// in ReadBatch::NextArrival or LandingRecord::WaitFor counts as waiting, and
// stops counting once it returns.
TEST(EngineActivityTest, ThreadsBlockedOnRecordsCountAsWaiting) {
  EngineActivity& activity = EngineActivity::Process();
  EngineActivity::Prefill prefill;
  ASSERT_FALSE(activity.AwaitPrefaultAllowed(kBrief));

  auto batch = std::make_shared<ReadBatch>(1);
  std::thread consumer([&] { EXPECT_TRUE(batch->NextArrival().has_value()); });
  EXPECT_TRUE(activity.AwaitPrefaultAllowed(kLong));
  batch->Complete(0, absl::NotFoundError("test"));
  consumer.join();
  EXPECT_FALSE(activity.AwaitPrefaultAllowed(kBrief));

  std::vector<std::byte> bytes(64);
  LandingRecord landing(bytes);
  std::thread computer([&] { EXPECT_EQ(landing.WaitFor(32), 32u); });
  EXPECT_TRUE(activity.AwaitPrefaultAllowed(kLong));
  landing.Landed(32);
  computer.join();
  EXPECT_FALSE(activity.AwaitPrefaultAllowed(kBrief));
}

}  // namespace
}  // namespace warp
