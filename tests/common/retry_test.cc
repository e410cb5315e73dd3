#include "common/client/retry.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace warp {
namespace {

using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

const RetryPolicy kPolicy{.address = "unix:/run/x.sock",
                          .max_attempts = 3,
                          .backoff = std::chrono::milliseconds(1)};

TEST(RetryTest, SuccessAfterTransientFailuresReturnsOk) {
  int calls = 0;
  int waits = 0;
  absl::Status status = RunWithRetry(
      kPolicy,
      [&] { return ++calls < 3 ? absl::UnavailableError("down") : absl::OkStatus(); },
      [&] { ++waits; });
  WARP_EXPECT_OK(status);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(waits, 2);
}

TEST(RetryTest, GoneForGoodNamesTheAddressAndTheAttempts) {
  int calls = 0;
  absl::Status status = RunWithRetry(kPolicy, [&] {
    ++calls;
    return absl::DeadlineExceededError("timeout");
  });
  EXPECT_EQ(calls, 3);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kUnavailable,
                               HasSubstr("expertd at unix:/run/x.sock is unreachable after 3 "
                                         "attempts: timeout")));
}

TEST(RetryTest, RefusalIsFinalAtOnceAndKeepsItsCode) {
  int calls = 0;
  absl::Status status = RunWithRetry(kPolicy, [&] {
    ++calls;
    return absl::FailedPreconditionError("fingerprint differs");
  });
  EXPECT_EQ(calls, 1);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kFailedPrecondition,
                               HasSubstr("expertd at unix:/run/x.sock: fingerprint differs")));
}

}  // namespace
}  // namespace warp
