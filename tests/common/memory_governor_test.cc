// MemoryGovernor: its policy on readings, the cgroup files it reads (v1, v2,
// PSI), and its thread driving a cache's capacity from fake cgroup files, the
// way the memory-limit tests fake them.

#include "common/memory/memory_governor.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

MemoryGovernor::Options Policy() {
  return {
      .margin_bytes = 256 * kMiB, .max_capacity_bytes = 3 * kGiB, .min_capacity_bytes = 100 * kMiB};
}

CgroupPressure Reading(uint64_t working, std::optional<double> psi = std::nullopt) {
  return {.limit_bytes = 4 * kGiB,
          .usage_bytes = working + 500 * kMiB,
          .inactive_file_bytes = 500 * kMiB,  // page cache the kernel drops first: not pressure
          .psi_some_avg10 = psi};
}

TEST(MemoryGovernorPolicyTest, ShrinksToFreeTheMarginWhenHeadroomFallsBelowHalfOfIt) {
  // 100 MiB of headroom: free 156 MiB more, so the margin is clear again.
  EXPECT_EQ(MemoryGovernor::NextCapacity(Policy(), Reading(4 * kGiB - 100 * kMiB), 3 * kGiB),
            3 * kGiB - 156 * kMiB);
  // Over the limit already: free it all back plus the margin.
  EXPECT_EQ(MemoryGovernor::NextCapacity(Policy(), Reading(4 * kGiB + kGiB), 3 * kGiB),
            3 * kGiB - 256 * kMiB);
  // Never below the minimum.
  EXPECT_EQ(MemoryGovernor::NextCapacity(Policy(), Reading(4 * kGiB), 200 * kMiB), 100 * kMiB);
}

TEST(MemoryGovernorPolicyTest, PsiStallsShrinkEvenWithRoom) {
  const CgroupPressure stalled = Reading(2 * kGiB + 800 * kMiB, 25.0);  // 1.2 GiB of headroom
  EXPECT_EQ(MemoryGovernor::NextCapacity(Policy(), stalled, 2 * kGiB), 2 * kGiB - 64 * kMiB);
  const CgroupPressure calm = Reading(3 * kGiB + 600 * kMiB, 2.0);  // 400 MiB: between
  EXPECT_EQ(MemoryGovernor::NextCapacity(Policy(), calm, 2 * kGiB), 2 * kGiB);
}

TEST(MemoryGovernorPolicyTest, GrowsBackTowardTheBudgetWhenRoomReturns) {
  // 1 GiB of headroom: half of what lies above the margin, 384 MiB.
  EXPECT_EQ(MemoryGovernor::NextCapacity(Policy(), Reading(3 * kGiB), 2 * kGiB),
            2 * kGiB + 384 * kMiB);
  // Never past the budget's cache.
  EXPECT_EQ(MemoryGovernor::NextCapacity(Policy(), Reading(kGiB), 2900 * kMiB), 3 * kGiB);
  // Between half the margin and twice it: left alone (no oscillation).
  EXPECT_EQ(MemoryGovernor::NextCapacity(Policy(), Reading(4 * kGiB - 300 * kMiB), 2 * kGiB),
            2 * kGiB);
}

void WriteFile(const fs::path& path, const std::string& contents) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << contents;
}

TEST(CgroupPressureTest, ReadsV2WithStatAndPsi) {
  warp::testing::TempDir root;
  const fs::path dir = root / "sys/fs/cgroup/run.scope";
  WriteFile(dir / "memory.max", absl::StrCat(4 * kGiB, "\n"));
  WriteFile(dir / "memory.current", absl::StrCat(3 * kGiB, "\n"));
  WriteFile(
      dir / "memory.stat",
      absl::StrCat("anon 1000\nfile 5000\nactive_file 100\ninactive_file ", kGiB, "\nshmem 0\n"));
  WriteFile(dir / "memory.pressure",
            "some avg10=12.50 avg60=3.00 avg300=0.50 total=123\nfull avg10=1.00 avg60=0.00 "
            "avg300=0.00 total=45\n");
  auto reading = ReadCgroupPressure(dir / "memory.max");
  WARP_ASSERT_OK(reading);
  EXPECT_EQ(reading->limit_bytes, 4 * kGiB);
  EXPECT_EQ(reading->working_bytes(), 2 * kGiB);
  EXPECT_EQ(reading->headroom_bytes(), 2 * kGiB);
  EXPECT_EQ(reading->psi_some_avg10, 12.5);
}

