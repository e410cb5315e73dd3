// The engram table format (common/format/engram_table.h, docs/FORMAT.md's
// engram-L{layer}.bin) and its store: records of 15 rows of 264 bytes, the
// footer's key, the file's size checked at open; rows read back as written,
// hits counted, a corrupt record refused naming the file, the record and the
// layer, and never cached.

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <vector>

#include "common/format/bank_format.h"
#include "common/format/container.h"
#include "common/format/container_writer.h"
#include "common/format/engram_table.h"
#include "common/store/engram_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

constexpr uint32_t kLayer = 3;
constexpr uint64_t kRows = 20;  // two records: 15 rows, then 5 and 10 zero rows
constexpr uint32_t kRowBytes = 264;

std::byte RowByte(uint64_t row, uint32_t i) { return static_cast<std::byte>((row * 13 + i) & 0xff); }

// A container of one tiny trunk tensor and one engram table of kRows rows.
void WriteTable(const std::filesystem::path& dir) {
  Manifest header{.architecture = "test",
                  .config = nlohmann::ordered_json::object(),
                  .fingerprint = 0x5eed,
                  .source = "engram_store_test"};
  auto writer = ContainerWriter::Create(dir, std::move(header), {});
  WARP_ASSERT_OK(writer);
  auto fill = [](uint64_t, std::span<std::byte> out) { std::memset(out.data(), 0, out.size()); };
  WARP_ASSERT_OK((*writer)->AddTrunkTensor(
      {.name = "norm.weight", .format = TensorFormat::kF32, .shape = {32}}, fill, fill));
  const EngramTableEntry table{
      .layer = kLayer, .file = "engram-L3.bin", .rows = kRows, .row_bytes = kRowBytes};
  WARP_ASSERT_OK((*writer)->BeginEngramTable(table));
  for (uint64_t record = 0; record < EngramRecords(table); ++record) {
    std::span<std::byte> bytes = (*writer)->NextRecord();
    std::memset(bytes.data(), 0, 15 * kRowBytes);
    for (uint64_t r = 0; r < 15 && record * 15 + r < kRows; ++r) {
      for (uint32_t i = 0; i < kRowBytes; ++i) bytes[r * kRowBytes + i] = RowByte(record * 15 + r, i);
    }
    (*writer)->CommitRecord();
  }
  WARP_ASSERT_OK((*writer)->EndBank());
  WARP_ASSERT_OK((*writer)->Finish());
}

class EngramStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { WriteTable(dir_.path()); }

  std::shared_ptr<const Container> Open() {
    auto container = Container::Open(dir_.path());
    EXPECT_TRUE(container.ok()) << container.status();
    return container.ok() ? std::shared_ptr<const Container>(std::move(*container)) : nullptr;
  }

  warp::testing::TempDir dir_;
};

TEST_F(EngramStoreTest, TheFileIsFifteenRowsToARecordWithAnExpertFooter) {
  auto container = Open();
  ASSERT_NE(container, nullptr);
  ASSERT_EQ(container->manifest().engram.size(), 1u);
  EXPECT_EQ(EngramRecords(container->manifest().engram[0]), 2u);
  std::ifstream in(dir_.path() / "engram-L3.bin", std::ios::binary);
  std::vector<char> file((std::istreambuf_iterator<char>(in)), {});
  ASSERT_EQ(file.size(), 2 * kEngramRecordBytes);
  // Row 17 is record 1's third row.
  EXPECT_EQ(static_cast<std::byte>(file[4096 + 2 * kRowBytes + 5]), RowByte(17, 5));
  // Rows past the table are zero; so is the padding.
  EXPECT_EQ(file[4096 + 5 * kRowBytes + 7], 0);
  RecordFooter footer;
  std::memcpy(&footer, &file[2 * 4096 - 32], 32);
  EXPECT_EQ(footer.magic, kRecordMagic);
  EXPECT_EQ(footer.layer, (1u << 20) + kLayer);
  EXPECT_EQ(footer.expert, 1u);
  EXPECT_EQ(footer.payload_bytes, 15u * kRowBytes);
  EXPECT_EQ(footer.fingerprint, 0x5eedu);
}

TEST_F(EngramStoreTest, RowsComeBackAsWrittenAndHitsAreCounted) {
  auto container = Open();
  ASSERT_NE(container, nullptr);
  auto store = EngramStore::Open(container, {.cache_bytes = 1 << 20});
  WARP_ASSERT_OK(store);
  const std::vector<EngramRow> rows = {{0, 0}, {0, 14}, {0, 15}, {0, 19}, {0, 3}};
  std::vector<std::byte> out(rows.size() * kRowBytes);
  WARP_ASSERT_OK((*store)->Rows((*store)->Fetch(rows), out));
  for (size_t r = 0; r < rows.size(); ++r) {
    for (uint32_t i = 0; i < kRowBytes; ++i) {
      ASSERT_EQ(out[r * kRowBytes + i], RowByte(rows[r].row, i)) << "row " << rows[r].row;
    }
  }
  // Two records read; the batch's later rows of a record found it on its way.
  EXPECT_EQ((*store)->counters().records_read, 2u);
  EXPECT_EQ((*store)->counters().rows, 5u);
  EXPECT_EQ((*store)->counters().row_hits, 3u);
  WARP_ASSERT_OK((*store)->Rows((*store)->Fetch(rows), out));  // all cached now
  EXPECT_EQ((*store)->counters().records_read, 2u);
  EXPECT_EQ((*store)->counters().row_hits, 8u);
}

