#pragma once

// Status assertions for GoogleTest (the pinned Abseil has no status_matchers.h).

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warp::testing {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

// Matches a Status or StatusOr whose code is `code` and whose message matches
// `message_matcher`, e.g. StatusIs(absl::StatusCode::kNotFound, HasSubstr("x")).
MATCHER_P2(StatusIs, code, message_matcher,
           "has code " + absl::StatusCodeToString(code) + " and a message that " +
               ::testing::DescribeMatcher<std::string>(message_matcher)) {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "status is " << status;
  return status.code() == code &&
         ::testing::ExplainMatchResult(message_matcher, std::string(status.message()),
                                       result_listener);
}

}  // namespace warp::testing

#define WARP_EXPECT_OK(expr) EXPECT_TRUE((expr).ok()) << ::warp::testing::GetStatus(expr)
#define WARP_ASSERT_OK(expr) ASSERT_TRUE((expr).ok()) << ::warp::testing::GetStatus(expr)
