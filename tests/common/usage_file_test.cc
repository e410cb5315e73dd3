#include "common/format/usage_file.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/crc32c.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::warp::testing::StatusIs;
using ::warp::testing::TempDir;

constexpr std::string_view kSource = "m.warp/usage.warp";
constexpr size_t kHeaderBytes = 32;
constexpr size_t kEntryBytes = 16;

UsageTable SampleTable() {
  return UsageTable{.fingerprint = 0x0123456789abcdefull,
                    .tokens = 1000,
                    .entries = {{1, 0, 17}, {1, 3, 5}, {2, 1, 900}, {7, 255, 1ull << 40}}};
}

// Replaces the trailing CRC so the bytes pass the checksum again after an edit.
void Reseal(std::string& bytes) {
  const uint32_t crc = Crc32c(std::string_view(bytes).substr(0, bytes.size() - 4));
  std::memcpy(bytes.data() + bytes.size() - 4, &crc, sizeof(crc));
}

// ---------------------------------------------------------------------------
// Encoding

TEST(UsageFileTest, EncodeThenDecodeRoundTrips) {
  const UsageTable table = SampleTable();
  const std::string bytes = EncodeUsage(table);
  EXPECT_EQ(bytes.size(), kHeaderBytes + 4 * kEntryBytes + 4);
  absl::StatusOr<UsageTable> decoded = DecodeUsage(bytes, kSource);
  WARP_ASSERT_OK(decoded);
  EXPECT_EQ(decoded->fingerprint, table.fingerprint);
  EXPECT_EQ(decoded->tokens, table.tokens);
  EXPECT_EQ(decoded->entries, table.entries);
}

TEST(UsageFileTest, EmptyTableRoundTrips) {
  const UsageTable table{.fingerprint = 42, .tokens = 0, .entries = {}};
  const std::string bytes = EncodeUsage(table);
  EXPECT_EQ(bytes.size(), kHeaderBytes + 4);
  absl::StatusOr<UsageTable> decoded = DecodeUsage(bytes, kSource);
  WARP_ASSERT_OK(decoded);
  EXPECT_EQ(decoded->fingerprint, 42u);
  EXPECT_THAT(decoded->entries, IsEmpty());
}

TEST(UsageFileTest, HeaderIsLittleEndianMagicVersionFingerprintTokensCount) {
  const std::string bytes = EncodeUsage(SampleTable());
  EXPECT_EQ(bytes.substr(0, 4), "WXUS");
  uint32_t version = 0;
  uint64_t fingerprint = 0, tokens = 0, num_entries = 0;
  std::memcpy(&version, bytes.data() + 4, 4);
  std::memcpy(&fingerprint, bytes.data() + 8, 8);
  std::memcpy(&tokens, bytes.data() + 16, 8);
  std::memcpy(&num_entries, bytes.data() + 24, 8);
  EXPECT_EQ(version, kUsageVersion);
  EXPECT_EQ(fingerprint, 0x0123456789abcdefull);
  EXPECT_EQ(tokens, 1000u);
  EXPECT_EQ(num_entries, 4u);
  uint32_t crc = 0;
  std::memcpy(&crc, bytes.data() + bytes.size() - 4, 4);
  EXPECT_EQ(crc, Crc32c(std::string_view(bytes).substr(0, bytes.size() - 4)));
}

// ---------------------------------------------------------------------------
// Decode errors: each is DataLoss naming the source.

TEST(UsageFileTest, TooShortIsDataLoss) {
  const std::string bytes = EncodeUsage(UsageTable{});
  EXPECT_THAT(DecodeUsage(bytes.substr(0, bytes.size() - 1), kSource),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("m.warp/usage.warp"), HasSubstr("too short"))));
  EXPECT_THAT(DecodeUsage("", kSource),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("too short")));
}

TEST(UsageFileTest, BadMagicIsDataLoss) {
  std::string bytes = EncodeUsage(SampleTable());
  bytes[0] = 'Z';
  EXPECT_THAT(DecodeUsage(bytes, kSource),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("m.warp/usage.warp"), HasSubstr("bad magic"))));
}

