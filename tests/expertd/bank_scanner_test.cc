#include "expertd/bank_scanner.h"

#include <filesystem>
#include <string>
#include <vector>

#include "common/format/bank_format.h"
#include "common/format/container.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tiny_container.h"

namespace warp::expertd {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

class BankScannerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto manifest = warp::testing::WriteTinyContainer(model_, {.num_layers = 1, .num_experts = 8});
    WARP_ASSERT_OK(manifest);
    record_bytes_ = manifest->banks[0].record_bytes;
  }

  std::unique_ptr<Container> Open() {
    auto container = Container::Open(model_, {.check_footers = false});
    EXPECT_TRUE(container.ok()) << container.status();
    return container.ok() ? std::move(*container) : nullptr;
  }

  warp::testing::TempDir dir_;
  fs::path model_ = dir_ / "m.warp";
  uint64_t record_bytes_ = 0;
};

TEST_F(BankScannerTest, ReadsWholeRecordsInChunksTheBufferHolds) {
  std::unique_ptr<Container> container = Open();
  ASSERT_NE(container, nullptr);
  AlignedBuffer buffer(3 * record_bytes_);  // 3 whole records
  std::vector<std::vector<uint32_t>> chunks;
  std::vector<uint64_t> offsets;
  WARP_ASSERT_OK(ScanBank(*container, container->manifest().banks[0], buffer,
                          [&](const BankChunk& chunk) {
                            chunks.emplace_back(chunk.experts.begin(), chunk.experts.end());
                            offsets.push_back(chunk.offset);
                            EXPECT_EQ(chunk.bytes.size(), chunk.size() * record_bytes_);
                            for (size_t i = 0; i < chunk.size(); ++i) {
                              WARP_EXPECT_OK(chunk.checks[i]);
                              EXPECT_EQ(chunk.record(i)[0],
                                        warp::testing::RecordByte(1, chunk.experts[i], 0));
                            }
                            return absl::OkStatus();
                          }));
  EXPECT_THAT(chunks, ElementsAre(ElementsAre(0, 1, 2), ElementsAre(3, 4, 5), ElementsAre(6, 7)));
  EXPECT_THAT(offsets, ElementsAre(0, 3 * record_bytes_, 6 * record_bytes_));
}

TEST_F(BankScannerTest, ADamagedRecordIsReportedInItsChunkNamingWhereItLies) {
  WARP_ASSERT_OK(warp::testing::FlipBankByte(model_, 1, 4 * record_bytes_ + 100));
  std::unique_ptr<Container> container = Open();
  ASSERT_NE(container, nullptr);
  AlignedBuffer buffer(3 * record_bytes_);
  std::vector<std::string> problems;
  size_t records = 0;
  WARP_ASSERT_OK(ScanBank(*container, container->manifest().banks[0], buffer,
                          [&](const BankChunk& chunk) {
                            for (const absl::Status& check : chunk.checks) {
                              if (!check.ok()) problems.emplace_back(check.message());
                            }
                            records += chunk.size();
                            return absl::OkStatus();
                          }));
  EXPECT_EQ(records, 8u);
  EXPECT_THAT(problems, ElementsAre(AllOf(HasSubstr("expert 4 of layer 1: checksum mismatch"),
                                          HasSubstr(BankFileName(1)),
                                          HasSubstr("@" + std::to_string(4 * record_bytes_)))));
}

TEST_F(BankScannerTest, AVisitorErrorStopsTheScan) {
  std::unique_ptr<Container> container = Open();
  ASSERT_NE(container, nullptr);
  AlignedBuffer buffer(2 * record_bytes_);
  int visits = 0;
  EXPECT_THAT(ScanBank(*container, container->manifest().banks[0], buffer,
                       [&](const BankChunk&) {
                         ++visits;
                         return absl::AbortedError("enough");
                       }),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("enough")));
  EXPECT_EQ(visits, 1);
}

}  // namespace
}  // namespace warp::expertd
