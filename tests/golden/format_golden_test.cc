// Pins docs/FORMAT.md to the bytes the code writes: the worked example of
// the document is regenerated here and compared block by block. A change to
// the format must change both, and the version rule of FORMAT.md#versioning.

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/format/container.h"
#include "common/format/container_writer.h"
#include "common/format/usage_file.h"
#include "common/io/aligned_buffer.h"
#include "common/io/file.h"
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

}  // namespace
}  // namespace warp
