// ProbeDiskReads: what it reads, its byte limit, and a file it cannot open.

#include "common/io/disk_probe.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

void WriteBytes(const fs::path& path, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out << std::string(bytes, 'x');
}

TEST(DiskProbeTest, ReadsWholeBlocksOfEveryFileUpToTheLimit) {
  warp::testing::TempDir dir;
  WriteBytes(dir / "a", 3 * 4096 + 100);  // the 100-byte tail is skipped
  WriteBytes(dir / "b", 2 * 4096);
  auto all = ProbeDiskReads({dir / "a", dir / "b"}, {.piece_bytes = 8192, .threads = 2});
  WARP_ASSERT_OK(all);
  EXPECT_EQ(all->bytes, 5u * 4096);
  EXPECT_GT(all->bytes_per_second(), 0);
  auto limited = ProbeDiskReads({dir / "a", dir / "b"}, {.max_bytes = 4096, .piece_bytes = 8192});
  WARP_ASSERT_OK(limited);
  EXPECT_EQ(limited->bytes, 4096u);
  // No time at all still reads the first piece: a probe never measures nothing.
  auto hurried = ProbeDiskReads({dir / "a"}, {.max_seconds = 0, .piece_bytes = 4096, .threads = 1});
  WARP_ASSERT_OK(hurried);
  EXPECT_EQ(hurried->bytes, 4096u);
}

TEST(DiskProbeTest, AFileItCannotOpenIsNamed) {
  warp::testing::TempDir dir;
  EXPECT_THAT(ProbeDiskReads({dir / "missing.bin"}, {}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.bin")));
}

}  // namespace
}  // namespace warp
