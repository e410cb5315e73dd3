// Pins docs/FORMAT.md to the bytes the code writes: the worked example of
// the document is regenerated here and compared block by block. A change to
// the format must change both, and the version rule of FORMAT.md#versioning.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/format/container.h"
#include "common/format/container_writer.h"
#include "common/format/usage_file.h"
#include "common/io/aligned_buffer.h"
#include "common/io/file.h"
#include "common/kernels/matrix_view.h"
#include "gtest/gtest.h"
#include "tests/testing/golden_doc.h"
#include "tests/testing/hex_dump.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp {
namespace {

using ::warp::testing::FormatDoc;
using ::warp::testing::GoldenBlock;

void FillFloats(std::span<std::byte> out, std::initializer_list<float> values) {
  std::memcpy(out.data(), std::data(values), values.size() * sizeof(float));
}

// The worked example of FORMAT.md: one bank (layer 3) of 2 experts whose
// f32 matrices are gate [1, 4], up [1, 4], down [4, 1].
Manifest WriteExample(const std::filesystem::path& dir) {
  Manifest header;
  header.architecture = "example";
  header.config = {{"hidden_size", 4}};
  header.fingerprint = 0x0123456789abcdefull;
  header.source = "docs/FORMAT.md worked example";
  auto writer = ContainerWriter::Create(dir, header, {});
  EXPECT_TRUE(writer.ok());
  auto ones = [](uint64_t, std::span<std::byte> out) { FillFloats(out, {1, 1, 1, 1}); };
  EXPECT_TRUE(
      (*writer)
          ->AddTrunkTensor(
              {.name = "model.norm.weight", .format = TensorFormat::kF32, .shape = {4}}, ones, ones)
          .ok());
  const BankEntry bank =
      LayoutBank(3, 2,
                 {{.name = "gate_proj", .format = TensorFormat::kF32, .shape = {1, 4}},
                  {.name = "up_proj", .format = TensorFormat::kF32, .shape = {1, 4}},
                  {.name = "down_proj", .format = TensorFormat::kF32, .shape = {4, 1}}});
  EXPECT_TRUE((*writer)->BeginBank(bank).ok());
  for (uint32_t expert = 0; expert < 2; ++expert) {
    const float k = static_cast<float>(expert + 1);
    std::span<std::byte> record = (*writer)->NextRecord();
    std::memset(record.data(), 0, record.size());
    FillFloats(record.subspan(bank.matrices[0].data.offset), {k, 2 * k, 3 * k, 4 * k});
    FillFloats(record.subspan(bank.matrices[1].data.offset), {-k, -2 * k, -3 * k, -4 * k});
    FillFloats(record.subspan(bank.matrices[2].data.offset),
               {0.5f * k, 0.25f * k, 0.125f * k, 0.0625f * k});
    (*writer)->CommitRecord();
  }
  EXPECT_TRUE((*writer)->EndBank().ok());
  EXPECT_TRUE((*writer)->Finish().ok());
  return (*writer)->manifest();
}

class FormatGoldenTest : public ::testing::Test {
 protected:
  void SetUp() override { manifest_ = WriteExample(dir_ / "example.warp"); }

