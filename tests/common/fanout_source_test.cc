// FanoutExpertSource over fake members: what it forwards to whom, and how a
// replicated key finds a holder that serves it.

#include "common/client/fanout_source.h"

#include <cstdint>
#include <future>
#include <string>
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
using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

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

// Serves every key (a record naming the source) or fails it with `failure`;
// records each call's keys and whether it was ReadOnce. Its Compute returns,
// for each expert, one row per row it takes holding the source's id.
class ReplicaSource : public ExpertSource, public ExpertComputer {
 public:
  explicit ReplicaSource(std::byte id) : id_(id) {}

  std::shared_ptr<ReadBatch> Read(std::span<const ExpertKey> keys, Priority) override {
    return Serve(keys, false);
  }
  std::shared_ptr<ReadBatch> ReadOnce(std::span<const ExpertKey> keys, Priority) override {
    return Serve(keys, true);
  }
  std::future<absl::StatusOr<ComputedExperts>> Compute(const ComputePass& pass) override {
    std::promise<absl::StatusOr<ComputedExperts>> done;
    {
      absl::MutexLock lock(&mu_);
      computes_.push_back({pass.experts.size(), pass.once});
    }
    if (!failure.ok()) {
      done.set_value(failure);
    } else {
      ComputedExperts computed;
      for (const ExpertRowsTask& task : pass.experts) {
        computed.outputs.emplace_back(task.rows.size() * pass.width,
                                      static_cast<float>(id_));
        computed.served.push_back(Served::kDisk);
      }
      done.set_value(std::move(computed));
    }
    return done.get_future();
  }

  struct Call {
    size_t size = 0;
    bool once = false;
    friend bool operator==(const Call&, const Call&) = default;
  };
  std::vector<Call> calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  std::vector<Call> computes() {
    absl::MutexLock lock(&mu_);
    return computes_;
  }

  absl::Status failure;  // set before use

 private:
  std::shared_ptr<ReadBatch> Serve(std::span<const ExpertKey> keys, bool once) {
    {
      absl::MutexLock lock(&mu_);
      calls_.push_back({keys.size(), once});
    }
    auto batch = std::make_shared<ReadBatch>(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!failure.ok()) {
        batch->Complete(i, failure);
        continue;
      }
      batch->Complete(i, ExpertRecord{.key = keys[i],
                                      .data = std::span<const std::byte>(&id_, 1),
                                      .record_bytes = 1});
    }
    return batch;
  }

  const std::byte id_;
  absl::Mutex mu_;
  std::vector<Call> calls_ ABSL_GUARDED_BY(mu_);
  std::vector<Call> computes_ ABSL_GUARDED_BY(mu_);
};

// Two members holding expert 1 of layer 1 both (its home, HomeIndex, is `a`);
// `a` alone holds expert 0.
class ReplicaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto a = std::make_unique<ReplicaSource>(std::byte{'a'});
    auto b = std::make_unique<ReplicaSource>(std::byte{'b'});
    a_ = a.get();
    b_ = b.get();
    std::vector<FanoutExpertSource::Member> members;
    members.push_back(
        {.name = "a", .source = std::move(a), .held = {{1, 0}, {1, 1}}, .computer = a_});
    members.push_back({.name = "b", .source = std::move(b), .held = {{1, 1}}, .computer = b_});
    auto fanout = FanoutExpertSource::Create(std::move(members));
    WARP_ASSERT_OK(fanout);
    fanout_ = std::move(*fanout);
  }

  // Who served each of `keys`: the byte of each record, or '!' for an error.
  std::string ServedBy(std::vector<ExpertKey> keys) {
    std::vector<absl::StatusOr<ExpertRecord>> records =
        fanout_->Read(keys, Priority::kDemand)->WaitAll();
    std::string by;
    for (const auto& record : records) {
      by += record.ok() ? static_cast<char>(record->bytes()[0]) : '!';
    }
    return by;
  }

  ReplicaSource* a_ = nullptr;
  ReplicaSource* b_ = nullptr;
  std::unique_ptr<FanoutExpertSource> fanout_;
};

TEST_F(ReplicaTest, ReplicatedKeysAreAskedOnceAndSpreadOverTheirHolders) {
  // Two copies of the replicated key in one batch: one to each holder, without
  // waiting; the key only `a` holds is waited for.
  EXPECT_EQ(ServedBy({{1, 1}, {1, 1}, {1, 0}}), "aba");
  EXPECT_THAT(a_->calls(), ElementsAre(ReplicaSource::Call{1, false}, ReplicaSource::Call{1, true}));
  EXPECT_THAT(b_->calls(), ElementsAre(ReplicaSource::Call{1, true}));
  EXPECT_EQ(fanout_->Counters().at("fanout.failovers"), 0u);
}

TEST_F(ReplicaTest, AFailedHolderIsRoutedAroundAtOnceAndPassedOverAfter) {
  a_->failure = absl::UnavailableError("expertd at a: connection refused");
  EXPECT_EQ(ServedBy({{1, 1}}), "b");
  EXPECT_THAT(a_->calls(), ElementsAre(ReplicaSource::Call{1, true}));
  EXPECT_EQ(fanout_->Counters().at("fanout.failovers"), 1u);
  // `a` is down: the replicated key goes to `b` first; `a`'s own key waits on `a`.
  EXPECT_EQ(ServedBy({{1, 1}, {1, 1}}), "bb");
  EXPECT_THAT(a_->calls(), ElementsAre(ReplicaSource::Call{1, true}));
  EXPECT_EQ(ServedBy({{1, 0}}), "!");
  EXPECT_EQ(fanout_->Read(std::vector<ExpertKey>{{1, 0}}, Priority::kDemand)->WaitAll()[0].status(),
            a_->failure);
  // Both failing: the last holder's error.
  b_->failure = absl::UnavailableError("expertd at b: connection refused");
  auto both = fanout_->Read(std::vector<ExpertKey>{{1, 1}}, Priority::kDemand)->WaitAll();
  EXPECT_THAT(both[0], StatusIs(absl::StatusCode::kUnavailable, HasSubstr("expertd at")));
}

