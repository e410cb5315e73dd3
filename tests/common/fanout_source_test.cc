// FanoutExpertSource over fake members: what it forwards to whom.

#include "common/client/fanout_source.h"

#include <cstdint>
#include <memory>
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

}  // namespace
}  // namespace warp
