// FanoutExpertSource over fake members: what it forwards to whom.

#include "common/client/fanout_source.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace warp {
namespace {

using ::testing::ElementsAre;

// Records the cancellations it is told of; fails every read.
class RecordingSource : public ExpertSource {
 public:
  std::shared_ptr<ReadBatch> Read(std::span<const ExpertKey> keys, Priority) override {
    auto batch = std::make_shared<ReadBatch>(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) batch->Complete(i, absl::UnavailableError("fake"));
    return batch;
  }
  void CancelSpeculative(uint32_t through_layer) override {
    absl::MutexLock lock(&mu_);
    cancelled_.push_back(through_layer);
  }
  std::vector<uint32_t> cancelled() {
    absl::MutexLock lock(&mu_);
    return cancelled_;
  }
  // A cache in this process when `local`, holding whole 100-byte records; a
  // daemon's (nullopt) otherwise.
  std::optional<uint64_t> ResizeCache(uint64_t bytes) override {
    if (!local) return std::nullopt;
    asked.push_back(bytes);
    return bytes / 100 * 100;
  }
  bool local = true;
  std::vector<uint64_t> asked;

 private:
  absl::Mutex mu_;
  std::vector<uint32_t> cancelled_ ABSL_GUARDED_BY(mu_);
};

TEST(FanoutExpertSourceTest, CancelSpeculativeIsForwardedToEveryMember) {
  auto a = std::make_unique<RecordingSource>();
  auto b = std::make_unique<RecordingSource>();
  RecordingSource* a_ptr = a.get();
  RecordingSource* b_ptr = b.get();
  std::vector<FanoutExpertSource::Member> members;
  members.push_back({.name = "a", .source = std::move(a), .held = {{1, 0}}});
  members.push_back({.name = "b", .source = std::move(b), .held = {{1, 1}}});
  auto fanout = FanoutExpertSource::Create(std::move(members));
  WARP_ASSERT_OK(fanout);
  (*fanout)->CancelSpeculative(3);
  (*fanout)->CancelSpeculative(4);
  EXPECT_THAT(a_ptr->cancelled(), ElementsAre(3u, 4u));
  EXPECT_THAT(b_ptr->cancelled(), ElementsAre(3u, 4u));
}

// A governor's resize: an equal share to each member; the total of the caches
// in this process (their own rounding included), nullopt with none.
TEST(FanoutExpertSourceTest, ResizeCacheSplitsOverTheMembersWithALocalCache) {
  auto a = std::make_unique<RecordingSource>();
  auto b = std::make_unique<RecordingSource>();
  RecordingSource* a_ptr = a.get();
  RecordingSource* b_ptr = b.get();
  std::vector<FanoutExpertSource::Member> members;
  members.push_back({.name = "a", .source = std::move(a), .held = {{1, 0}}});
  members.push_back({.name = "b", .source = std::move(b), .held = {{1, 1}}});
  auto fanout = FanoutExpertSource::Create(std::move(members));
  WARP_ASSERT_OK(fanout);
  EXPECT_EQ((*fanout)->ResizeCache(1050), 1000u);  // 525 each, 500 each kept
  EXPECT_THAT(a_ptr->asked, ElementsAre(525u));
  EXPECT_THAT(b_ptr->asked, ElementsAre(525u));
  b_ptr->local = false;  // a daemon: keeps its own cache
  EXPECT_EQ((*fanout)->ResizeCache(1000), 500u);
  a_ptr->local = false;
  EXPECT_EQ((*fanout)->ResizeCache(1000), std::nullopt);
}

}  // namespace
}  // namespace warp