TEST(CgroupPressureTest, ReadsV1WithoutPsi) {
  warp::testing::TempDir root;
  const fs::path dir = root / "sys/fs/cgroup/memory/batch";
  WriteFile(dir / "memory.limit_in_bytes", absl::StrCat(2 * kGiB, "\n"));
  WriteFile(dir / "memory.usage_in_bytes", absl::StrCat(kGiB, "\n"));
  WriteFile(dir / "memory.stat",
            absl::StrCat("cache 9\ninactive_file 7\ntotal_inactive_file ", 256 * kMiB, "\n"));
  auto reading = ReadCgroupPressure(dir / "memory.limit_in_bytes");
  WARP_ASSERT_OK(reading);
  EXPECT_EQ(reading->inactive_file_bytes, 256 * kMiB);  // the hierarchy's, not the leaf's own
  EXPECT_EQ(reading->headroom_bytes(), kGiB + 256 * kMiB);
  EXPECT_FALSE(reading->psi_some_avg10.has_value());
}

TEST(CgroupPressureTest, MalformedFilesAreNamed) {
  warp::testing::TempDir root;
  const fs::path dir = root / "cg";
  WriteFile(dir / "memory.max", "max\n");
  EXPECT_THAT(ReadCgroupPressure(dir / "memory.max"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("memory.max: no limit")));
  WriteFile(dir / "memory.max", "1000\n");
  EXPECT_THAT(ReadCgroupPressure(dir / "memory.max"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("memory.current")));
  WriteFile(dir / "memory.current", "500\n");
  WriteFile(dir / "memory.stat", "inactive_file lots\n");
  EXPECT_THAT(ReadCgroupPressure(dir / "memory.max"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("memory.stat:1")));
  WriteFile(dir / "memory.stat", "inactive_file 0\n");
  WriteFile(dir / "memory.pressure", "full avg10=0.00 total=0\nsome total=5\n");
  EXPECT_THAT(ReadCgroupPressure(dir / "memory.max"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("memory.pressure:2: expected \"some avg10=<percent>\"")));
}

// The thread: fake pressure files drive a fake cache down and back up. The
// fake cgroup's usage is another user's bytes plus the cache's, rewritten (by
// rename, so a reading never sees half a file) whenever either changes, as a
// real cgroup's would be.
TEST(MemoryGovernorTest, ShrinksUnderPressureAndGrowsBackWhenItIsGone) {
  warp::testing::TempDir root;
  const fs::path dir = root / "cg";
  WriteFile(dir / "memory.max", absl::StrCat(4 * kGiB, "\n"));
  absl::Mutex mu;
  std::atomic<uint64_t> other{700 * kMiB};
  std::atomic<uint64_t> cache{3 * kGiB};
  auto write_usage = [&] {
    absl::MutexLock lock(&mu);
    WriteFile(dir / "memory.current.tmp", absl::StrCat(other.load() + cache.load(), "\n"));
    fs::rename(dir / "memory.current.tmp", dir / "memory.current");
  };
  write_usage();  // 324 MiB of headroom: between the thresholds
  MemoryGovernor::Options options = Policy();
  options.limit_file = dir / "memory.max";
  options.interval = absl::Milliseconds(2);
  MemoryGovernor governor(options, cache.load(), [&](uint64_t bytes) {
    cache.store(bytes);
    write_usage();
    return bytes;
  });
  auto wait_for = [&](auto done) {
    for (int i = 0; i < 5000 && !done(); ++i) absl::SleepFor(absl::Milliseconds(1));
    return done();
  };
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_EQ(cache.load(), 3 * kGiB);
  EXPECT_EQ(governor.shrinks(), 0u);
  // Another user takes 300 MiB: 24 MiB of headroom. One shrink frees the margin
  // (232 MiB), and then the headroom is the margin: no second one.
  other = 1000 * kMiB;
  write_usage();
  ASSERT_TRUE(wait_for([&] { return governor.shrinks() > 0; }));
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_EQ(cache.load(), 3 * kGiB - 232 * kMiB);
  EXPECT_EQ(governor.shrinks(), 1u);
  EXPECT_EQ(governor.grows(), 0u);
  // The other user is gone: the cache grows back to its budget, no further.
  other = 100 * kMiB;
  write_usage();
  ASSERT_TRUE(wait_for([&] { return governor.capacity() == 3 * kGiB; }));
  EXPECT_EQ(cache.load(), 3 * kGiB);
  EXPECT_GT(governor.grows(), 0u);
  EXPECT_EQ(governor.shrinks(), 1u);
}

// A cgroup it cannot read (gone, or a file it does not understand) leaves the
// cache alone: the governor logs once and keeps polling.
TEST(MemoryGovernorTest, AnUnreadableCgroupLeavesTheCacheAlone) {
  warp::testing::TempDir root;
  std::atomic<int> resizes{0};
  MemoryGovernor::Options options = Policy();
  options.limit_file = root / "gone" / "memory.max";
  options.interval = absl::Milliseconds(1);
  MemoryGovernor governor(options, 3 * kGiB, [&](uint64_t bytes) {
    ++resizes;
    return bytes;
  });
  absl::SleepFor(absl::Milliseconds(30));
  EXPECT_EQ(resizes.load(), 0);
  EXPECT_EQ(governor.capacity(), 3 * kGiB);
  EXPECT_EQ(governor.shrinks() + governor.grows(), 0u);
}

}  // namespace
}  // namespace warp