TEST(UsageFileTest, WrongVersionIsDataLoss) {
  std::string bytes = EncodeUsage(SampleTable());
  bytes[4] = 2;
  Reseal(bytes);
  EXPECT_THAT(
      DecodeUsage(bytes, kSource),
      StatusIs(absl::StatusCode::kDataLoss,
               AllOf(HasSubstr("m.warp/usage.warp"), HasSubstr("version 2 is not supported"))));
}

TEST(UsageFileTest, ExtraTrailingByteIsSizeMismatch) {
  std::string bytes = EncodeUsage(SampleTable());
  bytes.push_back('\0');
  EXPECT_THAT(
      DecodeUsage(bytes, kSource),
      StatusIs(absl::StatusCode::kDataLoss, AllOf(HasSubstr("m.warp/usage.warp"),
                                                  HasSubstr("size 101 does not match 4 entries"))));
}

TEST(UsageFileTest, MissingEntryIsSizeMismatch) {
  std::string bytes = EncodeUsage(SampleTable());
  bytes.erase(kHeaderBytes, kEntryBytes);
  EXPECT_THAT(DecodeUsage(bytes, kSource),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("size 84 does not match 4 entries")));
}

TEST(UsageFileTest, HugeEntryCountIsSizeMismatchNotOverflow) {
  std::string bytes = EncodeUsage(SampleTable());
  const uint64_t huge = (UINT64_MAX - kHeaderBytes) / kEntryBytes;
  std::memcpy(bytes.data() + 24, &huge, sizeof(huge));
  Reseal(bytes);
  EXPECT_THAT(DecodeUsage(bytes, kSource),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("does not match")));
}

TEST(UsageFileTest, FlippedByteIsChecksumMismatch) {
  const std::string good = EncodeUsage(SampleTable());
  // Every byte past the magic, version and count fields is covered only by the CRC.
  for (size_t i : {size_t{8}, size_t{16}, kHeaderBytes, kHeaderBytes + 9, good.size() - 1}) {
    SCOPED_TRACE(i);
    std::string bytes = good;
    bytes[i] ^= 0x10;
    EXPECT_THAT(DecodeUsage(bytes, kSource),
                StatusIs(absl::StatusCode::kDataLoss,
                         AllOf(HasSubstr("m.warp/usage.warp"), HasSubstr("checksum mismatch"))));
  }
}

TEST(UsageFileTest, OutOfOrderEntriesAreDataLoss) {
  UsageTable table = SampleTable();
  std::swap(table.entries[1], table.entries[2]);  // (2,1) before (1,3)
  EXPECT_THAT(DecodeUsage(EncodeUsage(table), kSource),
              StatusIs(absl::StatusCode::kDataLoss, AllOf(HasSubstr("m.warp/usage.warp"),
                                                          HasSubstr("entry 2 is out of order"))));
}

TEST(UsageFileTest, DuplicateEntriesAreDataLoss) {
  UsageTable table = SampleTable();
  table.entries[1] = {1, 0, 3};  // same key as entries[0]
  EXPECT_THAT(DecodeUsage(EncodeUsage(table), kSource),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("entry 1 is out of order")));
}

// ---------------------------------------------------------------------------
// UsageTable

TEST(UsageTableTest, MergeSumsCountsAndTokensAndKeepsSortOrder) {
  UsageTable a{.fingerprint = 9, .tokens = 100, .entries = {{0, 1, 5}, {1, 0, 7}, {3, 2, 1}}};
  const UsageTable b{.fingerprint = 9,
                     .tokens = 50,
                     .entries = {{0, 0, 2}, {1, 0, 3}, {2, 5, 4}, {3, 2, 10}, {4, 0, 6}}};
  a.Merge(b);
  EXPECT_EQ(a.fingerprint, 9u);
  EXPECT_EQ(a.tokens, 150u);
  EXPECT_THAT(a.entries,
              ElementsAre(ExpertUsage{0, 0, 2}, ExpertUsage{0, 1, 5}, ExpertUsage{1, 0, 10},
                          ExpertUsage{2, 5, 4}, ExpertUsage{3, 2, 11}, ExpertUsage{4, 0, 6}));
  // The merged table is still a valid file.
  WARP_EXPECT_OK(DecodeUsage(EncodeUsage(a), kSource));
}