TEST_F(ReplicaTest, ACorruptCopyIsReadFromTheOtherHolder) {
  a_->failure = absl::DataLossError("expert 1 of layer 1: checksum mismatch");
  b_->failure = absl::DataLossError("expert 1 of layer 1: checksum mismatch");
  auto both = fanout_->Read(std::vector<ExpertKey>{{1, 1}}, Priority::kDemand)->WaitAll();
  EXPECT_THAT(both[0], StatusIs(absl::StatusCode::kDataLoss, HasSubstr("checksum mismatch")));
  EXPECT_EQ(fanout_->Counters().at("fanout.failovers"), 1u);
  b_->failure = absl::OkStatus();
  // A corrupt copy does not mark `a` down: it is still asked, and b serves.
  EXPECT_EQ(ServedBy({{1, 1}, {1, 1}}), "bb");
  // A refusal would be the same on every holder: not sent on.
  a_->failure = absl::InvalidArgumentError("no such expert");
  b_->failure = absl::OkStatus();
  const size_t b_calls = b_->calls().size();
  EXPECT_EQ(ServedBy({{1, 1}}), "!");
  EXPECT_EQ(b_->calls().size(), b_calls);
}

TEST_F(ReplicaTest, AComputeAFailedHolderLeavesGoesToTheReplica) {
  const std::vector<float> rows = {1, 2, 3, 4};  // 2 rows of width 2
  const std::vector<uint32_t> both_rows = {0, 1};
  const std::vector<ExpertRowsTask> tasks = {{.expert = 0, .rows = both_rows},
                                             {.expert = 1, .rows = both_rows}};
  const ComputePass pass{.layer = 1, .width = 2, .rows = rows, .experts = tasks};
  a_->failure = absl::UnavailableError("expertd at a: connection refused");
  absl::StatusOr<ComputedExperts> failed = fanout_->Compute(pass).get();
  // Expert 0 has no other holder: waited for (here: failed) on `a`.
  EXPECT_THAT(failed, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("expertd at a")));
  a_->failure = absl::OkStatus();
  b_->failure = absl::UnavailableError("expertd at b: connection refused");
  absl::StatusOr<ComputedExperts> computed = fanout_->Compute(pass).get();
  WARP_ASSERT_OK(computed);
  ASSERT_EQ(computed->outputs.size(), 2u);
  EXPECT_THAT(computed->outputs[0], ElementsAre('a', 'a', 'a', 'a'));
  EXPECT_THAT(computed->outputs[1], ElementsAre('a', 'a', 'a', 'a'));
  // b computed expert 1 in the first pass (a had expert 0 in flight), was
  // asked it again in the second (a being down) and failed; then a computed it.
  EXPECT_THAT(b_->computes(),
              ElementsAre(ReplicaSource::Call{1, true}, ReplicaSource::Call{1, true}));
}

// Several members may hold a key (replicas); one member listing it twice is
// a mistake in its list, refused by name.
TEST(FanoutExpertSourceTest, AMemberListingAKeyTwiceIsRefused) {
  std::vector<FanoutExpertSource::Member> members;
  members.push_back({.name = "a",
                     .source = std::make_unique<ReplicaSource>(std::byte{'a'}),
                     .held = {{1, 0}, {1, 0}}});
  EXPECT_THAT(FanoutExpertSource::Create(std::move(members)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("a lists expert 0 of layer 1 twice")));
}

// Idle holders split the replicated experts: each goes to its home holder
// (31 x layer + expert, modulo the holders), read after read.
TEST(FanoutExpertSourceTest, IdleHoldersServeEachReplicatedExpertFromItsHome) {
  auto a = std::make_unique<ReplicaSource>(std::byte{'a'});
  auto b = std::make_unique<ReplicaSource>(std::byte{'b'});
  std::vector<FanoutExpertSource::Member> members;
  members.push_back({.name = "a", .source = std::move(a), .held = {{1, 0}, {1, 1}}});
  members.push_back({.name = "b", .source = std::move(b), .held = {{1, 0}, {1, 1}}});
  auto fanout = FanoutExpertSource::Create(std::move(members));
  WARP_ASSERT_OK(fanout);
  EXPECT_EQ(HomeIndex({1, 0}, 2), 1u);
  EXPECT_EQ(HomeIndex({1, 1}, 2), 0u);
  for (int round = 0; round < 3; ++round) {
    for (uint32_t expert : {0u, 1u}) {
      auto records =
          (*fanout)->Read(std::vector<ExpertKey>{{1, expert}}, Priority::kDemand)->WaitAll();
      WARP_ASSERT_OK(records[0]);
      EXPECT_EQ(static_cast<char>(records[0]->bytes()[0]), expert == 0 ? 'b' : 'a');
    }
  }
}

}  // namespace
}  // namespace warp
