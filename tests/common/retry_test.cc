#include "common/client/retry.h"

#include <sstream>
#include <thread>

#include "common/logging.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spdlog/sinks/ostream_sink.h"
#include "tests/testing/status_matchers.h"

namespace warp {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::warp::testing::StatusIs;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

RetryPolicy Policy(milliseconds deadline) {
  return {.address = "unix:/run/x.sock",
          .deadline = deadline,
          .first_backoff = milliseconds(1),
          .max_backoff = milliseconds(4)};
}

// What the client logger writes while it lives (info and above).
class CapturedLog {
 public:
  CapturedLog() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(text_)) {
    Logger("computed.client").sinks().push_back(sink_);
  }
  ~CapturedLog() {
    auto& sinks = Logger("computed.client").sinks();
    sinks.erase(std::find(sinks.begin(), sinks.end(), sink_));
  }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(RetryTest, SuccessAfterTransientFailuresReturnsOk) {
  RetryWindow window(Policy(milliseconds(5000)));
  int calls = 0;
  int waits = 0;
  absl::Status status =
      window.Run([&] { return ++calls < 3 ? absl::UnavailableError("down") : absl::OkStatus(); },
                 [&] { ++waits; });
  WARP_EXPECT_OK(status);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(waits, 2);
}

TEST(RetryTest, TheDeadlinePassingNamesTheAddressAndTheSecondsWaited) {
  RetryWindow window(Policy(milliseconds(300)));
  int calls = 0;
  const auto start = Clock::now();
  absl::Status status = window.Run([&] {
    ++calls;
    return absl::DeadlineExceededError("timeout");
  });
  const auto took = Clock::now() - start;
  EXPECT_GE(took, milliseconds(300));
  EXPECT_LT(took, milliseconds(1000));
  EXPECT_GT(calls, 10);  // every few ms: the backoff is capped
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kUnavailable,
                               HasSubstr("expertd at unix:/run/x.sock is unreachable after "
                                         "waiting 0.3 s for it (--store-retry-seconds): timeout")));
}

TEST(RetryTest, EveryWaitIsFollowedByAnAttemptTheLastAtTheDeadline) {
  // The old rule warned "retrying in 1600 ms" and then gave up without that retry.
  RetryPolicy policy = Policy(milliseconds(100));
  policy.first_backoff = milliseconds(40);
  policy.max_backoff = milliseconds(1000);
  RetryWindow window(policy);
  int calls = 0;
  int waits = 0;
  Clock::time_point last_attempt;
  const auto start = Clock::now();
  absl::Status status = window.Run(
      [&] {
        ++calls;
        last_attempt = Clock::now();
        return absl::UnavailableError("down");
      },
      [&] { ++waits; });
  EXPECT_EQ(calls, waits + 1);
  EXPECT_EQ(calls, 3);  // at 0, 40 and 100 ms (the 80 ms wait cut to the deadline)
  EXPECT_GE(last_attempt - start, milliseconds(100));
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("down")));
}

TEST(RetryTest, BackoffIsCappedSoADaemonThatIsBackIsUsedSoon) {
  RetryPolicy policy = Policy(milliseconds(3000));
  policy.first_backoff = milliseconds(50);
  policy.max_backoff = milliseconds(200);
  std::vector<milliseconds> pauses;
  policy.wait = [&](milliseconds pause) { pauses.push_back(pause); };
  RetryWindow window(policy);
  int calls = 0;
  WARP_EXPECT_OK(
      window.Run([&] { return ++calls < 8 ? absl::UnavailableError("down") : absl::OkStatus(); }));
  EXPECT_THAT(pauses, ::testing::ElementsAre(milliseconds(50), milliseconds(100), milliseconds(200),
                                             milliseconds(200), milliseconds(200),
                                             milliseconds(200), milliseconds(200)));
}

TEST(RetryTest, RefusalIsFinalAtOnceAndKeepsItsCode) {
  RetryWindow window(Policy(milliseconds(5000)));
  int calls = 0;
  absl::Status status = window.Run([&] {
    ++calls;
    return absl::FailedPreconditionError("fingerprint differs");
  });
  EXPECT_EQ(calls, 1);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kFailedPrecondition,
                               HasSubstr("expertd at unix:/run/x.sock: fingerprint differs")));
}

TEST(RetryTest, WaitingIsSaidOnceAnOutageForEveryBatchAndTheReturnToo) {
  CapturedLog log;
  RetryWindow window(Policy(milliseconds(5000)));
  std::atomic<bool> up{false};
  auto attempt = [&] {
    return up ? absl::OkStatus() : absl::UnavailableError("Connection refused");
  };
  std::vector<std::thread> batches;
  for (int i = 0; i < 4; ++i) {
    batches.emplace_back([&] { WARP_EXPECT_OK(window.Run(attempt)); });
  }
  std::this_thread::sleep_for(milliseconds(50));
  up = true;
  for (std::thread& batch : batches) batch.join();
  const std::string text = log.text();
  EXPECT_EQ(
      Count(text, "waiting for expertd at unix:/run/x.sock (up to 5.0 s): Connection refused"), 1)
      << text;
  EXPECT_EQ(Count(text, "expertd at unix:/run/x.sock is back after"), 1) << text;
  EXPECT_THAT(text, Not(HasSubstr("next attempt")));  // debug only
}

TEST(RetryTest, OnceTheDeadlineHasPassedLaterBatchesFailAfterOneAttempt) {
  RetryWindow window(Policy(milliseconds(50)));
  EXPECT_THAT(window.Run([] { return absl::UnavailableError("down"); }),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("down")));
  int calls = 0;
  const auto start = Clock::now();
  EXPECT_THAT(window.Run([&] {
    ++calls;
    return absl::UnavailableError("down");
  }),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("is unreachable after waiting")));
  EXPECT_EQ(calls, 1);
  EXPECT_LT(Clock::now() - start, milliseconds(40));
  // Back: the window opens again for the next outage.
  WARP_EXPECT_OK(window.Run([] { return absl::OkStatus(); }));
  calls = 0;
  WARP_EXPECT_OK(
      window.Run([&] { return ++calls < 3 ? absl::UnavailableError("down") : absl::OkStatus(); }));
  EXPECT_EQ(calls, 3);
}

TEST(RetryTest, DefaultDeadlinesAreLongerOverTheNetwork) {
  EXPECT_EQ(DefaultRetryDeadline("unix:/run/warp/a.sock"), milliseconds(30'000));
  EXPECT_EQ(DefaultRetryDeadline("fastpath:/run/warp/a.fp"), milliseconds(30'000));
  EXPECT_EQ(DefaultRetryDeadline("tcp:127.0.0.1:7070"), milliseconds(60'000));
  EXPECT_EQ(DefaultRetryDeadline("tls:10.0.0.21:7071"), milliseconds(60'000));
}

}  // namespace
}  // namespace warp