TEST(UsageTableTest, MergeIntoEmptyCopiesAndMergeOfEmptyKeeps) {
  const UsageTable sample = SampleTable();
  UsageTable empty{.fingerprint = sample.fingerprint};
  empty.Merge(sample);
  EXPECT_EQ(empty.entries, sample.entries);
  EXPECT_EQ(empty.tokens, sample.tokens);

  UsageTable kept = SampleTable();
  kept.Merge(UsageTable{.fingerprint = sample.fingerprint, .tokens = 1});
  EXPECT_EQ(kept.entries, sample.entries);
  EXPECT_EQ(kept.tokens, sample.tokens + 1);
}

TEST(UsageTableTest, MergeWithItselfDoublesEverything) {
  UsageTable table = SampleTable();
  table.Merge(SampleTable());
  EXPECT_EQ(table.tokens, 2000u);
  ASSERT_EQ(table.entries.size(), 4u);
  for (size_t i = 0; i < table.entries.size(); ++i) {
    EXPECT_EQ(table.entries[i].count, 2 * SampleTable().entries[i].count);
  }
}

TEST(UsageTableTest, HottestOrdersByCountThenLayerThenExpert) {
  const UsageTable table{
      .entries = {{0, 1, 9}, {0, 3, 5}, {1, 0, 5}, {1, 1, 9}, {2, 0, 9}, {2, 7, 20}}};
  EXPECT_THAT(table.Hottest(),
              ElementsAre(ExpertUsage{2, 7, 20}, ExpertUsage{0, 1, 9}, ExpertUsage{1, 1, 9},
                          ExpertUsage{2, 0, 9}, ExpertUsage{0, 3, 5}, ExpertUsage{1, 0, 5}));
  // The table itself keeps its key order.
  EXPECT_EQ(table.entries.front(), (ExpertUsage{0, 1, 9}));
}

TEST(UsageTableTest, HottestOfEmptyTableIsEmpty) { EXPECT_THAT(UsageTable{}.Hottest(), IsEmpty()); }

// ---------------------------------------------------------------------------
// Files

TEST(UsageFileTest, WriteThenReadRoundTripsThroughAFile) {
  TempDir dir;
  const std::filesystem::path path = dir / std::string(kUsageFile);
  const UsageTable table = SampleTable();
  WARP_ASSERT_OK(WriteUsageFile(path, table));
  absl::StatusOr<UsageTable> read = ReadUsageFile(path);
  WARP_ASSERT_OK(read);
  EXPECT_EQ(read->fingerprint, table.fingerprint);
  EXPECT_EQ(read->tokens, table.tokens);
  EXPECT_EQ(read->entries, table.entries);
}

TEST(UsageFileTest, WriteReplacesAnExistingFile) {
  TempDir dir;
  const std::filesystem::path path = dir / std::string(kUsageFile);
  WARP_ASSERT_OK(WriteUsageFile(path, SampleTable()));
  const UsageTable smaller{.fingerprint = 1, .tokens = 2, .entries = {{3, 4, 5}}};
  WARP_ASSERT_OK(WriteUsageFile(path, smaller));
  absl::StatusOr<UsageTable> read = ReadUsageFile(path);
  WARP_ASSERT_OK(read);
  EXPECT_EQ(read->fingerprint, 1u);
  EXPECT_THAT(read->entries, ElementsAre(ExpertUsage{3, 4, 5}));
}

TEST(UsageFileTest, ReadOfMissingFileIsNotFound) {
  TempDir dir;
  EXPECT_THAT(ReadUsageFile(dir / "absent.warp"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("absent.warp")));
}

TEST(UsageFileTest, ReadOfCorruptFileNamesThePath) {
  TempDir dir;
  const std::filesystem::path path = dir / std::string(kUsageFile);
  std::string bytes = EncodeUsage(SampleTable());
  bytes[20] ^= 1;
  {
    std::FILE* file = std::fopen(path.c_str(), "wb");
    ASSERT_NE(file, nullptr);
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), file), bytes.size());
    std::fclose(file);
  }
  EXPECT_THAT(ReadUsageFile(path),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(path.string()), HasSubstr("checksum mismatch"))));
}

}  // namespace
}  // namespace warp
