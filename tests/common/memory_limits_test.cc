#include "common/memory/memory_limits.h"

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace warp {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

// A /proc/meminfo as Linux writes it, trimmed; values in kB.
std::string Meminfo(uint64_t total_bytes, uint64_t available_bytes) {
  return absl::StrCat("MemTotal:       ", total_bytes / 1024, " kB\n",
                      "MemFree:          123456 kB\n", "MemAvailable:   ", available_bytes / 1024,
                      " kB\n", "Buffers:          104928 kB\n", "HugePages_Total:       0\n",
                      "Hugepagesize:       2048 kB\n");
}

// Each test builds a fake root holding proc/ and sys/fs/cgroup/ files.
class MemoryLimitsTest : public testing::Test {
 protected:
  void SetUp() override {
    const testing::TestInfo* info = testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::path(testing::TempDir()) /
            absl::StrCat("memory_limits_test.", getpid(), ".", info->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }

  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& relative_path, const std::string& contents) {
    const fs::path path = root_ / relative_path;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << contents;
  }

  MemoryLimits Read() {
    absl::StatusOr<MemoryLimits> limits = ReadMemoryLimits(root_);
    EXPECT_TRUE(limits.ok()) << limits.status();
    return limits.value_or(MemoryLimits{});
  }

  std::string Path(const std::string& relative_path) const {
    return (root_ / relative_path).string();
  }

  fs::path root_;
};

TEST_F(MemoryLimitsTest, NoCgroupFileMeansMemAvailable) {
  Write("proc/meminfo", Meminfo(16 * kGiB, 12 * kGiB));
  const MemoryLimits limits = Read();
  EXPECT_EQ(limits.mem_total_bytes, 16 * kGiB);
  EXPECT_EQ(limits.mem_available_bytes, 12 * kGiB);
  EXPECT_FALSE(limits.cgroup_limit_bytes.has_value());
  EXPECT_FALSE(limits.cgroup_usage_bytes.has_value());
  EXPECT_EQ(limits.cgroup_source, "");
  EXPECT_EQ(limits.available_bytes(), 12 * kGiB);
}

TEST_F(MemoryLimitsTest, CgroupWithoutLimitFilesMeansMemAvailable) {
  Write("proc/meminfo", Meminfo(16 * kGiB, 12 * kGiB));
  Write("proc/self/cgroup", "0::/user.slice/session-1.scope\n");
  Write("sys/fs/cgroup/user.slice/session-1.scope/memory.max", "max\n");
  Write("sys/fs/cgroup/user.slice/memory.max", "max\n");
  const MemoryLimits limits = Read();
  EXPECT_FALSE(limits.cgroup_limit_bytes.has_value());
  EXPECT_EQ(limits.available_bytes(), 12 * kGiB);
}

TEST_F(MemoryLimitsTest, V2LimitAtLeaf) {
  Write("proc/meminfo", Meminfo(16 * kGiB, 12 * kGiB));
  Write("proc/self/cgroup", "0::/user.slice/app.scope\n");
  Write("sys/fs/cgroup/user.slice/app.scope/memory.max", "4294967296\n");
  Write("sys/fs/cgroup/user.slice/app.scope/memory.current", "0\n");
  const MemoryLimits limits = Read();
  EXPECT_EQ(limits.cgroup_limit_bytes, 4 * kGiB);
  EXPECT_EQ(limits.cgroup_usage_bytes, 0u);
  EXPECT_EQ(limits.cgroup_source, Path("sys/fs/cgroup/user.slice/app.scope/memory.max"));
  EXPECT_EQ(limits.available_bytes(), 4 * kGiB);
}

TEST_F(MemoryLimitsTest, V2MaxAtLeafButLimitAtParent) {
  Write("proc/meminfo", Meminfo(16 * kGiB, 12 * kGiB));
  Write("proc/self/cgroup", "0::/user.slice/app.scope\n");
  Write("sys/fs/cgroup/user.slice/app.scope/memory.max", "max\n");
  Write("sys/fs/cgroup/user.slice/app.scope/memory.current", "1048576\n");
  Write("sys/fs/cgroup/user.slice/memory.max", "2147483648\n");
  Write("sys/fs/cgroup/user.slice/memory.current", "536870912\n");
  const MemoryLimits limits = Read();
  EXPECT_EQ(limits.cgroup_limit_bytes, 2 * kGiB);
  EXPECT_EQ(limits.cgroup_usage_bytes, 512 * kMiB);
  EXPECT_EQ(limits.cgroup_source, Path("sys/fs/cgroup/user.slice/memory.max"));
  EXPECT_EQ(limits.available_bytes(), 2 * kGiB - 512 * kMiB);
}

TEST_F(MemoryLimitsTest, V2UsageReducesAvailable) {
  Write("proc/meminfo", Meminfo(16 * kGiB, 12 * kGiB));
  Write("proc/self/cgroup", "0::/job\n");
  Write("sys/fs/cgroup/job/memory.max", "4294967296\n");
  Write("sys/fs/cgroup/job/memory.current", "3221225472\n");
  EXPECT_EQ(Read().available_bytes(), 1 * kGiB);
}

TEST_F(MemoryLimitsTest, V2UsageAboveLimitFloorsAtZero) {
  Write("proc/meminfo", Meminfo(16 * kGiB, 12 * kGiB));
  Write("proc/self/cgroup", "0::/job\n");
  Write("sys/fs/cgroup/job/memory.max", "1073741824\n");
  Write("sys/fs/cgroup/job/memory.current", "1073745920\n");
  EXPECT_EQ(Read().available_bytes(), 0u);
}

TEST_F(MemoryLimitsTest, V2LeastRoomWinsNotSmallestLimit) {
  Write("proc/meminfo", Meminfo(16 * kGiB, 12 * kGiB));
  Write("proc/self/cgroup", "0::/team/job\n");
  Write("sys/fs/cgroup/team/job/memory.max", "2147483648\n");  // 2 GiB, 2 GiB room
  Write("sys/fs/cgroup/team/job/memory.current", "0\n");
  Write("sys/fs/cgroup/team/memory.max", "3221225472\n");  // 3 GiB, 0.5 GiB room
  Write("sys/fs/cgroup/team/memory.current", "2684354560\n");
  const MemoryLimits limits = Read();
  EXPECT_EQ(limits.cgroup_limit_bytes, 3 * kGiB);
  EXPECT_EQ(limits.cgroup_source, Path("sys/fs/cgroup/team/memory.max"));
  EXPECT_EQ(limits.available_bytes(), 512 * kMiB);
}

TEST_F(MemoryLimitsTest, V2MissingUsageCountsAsZero) {
  Write("proc/meminfo", Meminfo(16 * kGiB, 12 * kGiB));
  Write("proc/self/cgroup", "0::/job\n");
  Write("sys/fs/cgroup/job/memory.max", "1073741824\n");
  const MemoryLimits limits = Read();
  EXPECT_EQ(limits.cgroup_limit_bytes, 1 * kGiB);
  EXPECT_FALSE(limits.cgroup_usage_bytes.has_value());
  EXPECT_EQ(limits.available_bytes(), 1 * kGiB);
}

TEST_F(MemoryLimitsTest, V2ContainerLimitAtMountRoot) {
  Write("proc/meminfo", Meminfo(16 * kGiB, 12 * kGiB));
  Write("proc/self/cgroup", "0::/\n");
  Write("sys/fs/cgroup/memory.max", "536870912\n");
  Write("sys/fs/cgroup/memory.current", "0\n");
  const MemoryLimits limits = Read();
  EXPECT_EQ(limits.cgroup_limit_bytes, 512 * kMiB);
  EXPECT_EQ(limits.cgroup_source, Path("sys/fs/cgroup/memory.max"));
  EXPECT_EQ(limits.available_bytes(), 512 * kMiB);
}

// Without a cgroup namespace the container sees its host path, but its
// /sys/fs/cgroup mount starts at its own cgroup: the walk reaches the root.
TEST_F(MemoryLimitsTest, V2HostPathNotMountedFallsBackToMountRoot) {
  Write("proc/meminfo", Meminfo(16 * kGiB, 12 * kGiB));
  Write("proc/self/cgroup", "0::/system.slice/docker-abc123.scope\n");
  Write("sys/fs/cgroup/memory.max", "536870912\n");
  EXPECT_EQ(Read().cgroup_limit_bytes, 512 * kMiB);
}

TEST_F(MemoryLimitsTest, V1Limit) {
  Write("proc/meminfo", Meminfo(16 * kGiB, 12 * kGiB));
  Write("proc/self/cgroup",
        "9:name=systemd:/user.slice\n"
        "5:memory:/user.slice/job\n"
        "2:cpu,cpuacct:/\n"
        "0::/\n");
  Write("sys/fs/cgroup/memory/user.slice/job/memory.limit_in_bytes", "2147483648\n");
  Write("sys/fs/cgroup/memory/user.slice/job/memory.usage_in_bytes", "1073741824\n");
  Write("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  const MemoryLimits limits = Read();
  EXPECT_EQ(limits.cgroup_limit_bytes, 2 * kGiB);
  EXPECT_EQ(limits.cgroup_usage_bytes, 1 * kGiB);
  EXPECT_EQ(limits.cgroup_source,
            Path("sys/fs/cgroup/memory/user.slice/job/memory.limit_in_bytes"));
  EXPECT_EQ(limits.available_bytes(), 1 * kGiB);
}

TEST_F(MemoryLimitsTest, V1MemoryInControllerListAndLimitAtParent) {
  Write("proc/meminfo", Meminfo(16 * kGiB, 12 * kGiB));
  Write("proc/self/cgroup", "3:blkio,memory:/batch/job\n");
  Write("sys/fs/cgroup/memory/batch/job/memory.limit_in_bytes", "9223372036854771712\n");
  Write("sys/fs/cgroup/memory/batch/memory.limit_in_bytes", "1073741824\n");
  Write("sys/fs/cgroup/memory/batch/memory.usage_in_bytes", "0\n");
  const MemoryLimits limits = Read();
  EXPECT_EQ(limits.cgroup_limit_bytes, 1 * kGiB);
  EXPECT_EQ(limits.cgroup_source, Path("sys/fs/cgroup/memory/batch/memory.limit_in_bytes"));
}

TEST_F(MemoryLimitsTest, V1HugeValueMeansUnlimited) {
  Write("proc/meminfo", Meminfo(16 * kGiB, 12 * kGiB));
  Write("proc/self/cgroup", "5:memory:/user.slice\n");
  Write("sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes", "9223372036854771712\n");
  Write("sys/fs/cgroup/memory/user.slice/memory.usage_in_bytes", "85049344\n");
  Write("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854710272\n");  // 64 KiB pages
  const MemoryLimits limits = Read();
  EXPECT_FALSE(limits.cgroup_limit_bytes.has_value());
  EXPECT_EQ(limits.cgroup_source, "");
  EXPECT_EQ(limits.available_bytes(), 12 * kGiB);
}

TEST_F(MemoryLimitsTest, LimitAboveMemAvailableLeavesMemAvailable) {
  Write("proc/meminfo", Meminfo(16 * kGiB, 8 * kGiB));
  Write("proc/self/cgroup", "0::/job\n");
  Write("sys/fs/cgroup/job/memory.max", "68719476736\n");  // 64 GiB
  Write("sys/fs/cgroup/job/memory.current", "1073741824\n");
  const MemoryLimits limits = Read();
  EXPECT_EQ(limits.cgroup_limit_bytes, 64 * kGiB);  // still reported
  EXPECT_EQ(limits.available_bytes(), 8 * kGiB);
}

TEST_F(MemoryLimitsTest, MissingMeminfoIsNotFoundNamingThePath) {
  const absl::StatusOr<MemoryLimits> limits = ReadMemoryLimits(root_);
  ASSERT_FALSE(limits.ok());
  EXPECT_EQ(limits.status().code(), absl::StatusCode::kNotFound) << limits.status();
  EXPECT_NE(limits.status().message().find(Path("proc/meminfo")), absl::string_view::npos)
      << limits.status();
}

TEST_F(MemoryLimitsTest, MalformedMeminfoNamesFileAndLine) {
  Write("proc/meminfo",
        "MemTotal:       16318504 kB\n"
        "MemAvailable:   lots kB\n");
  const absl::StatusOr<MemoryLimits> limits = ReadMemoryLimits(root_);
  ASSERT_FALSE(limits.ok());
  EXPECT_EQ(limits.status().code(), absl::StatusCode::kInvalidArgument) << limits.status();
  EXPECT_NE(limits.status().message().find(absl::StrCat(Path("proc/meminfo"), ":2:")),
            absl::string_view::npos)
      << limits.status();
  EXPECT_NE(limits.status().message().find("lots"), absl::string_view::npos) << limits.status();
}

TEST_F(MemoryLimitsTest, MeminfoWithoutMemAvailableIsAnError) {
  Write("proc/meminfo", "MemTotal:       16318504 kB\nMemFree:  1 kB\n");
  const absl::StatusOr<MemoryLimits> limits = ReadMemoryLimits(root_);
  ASSERT_FALSE(limits.ok());
  EXPECT_EQ(limits.status().code(), absl::StatusCode::kInvalidArgument) << limits.status();
  EXPECT_NE(limits.status().message().find("MemAvailable"), absl::string_view::npos)
      << limits.status();
}

TEST_F(MemoryLimitsTest, MalformedCgroupNumberNamesFile) {
  Write("proc/meminfo", Meminfo(16 * kGiB, 12 * kGiB));
  Write("proc/self/cgroup", "0::/job\n");
  Write("sys/fs/cgroup/job/memory.max", "-1\n");
  const absl::StatusOr<MemoryLimits> limits = ReadMemoryLimits(root_);
  ASSERT_FALSE(limits.ok());
  EXPECT_EQ(limits.status().code(), absl::StatusCode::kInvalidArgument) << limits.status();
  EXPECT_NE(limits.status().message().find(Path("sys/fs/cgroup/job/memory.max")),
            absl::string_view::npos)
      << limits.status();
}

TEST_F(MemoryLimitsTest, MalformedProcSelfCgroupNamesFileAndLine) {
  Write("proc/meminfo", Meminfo(16 * kGiB, 12 * kGiB));
  Write("proc/self/cgroup", "0::/\nnonsense\n");
  const absl::StatusOr<MemoryLimits> limits = ReadMemoryLimits(root_);
  ASSERT_FALSE(limits.ok());
  EXPECT_EQ(limits.status().code(), absl::StatusCode::kInvalidArgument) << limits.status();
  EXPECT_NE(limits.status().message().find(absl::StrCat(Path("proc/self/cgroup"), ":2:")),
            absl::string_view::npos)
      << limits.status();
}

TEST(MemoryLimitsRealTest, ReadsThisMachine) {
  const absl::StatusOr<MemoryLimits> limits = ReadMemoryLimits("/");
  ASSERT_TRUE(limits.ok()) << limits.status();
  EXPECT_GT(limits->mem_total_bytes, 0u);
  EXPECT_LE(limits->mem_available_bytes, limits->mem_total_bytes);
  EXPECT_LE(limits->available_bytes(), limits->mem_available_bytes);
  EXPECT_EQ(limits->cgroup_limit_bytes.has_value(), !limits->cgroup_source.empty());
}

}  // namespace
}  // namespace warp