TEST_F(EngramStoreTest, ACacheOfNothingReadsEachBatchAgain) {
  auto container = Open();
  ASSERT_NE(container, nullptr);
  auto store = EngramStore::Open(container, {.cache_bytes = 0});
  WARP_ASSERT_OK(store);
  const std::vector<EngramRow> rows = {{0, 1}};
  std::vector<std::byte> out(kRowBytes);
  for (int pass = 0; pass < 3; ++pass) {
    WARP_ASSERT_OK((*store)->Rows((*store)->Fetch(rows), out));
    EXPECT_EQ(out[7], RowByte(1, 7));
  }
  EXPECT_EQ((*store)->counters().records_read, 3u);
}

TEST_F(EngramStoreTest, AFetchKeepsItsRecordsForItsLaterLayersWhateverTheCacheDrops) {
  auto container = Open();
  ASSERT_NE(container, nullptr);
  auto store = EngramStore::Open(container, {.cache_bytes = 0});
  WARP_ASSERT_OK(store);
  const std::vector<EngramRow> rows = {{0, 2}, {0, 18}};
  const EngramFetch fetch = (*store)->Fetch(rows);
  std::vector<std::byte> out(kRowBytes);
  for (size_t which : {size_t{1}, size_t{0}, size_t{1}}) {  // as layers take theirs, in turn
    WARP_ASSERT_OK((*store)->Rows(fetch, std::vector<size_t>{which}, out));
    EXPECT_EQ(out[9], RowByte(rows[which].row, 9));
  }
  EXPECT_EQ((*store)->counters().records_read, 2u);  // each once
}

TEST_F(EngramStoreTest, WholeRecordsAreServedByKeyFromTheCache) {
  auto container = Open();
  ASSERT_NE(container, nullptr);
  auto store = EngramStore::Open(container, {});
  WARP_ASSERT_OK(store);
  const std::vector<ExpertKey> keys = {{EngramKeyLayer(kLayer), 1}, {EngramKeyLayer(kLayer), 2},
                                       {EngramKeyLayer(kLayer + 1), 0}};
  for (Served expected : {Served::kDisk, Served::kCache}) {
    std::vector<absl::StatusOr<ExpertRecord>> records = (*store)->Read(keys)->WaitAll();
    WARP_ASSERT_OK(records[0]);
    EXPECT_EQ(records[0]->served, expected);
    EXPECT_EQ(records[0]->bytes().size(), kEngramRecordBytes);
    EXPECT_EQ(records[0]->data[kRowBytes + 5], RowByte(16, 5));  // the record's second row
    EXPECT_THAT(records[1].status(),
                StatusIs(absl::StatusCode::kNotFound,
                         HasSubstr("record 2 of the engram table of layer 3: past its 2 records")));
    EXPECT_THAT(records[2].status(),
                StatusIs(absl::StatusCode::kNotFound, HasSubstr("not a record of the engram")));
  }
  EXPECT_EQ((*store)->counters().records_read, 1u);
}

TEST_F(EngramStoreTest, ACorruptRecordIsRefusedNamingItAndNeverCached) {
  {
    const std::string path = (dir_.path() / "engram-L3.bin").string();
    const int fd = ::open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    char byte = 0;
    ASSERT_EQ(::pread(fd, &byte, 1, 4096 + 100), 1);
    byte ^= 0x10;
    ASSERT_EQ(::pwrite(fd, &byte, 1, 4096 + 100), 1);
    ::close(fd);
  }
  auto container = Open();
  ASSERT_NE(container, nullptr);
  auto store = EngramStore::Open(container, {});
  WARP_ASSERT_OK(store);
  const std::vector<EngramRow> rows = {{0, 16}};
  std::vector<std::byte> out(kRowBytes);
  for (int attempt = 0; attempt < 2; ++attempt) {  // the second reads it again: not cached
    EXPECT_THAT((*store)->Rows((*store)->Fetch(rows), out),
                StatusIs(absl::StatusCode::kDataLoss,
                         AllOf(HasSubstr("engram-L3.bin @4096"),
                               HasSubstr("record 1 of the engram table of layer 3"),
                               HasSubstr("checksum mismatch"))));
  }
  EXPECT_EQ((*store)->counters().records_read, 2u);
}

TEST_F(EngramStoreTest, ATableFileOfTheWrongSizeIsRefusedAtOpen) {
  std::filesystem::resize_file(dir_.path() / "engram-L3.bin", 4096);
  EXPECT_THAT(Container::Open(dir_.path()).status(),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("engram-L3.bin: size 4096"),
                             HasSubstr("2 records of 4096 bytes for 20 rows = 8192"))));
}

}  // namespace
}  // namespace warp
