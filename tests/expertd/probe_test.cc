// A daemon measures its disk at start and states it in Describe; `expertd
// probe` measures directories for `expertd shard --weights`.

#include <filesystem>
#include <string>

#include "common/client/grpc_source.h"
#include "expertd/probe.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/daemon.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tiny_container.h"

namespace warp::expertd {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

class ProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WARP_ASSERT_OK(warp::testing::WriteTinyContainer(model_, {.num_experts = 64}));
  }

  warp::testing::TempDir dir_;
  fs::path model_ = dir_ / "m.warp";
};

TEST_F(ProbeTest, DescribeStatesTheDiskMeasuredAtStart) {
  auto daemon = warp::testing::Daemon::Start(
      {"--model", model_.string(), "--listen", "unix:" + (dir_ / "d").string()});
  WARP_ASSERT_OK(daemon);
  auto client = GrpcExpertSource::Connect({.address = (*daemon)->addresses().at(0)});
  WARP_ASSERT_OK(client);
  EXPECT_GT((*client)->description().disk_read_bytes_per_second(), 0u);
}

TEST_F(ProbeTest, ADirectoryIsMeasuredOverAScratchFileRemovedAfter) {
  auto probe = ProbeDirectory(model_);  // a container's banks are not what is read
  WARP_ASSERT_OK(probe);
  EXPECT_EQ(probe->bytes, uint64_t{256} << 20);
  EXPECT_GT(probe->bytes_per_second(), 0);
  const fs::path empty = dir_ / "empty";
  fs::create_directories(empty);
  WARP_ASSERT_OK(ProbeDirectory(empty));
  EXPECT_TRUE(fs::is_empty(empty));  // the scratch file is gone

  EXPECT_THAT(ProbeDirectory(dir_ / "none"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("none: not a directory")));
}

TEST_F(ProbeTest, CommandPrintsEachDiskAndTheWeightsTheyGive) {
  const fs::path other = dir_ / "other";
  fs::create_directories(other);
  auto probed = warp::testing::RunBinary(
      "expertd", "probe " + model_.string() + " " + other.string());
  ASSERT_EQ(probed.exit_code, 0) << probed.output;
  EXPECT_THAT(probed.output, HasSubstr(model_.string() + ": "));
  EXPECT_THAT(probed.output, HasSubstr(other.string() + ": "));
  EXPECT_THAT(probed.output, HasSubstr("256.00 MiB read in"));
  EXPECT_THAT(probed.output,
              HasSubstr("expertd shard ... --dirs " + model_.string() + "," + other.string() +
                        " --weights "));
  auto missing = warp::testing::RunBinary("expertd", "probe " + (dir_ / "none").string());
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.output, HasSubstr("expertd probe: "));
}

}  // namespace
}  // namespace warp::expertd
