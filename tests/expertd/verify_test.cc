#include "expertd/verify.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include "common/format/bank_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tiny_container.h"

namespace warp::expertd {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::warp::testing::StatusIs;

class VerifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto manifest = warp::testing::WriteTinyContainer(model_);
    WARP_ASSERT_OK(manifest);
    manifest_ = *manifest;
  }

  // XORs one byte of `file` in the container with 0x01.
  void FlipByte(const std::string& file, uint64_t offset) {
    const std::string path = (model_ / file).string();
    const int fd = ::open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0) << path;
    unsigned char byte;
    ASSERT_EQ(::pread(fd, &byte, 1, offset), 1);
    byte ^= 0x01;
    ASSERT_EQ(::pwrite(fd, &byte, 1, offset), 1);
    ::close(fd);
  }

  uint64_t RecordBytes() const { return manifest_.banks[0].record_bytes; }

  warp::testing::TempDir dir_;
  std::filesystem::path model_ = dir_ / "m.warp";
  Manifest manifest_;
};

TEST_F(VerifyTest, CleanContainerHasNoProblems) {
  auto report = VerifyContainer(model_, {});
  WARP_ASSERT_OK(report);
  EXPECT_THAT(report->problems, IsEmpty());
  EXPECT_EQ(report->records_checked, 8u);  // 2 layers x 4 experts
  EXPECT_EQ(report->trunk_tensors_checked, 2u);
}

TEST_F(VerifyTest, OneFlippedPayloadByteNamesLayerExpertFileAndOffset) {
  FlipByte("experts-L2.bin", 2 * RecordBytes() + 100);
  auto report = VerifyContainer(model_, {});
  WARP_ASSERT_OK(report);
  EXPECT_THAT(report->problems, ElementsAre(absl::StrCat("expert 2 of layer 2: checksum mismatch (",
                                                         (model_ / "experts-L2.bin").string(), " @",
                                                         2 * RecordBytes(), ")")));
  EXPECT_EQ(report->records_checked, 8u);  // the bad record did not stop the scan
}

TEST_F(VerifyTest, SmallReadChunksFindTheSameProblem) {
  FlipByte("experts-L1.bin", 3 * RecordBytes() + 7);
  auto report = VerifyContainer(model_, {.read_chunk_bytes = 4096});
  WARP_ASSERT_OK(report);
  ASSERT_EQ(report->problems.size(), 1u);
  EXPECT_THAT(report->problems[0], HasSubstr("expert 3 of layer 1: checksum mismatch"));
}

TEST_F(VerifyTest, CorruptFooterOfTheFirstRecordIsReportedNotFatal) {
  FlipByte("experts-L1.bin", RecordBytes() - kRecordFooterBytes + 4);  // footer.layer
  auto report = VerifyContainer(model_, {});
  WARP_ASSERT_OK(report);
  ASSERT_EQ(report->problems.size(), 1u);
  EXPECT_THAT(report->problems[0],
              HasSubstr("expert 0 of layer 1: footer names expert 0 of layer 0"));
}

TEST_F(VerifyTest, FlippedTrunkByteNamesTheTensor) {
  FlipByte("trunk.bin", manifest_.trunk[1].data.offset + 3);
  auto report = VerifyContainer(model_, {});
  WARP_ASSERT_OK(report);
  ASSERT_EQ(report->problems.size(), 1u);
  EXPECT_THAT(report->problems[0], HasSubstr("trunk tensor lm_head.weight: checksum mismatch"));
}

TEST_F(VerifyTest, TruncatedBankIsAnErrorNamingTheFile) {
  std::filesystem::resize_file(model_ / "experts-L2.bin", 3 * RecordBytes() + 100);
  EXPECT_THAT(VerifyContainer(model_, {}),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("experts-L2.bin: size")));
}

TEST_F(VerifyTest, CommandExitsNonZeroAndPrintsTheBadRecord) {
  FlipByte("experts-L1.bin", RecordBytes() + 1);
  auto result = warp::testing::RunBinary("expertd", "verify --quiet " + model_.string());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, HasSubstr("expert 1 of layer 1: checksum mismatch ("));
  EXPECT_THAT(result.output, HasSubstr(": 1 problem\n"));
}

TEST_F(VerifyTest, CommandSucceedsOnACleanContainer) {
  auto result = warp::testing::RunBinary("expertd", "verify --quiet " + model_.string());
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("8 records, 2 trunk tensors"));
  EXPECT_THAT(result.output, HasSubstr(": OK"));
}

TEST_F(VerifyTest, CommandNamesAMisalignedBank) {
  std::filesystem::resize_file(model_ / "experts-L1.bin", 4 * RecordBytes() + 512);
  auto result = warp::testing::RunBinary("expertd", "verify --quiet " + model_.string());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, HasSubstr("experts-L1.bin: size"));
}

}  // namespace
}  // namespace warp::expertd