  warp::testing::TempDir dir_;
  Manifest manifest_;
  std::string doc_ = FormatDoc();
};

TEST_F(FormatGoldenTest, ExampleOpens) { WARP_EXPECT_OK(Container::Open(dir_ / "example.warp")); }

TEST_F(FormatGoldenTest, BankHexDumpMatchesTheDoc) {
  auto bank = ReadFileToString(dir_ / "example.warp" / "experts-L3.bin");
  WARP_ASSERT_OK(bank);
  ASSERT_EQ(bank->size(), 2 * 4096u);
  const std::string dump = warp::testing::HexDump(std::as_bytes(std::span(*bank)), 0);
  EXPECT_EQ(GoldenBlock(doc_, "bank-hexdump"), dump) << "docs/FORMAT.md block:\n" << dump;
}

TEST_F(FormatGoldenTest, BankEntryJsonMatchesTheDoc) {
  const std::string entry = ManifestToJson(manifest_)["banks"][0].dump(1) + "\n";
  EXPECT_EQ(GoldenBlock(doc_, "bank-entry"), entry) << "docs/FORMAT.md block:\n" << entry;
}

TEST_F(FormatGoldenTest, TrunkEntryJsonMatchesTheDoc) {
  const std::string entry = ManifestToJson(manifest_)["trunk"].dump(1) + "\n";
  EXPECT_EQ(GoldenBlock(doc_, "trunk-entry"), entry) << "docs/FORMAT.md block:\n" << entry;
}

TEST_F(FormatGoldenTest, UsageHexDumpMatchesTheDoc) {
  UsageTable table{
      .fingerprint = 0x0123456789abcdefull, .tokens = 56, .entries = {{3, 0, 40}, {3, 1, 16}}};
  const std::string bytes = EncodeUsage(table);
  const std::string dump = warp::testing::HexDump(std::as_bytes(std::span(bytes)), 0);
  EXPECT_EQ(GoldenBlock(doc_, "usage-hexdump"), dump) << "docs/FORMAT.md block:\n" << dump;
}

// The engram example of FORMAT.md#engram-llayerbin: a table of layer 1 with
// two rows of 33 bytes (32 E4M3 codes, one E8M0 scale): 1.0 x 2^0 and 2.0 x 2^1.
TEST(EngramGoldenTest, EngramHexDumpMatchesTheDoc) {
  warp::testing::TempDir dir;
  Manifest header{.architecture = "example",
                  .config = {{"hidden_size", 4}},
                  .fingerprint = 0x0123456789abcdefull,
                  .source = "docs/FORMAT.md engram example"};
  auto writer = ContainerWriter::Create(dir / "engram.warp", header, {});
  WARP_ASSERT_OK(writer);
  auto ones = [](uint64_t, std::span<std::byte> out) { FillFloats(out, {1, 1, 1, 1}); };
  WARP_ASSERT_OK((*writer)->AddTrunkTensor(
      {.name = "model.norm.weight", .format = TensorFormat::kF32, .shape = {4}}, ones, ones));
  WARP_ASSERT_OK((*writer)->BeginEngramTable(
      {.layer = 1, .file = "engram-L1.bin", .rows = 2, .row_bytes = 33}));
  std::span<std::byte> record = (*writer)->NextRecord();
  std::memset(record.data(), 0, record.size());
  std::memset(record.data(), 0x38, 32);       // row 0: E4M3 1.0 ...
  record[32] = std::byte{0x7f};               // ... x 2^(127 - 127)
  std::memset(record.data() + 33, 0x40, 32);  // row 1: E4M3 2.0 ...
  record[65] = std::byte{0x80};               // ... x 2^(128 - 127)
  (*writer)->CommitRecord();
  WARP_ASSERT_OK((*writer)->EndBank());
  WARP_ASSERT_OK((*writer)->Finish());
  WARP_ASSERT_OK(Container::Open(dir / "engram.warp"));
  auto table = ReadFileToString(dir / "engram.warp" / "engram-L1.bin");
  WARP_ASSERT_OK(table);
  ASSERT_EQ(table->size(), 4096u);
  const std::string dump = warp::testing::HexDump(std::as_bytes(std::span(*table)), 0);
  EXPECT_EQ(GoldenBlock(FormatDoc(), "engram-hexdump"), dump) << "docs/FORMAT.md block:\n"
                                                                << dump;
}

// The mxfp4_b32 example of FORMAT.md#tensor-formats: its bytes, and the values
// DequantizeRow (which every kernel matches bit for bit) gives them.
TEST(TensorFormatGoldenTest, Mxfp4ExampleMatchesTheDoc) {
  constexpr uint64_t kRows = 2, kCols = 32;
  std::vector<std::byte> data(DataBytes(TensorFormat::kMxfp4B32, {kRows, kCols}));
  std::vector<std::byte> scale(ScaleBytes(TensorFormat::kMxfp4B32, {kRows, kCols}));
  ASSERT_EQ(data.size(), 32u);
  ASSERT_EQ(scale.size(), 2u);
  for (int i = 0; i < 16; ++i) {
    const int low = (2 * i) % 16, high = (2 * i + 1) % 16;  // codes 0..15, twice
    data[i] = std::byte{static_cast<uint8_t>(low | high << 4)};
    data[16 + i] = std::byte{static_cast<uint8_t>(high | low << 4)};
  }
  scale[0] = std::byte{0x7f};
  scale[1] = std::byte{0x81};
  const kernels::MatrixView view{.format = TensorFormat::kMxfp4B32,
                                           .rows = kRows,
                                           .cols = kCols,
                                           .data = data.data(),
                                           .scale = scale.data()};
  std::string text =
      "data\n" + warp::testing::HexDump(data, 0) + "scale\n" + warp::testing::HexDump(scale, 0);
  std::vector<float> values(kCols);
  for (uint64_t row = 0; row < kRows; ++row) {
    kernels::DequantizeRow(view, row, values);
    text += "row " + std::to_string(row) + ":";
    for (uint64_t col = 0; col < kCols; ++col) {
      char value[32];
      std::snprintf(value, sizeof(value), " %g", values[col]);
      text += (col == 16 ? "\n      " : "") + std::string(value);
    }
    text += "\n";
  }
  EXPECT_EQ(GoldenBlock(FormatDoc(), "mxfp4-example"), text) << "docs/FORMAT.md block:\n" << text;
}

// The ggml block examples of FORMAT.md#ggml-block-formats: one 32-column row
// of each, its bytes, and the values DequantizeRow gives them.
TEST(TensorFormatGoldenTest, GgmlBlockExamplesMatchTheDoc) {
  std::string text;
  auto row = [&](TensorFormat format, std::vector<uint8_t> bytes) {
    const std::vector<std::byte> data(reinterpret_cast<const std::byte*>(bytes.data()),
                                      reinterpret_cast<const std::byte*>(bytes.data()) + bytes.size());
    ASSERT_EQ(data.size(), DataBytes(format, {1, 32}));
    const kernels::MatrixView view{
        .format = format, .rows = 1, .cols = 32, .data = data.data()};
    std::vector<float> values(32);
    kernels::DequantizeRow(view, 0, values);
    text += std::string(TensorFormatName(format)) + "\n" + warp::testing::HexDump(data, 0);
    for (uint64_t col = 0; col < 32; ++col) {
      char value[32];
      std::snprintf(value, sizeof(value), " %g", values[col]);
      text += (col % 16 == 0 ? (col ? "\n      " : "values:") : "") + std::string(value);
    }
    text += "\n";
  };
  std::vector<uint8_t> q8 = {0x00, 0x38};  // d = 0.5
  for (int i = 0; i < 32; ++i) q8.push_back(static_cast<uint8_t>(i - 16));
  row(TensorFormat::kGgmlQ8_0, q8);
  std::vector<uint8_t> q4 = {0x00, 0x40};  // d = 2
  for (int i = 0; i < 16; ++i) q4.push_back(static_cast<uint8_t>(i | (15 - i) << 4));
  row(TensorFormat::kGgmlQ4_0, q4);
  std::vector<uint8_t> mxfp4 = {0x80};  // e = 128: half scale 2^0
  for (int i = 0; i < 16; ++i) mxfp4.push_back(static_cast<uint8_t>(i | (15 - i) << 4));
  row(TensorFormat::kGgmlMxfp4, mxfp4);
  EXPECT_EQ(GoldenBlock(FormatDoc(), "ggml-blocks-example"), text)
      << "docs/FORMAT.md block:\n" << text;
}

}  // namespace
}  // namespace warp
