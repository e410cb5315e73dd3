// --stores addresses, checked before anything connects (the probe of issue
// 44: plain tcp: to a LAN address talked in the clear, without a token).

#include <string>

#include "computed/run/sources.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace warp::computed {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

TEST(StoreAddressTest, PlainTcpIsLoopbackOnlyAndEveryPartIsThere) {
  for (const char* address : {"tcp:127.0.0.1:7070", "tcp:[::1]:7070", "tls:10.0.0.2:7070",
                              "unix:/run/warp.sock", "fastpath:/run/warp.fast"}) {
    WARP_EXPECT_OK(CheckStoreAddress(address));
  }
  EXPECT_THAT(CheckStoreAddress("tcp:10.0.0.2:7070"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("--stores tcp:10.0.0.2:7070: plain TCP beyond loopback"),
                             HasSubstr("use tls:HOST:PORT"))));
  EXPECT_THAT(CheckStoreAddress("tcp:"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--stores tcp:: expected tcp:HOST:PORT")));
  EXPECT_THAT(CheckStoreAddress("tls:host"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected tls:HOST:PORT")));
  EXPECT_THAT(CheckStoreAddress("http://x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected unix:PATH")));
  EXPECT_THAT(CheckStoreAddress("unix:"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected unix:PATH")));
}

}  // namespace
}  // namespace warp::computed
