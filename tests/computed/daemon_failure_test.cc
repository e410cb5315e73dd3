// A daemon dies mid-generation: the run either recovers once the daemon is
// back (with exactly the logits it would have computed) or stops with an error
// naming the daemon — never a token from missing weights.

#include <signal.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "common/format/container.h"
#include "common/format/usage_file.h"
#include "computed/convert/converter.h"
#include "computed/run/session.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/daemon.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp::computed {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::warp::testing::CommandResult;
using ::warp::testing::Daemon;
using ::warp::testing::RunBinary;
using ::warp::testing::StatusIs;

class DaemonFailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WARP_ASSERT_OK(ConvertCheckpoint(warp::testing::FixtureDir("qwen3_moe_f32"), Model(), {}));
    auto daemon = Daemon::Start({"--model", Model().string(), "--listen", Listen()});
    WARP_ASSERT_OK(daemon);
    daemon_ = std::move(*daemon);
  }

  std::filesystem::path Model() const { return dir_ / "m.warp"; }
  std::string Listen() const { return "unix:" + (dir_ / "s.sock").string(); }

  // `retry`: how long a store that went away is waited for (the default,
  // 30 s, is not what these tests are about).
  std::unique_ptr<Session> Open(std::vector<std::string> stores,
                                std::chrono::milliseconds retry = std::chrono::seconds(10)) {
    SessionOptions options{.model = Model().string()};
    options.source.stores = std::move(stores);
    options.source.store_retry_deadline = retry;
    options.engine.max_positions = 32;
    options.compute.threads = 1;
    auto session = Session::Open(options);
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? std::move(*session) : nullptr;
  }

  warp::testing::TempDir dir_;
  std::unique_ptr<Daemon> daemon_;
  const std::vector<int32_t> prompt_ = {5, 6, 7, 8};
};

TEST_F(DaemonFailureTest, RestartedDaemonGivesTheSameLogits) {
  std::unique_ptr<Session> embedded = Open({});
  ASSERT_NE(embedded, nullptr);
  WARP_ASSERT_OK(embedded->Prefill(prompt_));
  auto expected = embedded->Step(9);
  WARP_ASSERT_OK(expected);

  std::unique_ptr<Session> remote = Open({Listen()});
  ASSERT_NE(remote, nullptr);
  WARP_ASSERT_OK(remote->Prefill(prompt_));
  daemon_->Stop(SIGKILL);
  auto restarted = Daemon::Start({"--model", Model().string(), "--listen", Listen()});
  WARP_ASSERT_OK(restarted);
  auto step = remote->Step(9);
  WARP_ASSERT_OK(step);
  ASSERT_EQ(step->size(), expected->size());
  EXPECT_EQ(0, std::memcmp(step->data(), expected->data(), step->size() * sizeof(float)));
}

// Killed mid-generation and back 3 s later, on each transport: the step
// waiting for it finishes with the logits it would have had, and within a
// second of the daemon listening again.
TEST_F(DaemonFailureTest, DaemonBackAfterSecondsMidStepGivesTheSameLogits) {
  std::unique_ptr<Session> embedded = Open({});
  ASSERT_NE(embedded, nullptr);
  WARP_ASSERT_OK(embedded->Prefill(prompt_));
  auto expected = embedded->Step(9);
  WARP_ASSERT_OK(expected);

  const std::string fastpath = "fastpath:" + (dir_ / "f.sock").string();
  daemon_->Stop(SIGTERM);
  const std::vector<std::string> args = {"--model", Model().string(), "--listen",
                                         Listen(),  "--listen",       fastpath};
  for (const std::string& store : {Listen(), fastpath}) {
    auto daemon = Daemon::Start(args);
    WARP_ASSERT_OK(daemon);
    std::unique_ptr<Session> remote = Open({store});
    ASSERT_NE(remote, nullptr);
    WARP_ASSERT_OK(remote->Prefill(prompt_));
    (*daemon)->Stop(SIGKILL);
    absl::StatusOr<std::vector<float>> step;
    // Joined on every path: a failed assertion below must not destroy it joinable.
    std::jthread generation([&] { step = remote->Step(9); });
    std::this_thread::sleep_for(std::chrono::seconds(3));
    daemon = Daemon::Start(args);
    WARP_ASSERT_OK(daemon);
    const auto ready = std::chrono::steady_clock::now();
    generation.join();
    const auto took = std::chrono::steady_clock::now() - ready;
    WARP_ASSERT_OK(step) << store;
    ASSERT_EQ(step->size(), expected->size());
    EXPECT_EQ(0, std::memcmp(step->data(), expected->data(), step->size() * sizeof(float)))
        << store;
    EXPECT_LT(took, std::chrono::seconds(1)) << store;
  }
}

// Never a token computed without its records: the step fails, naming the
// daemon and how long it was waited for.
TEST_F(DaemonFailureTest, DaemonGoneForGoodStopsTheRunNamingIt) {
  std::unique_ptr<Session> remote = Open({Listen()}, std::chrono::milliseconds(500));
  ASSERT_NE(remote, nullptr);
  WARP_ASSERT_OK(remote->Prefill(prompt_));
  daemon_->Stop(SIGKILL);
  EXPECT_THAT(remote->Step(9),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("expertd at " + Listen() + " is unreachable after waiting 0.")));
}

