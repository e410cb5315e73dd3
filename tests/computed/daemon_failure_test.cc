// A daemon dies mid-generation: the run either recovers once the daemon is
// back (with exactly the logits it would have computed) or stops with an error
// naming the daemon — never a token from missing weights.

#include <signal.h>

#include <cstring>

#include "computed/convert/converter.h"
#include "computed/run/session.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/daemon.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp::computed {
namespace {

using ::testing::HasSubstr;
using ::warp::testing::Daemon;
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

  std::unique_ptr<Session> Open(std::vector<std::string> stores) {
    auto session = Session::Open({.model = Model().string(),
                                  .stores = std::move(stores),
                                  .threads = 1,
                                  .max_positions = 32});
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

TEST_F(DaemonFailureTest, DaemonGoneForGoodStopsTheRunNamingIt) {
  std::unique_ptr<Session> remote = Open({Listen()});
  ASSERT_NE(remote, nullptr);
  WARP_ASSERT_OK(remote->Prefill(prompt_));
  daemon_->Stop(SIGKILL);
  EXPECT_THAT(remote->Step(9), StatusIs(absl::StatusCode::kUnavailable,
                                        HasSubstr("expertd at " + Listen() + " is unreachable")));
}

}  // namespace
}  // namespace warp::computed