// Issue 47: with every expert on two of three daemons (expertd shard --usage
// --replicate-mib), killing a daemon mid-generation costs no token and no
// wait: the step reads or computes its experts from the replicas at once,
// with the logits it would have had.
TEST_F(DaemonFailureTest, ReplicasServeAtOnceWhenADaemonDiesMidGeneration) {
  std::unique_ptr<Session> embedded = Open({});
  ASSERT_NE(embedded, nullptr);
  WARP_ASSERT_OK(embedded->Prefill(prompt_));
  auto expected = embedded->Step(9);
  WARP_ASSERT_OK(expected);

  // Every expert used once: with room enough, each gets a second copy.
  auto model = Container::Open(Model());
  WARP_ASSERT_OK(model);
  UsageTable usage{.fingerprint = (*model)->manifest().fingerprint, .tokens = 1};
  for (const BankEntry& bank : (*model)->manifest().banks) {
    for (uint32_t expert = 0; expert < bank.num_experts; ++expert) {
      usage.entries.push_back({bank.layer, expert, 1});
    }
  }
  WARP_ASSERT_OK(WriteUsageFile(dir_ / "usage.warp", usage));
  std::vector<std::string> shards;
  for (int i = 0; i < 3; ++i) shards.push_back((dir_ / ("r" + std::to_string(i))).string());
  const CommandResult sharded = RunBinary(
      "expertd", "shard --quiet " + Model().string() + " --dirs " + shards[0] + "," + shards[1] +
                     "," + shards[2] + " --usage " + (dir_ / "usage.warp").string() +
                     " --replicate-mib 64");
  ASSERT_EQ(sharded.exit_code, 0) << sharded.output;

  for (ExpertCompute mode : {ExpertCompute::kRecords, ExpertCompute::kDaemons}) {
    SCOPED_TRACE(mode == ExpertCompute::kRecords ? "records" : "compute");
    std::vector<std::unique_ptr<Daemon>> daemons;
    std::vector<std::string> stores;
    for (int i = 0; i < 3; ++i) {
      const std::string listen = "unix:" + (dir_ / ("r" + std::to_string(i) + ".sock")).string();
      auto daemon = Daemon::Start({"--model", shards[i], "--listen", listen});
      WARP_ASSERT_OK(daemon);
      daemons.push_back(std::move(*daemon));
      stores.push_back(listen);
    }
    SessionOptions options{.model = Model().string()};
    options.source.stores = stores;
    options.source.expert_compute = mode;
    options.engine.max_positions = 32;
    options.compute.threads = 1;
    auto remote = Session::Open(options);  // the default wait: 30 s
    WARP_ASSERT_OK(remote);
    WARP_ASSERT_OK((*remote)->Prefill(prompt_));
    daemons[0]->Stop(SIGKILL);
    const auto killed = std::chrono::steady_clock::now();
    auto step = (*remote)->Step(9);
    const auto took = std::chrono::steady_clock::now() - killed;
    WARP_ASSERT_OK(step);
    ASSERT_EQ(step->size(), expected->size());
    EXPECT_EQ(0, std::memcmp(step->data(), expected->data(), step->size() * sizeof(float)));
    EXPECT_LT(took, std::chrono::seconds(1));
    WARP_EXPECT_OK((*remote)->Step(10));  // and on, without it
  }
}

// `computed --store-retry-seconds`: a store not up is waited for that long,
// said once, then named with the seconds waited; nonsense is refused.
TEST_F(DaemonFailureTest, TheCliWaitsForAStoreAsLongAsToldAndSaysSoOnce) {
  const std::string absent = "unix:" + (dir_ / "absent.sock").string();
  const std::string run = "run --ids " + Model().string() + " 5,6,7 -n 2 --stores " + absent;
  const CommandResult waited = RunBinary("computed", run + " --store-retry-seconds 0.5", 60);
  EXPECT_NE(waited.exit_code, 0) << waited.output;
  EXPECT_THAT(waited.output, HasSubstr("waiting for expertd at " + absent + " (up to 0.5 s)"));
  EXPECT_EQ(waited.output.find("waiting for"), waited.output.rfind("waiting for")) << "once";
  EXPECT_THAT(waited.output,
              HasSubstr("expertd at " + absent + " is unreachable after waiting 0."));
  for (const char* bad : {"-1", "nan", "1e9"}) {
    const CommandResult refused =
        RunBinary("computed", run + " --store-retry-seconds " + std::string(bad), 60);
    EXPECT_NE(refused.exit_code, 0) << bad;
    EXPECT_THAT(refused.output, HasSubstr("--store-retry-seconds")) << refused.output;
    EXPECT_THAT(refused.output, Not(HasSubstr("waiting for"))) << bad;
  }
}

}  // namespace
}  // namespace warp::computed
