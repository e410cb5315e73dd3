#include "common/format/container.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/crc32c.h"
#include "common/format/bank_format.h"
#include "common/format/container_writer.h"
#include "common/format/manifest.h"
#include "common/io/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tiny_container.h"

namespace warp {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::warp::testing::RecordByte;
using ::warp::testing::StatusIs;
using ::warp::testing::TempDir;
using ::warp::testing::TinyContainerOptions;
using ::warp::testing::WriteTinyContainer;

std::span<const std::byte> AsBytes(const std::string& bytes) {
  return std::as_bytes(std::span(bytes.data(), bytes.size()));
}

std::string ReadAll(const fs::path& path) {
  absl::StatusOr<std::string> contents = ReadFileToString(path);
  EXPECT_TRUE(contents.ok()) << contents.status();
  return contents.ok() ? *contents : std::string();
}

// Overwrites bytes [offset, offset + bytes.size()) of `path` in place.
void OverwriteBytes(const fs::path& path, uint64_t offset, const std::string& bytes) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(file.is_open()) << path;
  file.seekp(static_cast<std::streamoff>(offset));
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(file.good()) << path;
}

void WriteAll(const fs::path& path, const std::string& contents) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  ASSERT_TRUE(file.is_open()) << path;
  file.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  ASSERT_TRUE(file.good()) << path;
}

void ExpectExtentsEqual(const Extent& actual, const Extent& expected) {
  EXPECT_EQ(actual.offset, expected.offset);
  EXPECT_EQ(actual.bytes, expected.bytes);
}

void ExpectTensorsEqual(const TensorEntry& actual, const TensorEntry& expected) {
  SCOPED_TRACE(expected.name);
  EXPECT_EQ(actual.name, expected.name);
  EXPECT_EQ(actual.format, expected.format);
  EXPECT_EQ(actual.shape, expected.shape);
  ExpectExtentsEqual(actual.data, expected.data);
  ASSERT_EQ(actual.scale.has_value(), expected.scale.has_value());
  if (expected.scale) ExpectExtentsEqual(*actual.scale, *expected.scale);
  EXPECT_EQ(actual.crc32c, expected.crc32c);
}

void ExpectManifestsEqual(const Manifest& actual, const Manifest& expected) {
  EXPECT_EQ(actual.format_version, expected.format_version);
  EXPECT_EQ(actual.architecture, expected.architecture);
  EXPECT_EQ(actual.config, expected.config);
  EXPECT_EQ(actual.fingerprint, expected.fingerprint);
  EXPECT_EQ(actual.source, expected.source);
  ASSERT_EQ(actual.tokenizer.has_value(), expected.tokenizer.has_value());
  if (expected.tokenizer) {
    EXPECT_EQ(actual.tokenizer->files, expected.tokenizer->files);
    EXPECT_EQ(actual.tokenizer->chat_template, expected.tokenizer->chat_template);
  }
  EXPECT_EQ(actual.codebooks_file, expected.codebooks_file);
  EXPECT_EQ(actual.trunk_bytes, expected.trunk_bytes);
  ASSERT_EQ(actual.trunk.size(), expected.trunk.size());
  for (size_t i = 0; i < expected.trunk.size(); ++i) {
    ExpectTensorsEqual(actual.trunk[i], expected.trunk[i]);
  }
  ASSERT_EQ(actual.banks.size(), expected.banks.size());
  for (size_t i = 0; i < expected.banks.size(); ++i) {
    const BankEntry& a = actual.banks[i];
    const BankEntry& e = expected.banks[i];
    SCOPED_TRACE(e.file);
    EXPECT_EQ(a.layer, e.layer);
    EXPECT_EQ(a.file, e.file);
    EXPECT_EQ(a.num_experts, e.num_experts);
    EXPECT_EQ(a.record_bytes, e.record_bytes);
    EXPECT_EQ(a.payload_bytes, e.payload_bytes);
    ASSERT_EQ(a.matrices.size(), e.matrices.size());
    for (size_t j = 0; j < e.matrices.size(); ++j) ExpectTensorsEqual(a.matrices[j], e.matrices[j]);
  }
  ASSERT_EQ(actual.shard_map.has_value(), expected.shard_map.has_value());
  if (expected.shard_map) {
    EXPECT_EQ(actual.shard_map->num_shards, expected.shard_map->num_shards);
    EXPECT_EQ(actual.shard_map->shard_index, expected.shard_map->shard_index);
    EXPECT_EQ(actual.shard_map->held, expected.shard_map->held);
  }
}

// ---------------------------------------------------------------------------
// A freshly written tiny container reads back as written.

class ContainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Manifest> written = WriteTinyContainer(dir_.path());
    ASSERT_TRUE(written.ok()) << written.status();
    written_ = *std::move(written);
  }

  TempDir dir_;
  Manifest written_;
};

TEST_F(ContainerTest, OpenReturnsTheManifestThatWasWritten) {
  absl::StatusOr<std::unique_ptr<Container>> container = Container::Open(dir_.path());
  WARP_ASSERT_OK(container);
  const Manifest& m = (*container)->manifest();
  ExpectManifestsEqual(m, written_);

  EXPECT_EQ(m.format_version, kFormatVersion);
  EXPECT_EQ(m.architecture, "test");
  EXPECT_EQ(m.fingerprint, TinyContainerOptions{}.fingerprint);
  ASSERT_EQ(m.banks.size(), 2u);
  for (uint32_t i = 0; i < 2; ++i) {
    const BankEntry& bank = m.banks[i];
    EXPECT_EQ(bank.layer, i + 1);
    EXPECT_EQ(bank.file, BankFileName(i + 1));
    EXPECT_EQ(bank.num_experts, 4u);
    EXPECT_EQ(bank.record_bytes % kBankAlignment, 0u);
    EXPECT_GE(bank.record_bytes, bank.payload_bytes + kRecordFooterBytes);
    // Three f32 matrices of 8 x 32 elements, back to back.
    EXPECT_EQ(bank.payload_bytes, 3u * 8 * 32 * 4);
    ASSERT_EQ(bank.matrices.size(), 3u);
    for (const TensorEntry& matrix : bank.matrices) {
      EXPECT_EQ(matrix.data.offset % kSubTensorAlignment, 0u) << matrix.name;
      EXPECT_EQ(matrix.data.bytes, DataBytes(matrix.format, matrix.shape)) << matrix.name;
      EXPECT_FALSE(matrix.crc32c.has_value()) << matrix.name;
    }
    EXPECT_EQ((*container)->HeldExperts(bank), (std::vector<uint32_t>{0, 1, 2, 3}));
  }
  EXPECT_EQ(m.FindBank(0), nullptr);
  EXPECT_EQ(m.FindBank(2), &m.banks[1]);
}

TEST_F(ContainerTest, TrunkTensorsAreAlignedAndCarryTheirCrc) {
  absl::StatusOr<std::unique_ptr<Container>> container = Container::Open(dir_.path());
  WARP_ASSERT_OK(container);
  const Manifest& m = (*container)->manifest();
  const std::string trunk = ReadAll((*container)->TrunkPath());
  EXPECT_EQ(trunk.size(), m.trunk_bytes);
  ASSERT_EQ(m.trunk.size(), 2u);
  EXPECT_NE(m.FindTrunkTensor("lm_head.weight"), nullptr);
  EXPECT_EQ(m.FindTrunkTensor("no.such.tensor"), nullptr);
  for (const TensorEntry& tensor : m.trunk) {
    SCOPED_TRACE(tensor.name);
    EXPECT_EQ(tensor.data.offset % kBankAlignment, 0u);
    ASSERT_EQ(tensor.scale.has_value(), HasScale(tensor.format));
    ASSERT_TRUE(tensor.crc32c.has_value());
    uint32_t crc = Crc32c(AsBytes(trunk).subspan(tensor.data.offset, tensor.data.bytes));
    if (tensor.scale) {
      EXPECT_EQ(tensor.scale->offset % kBankAlignment, 0u);
      crc = Crc32cExtend(crc, AsBytes(trunk).subspan(tensor.scale->offset, tensor.scale->bytes));
    }
    EXPECT_EQ(*tensor.crc32c, crc);
  }
}

TEST_F(ContainerTest, RecordOffsetIsExpertTimesRecordBytes) {
  absl::StatusOr<std::unique_ptr<Container>> container = Container::Open(dir_.path());
  WARP_ASSERT_OK(container);
  for (const BankEntry& bank : (*container)->manifest().banks) {
    for (uint32_t expert = 0; expert < bank.num_experts; ++expert) {
      EXPECT_EQ((*container)->RecordOffset(bank.layer, expert), expert * bank.record_bytes);
    }
  }
}

TEST_F(ContainerTest, RecordOffsetIsNulloptForDenseLayerAndOutOfRangeExpert) {
  absl::StatusOr<std::unique_ptr<Container>> container = Container::Open(dir_.path());
  WARP_ASSERT_OK(container);
  EXPECT_EQ((*container)->RecordOffset(0, 0), std::nullopt);  // layer 0 is dense
  EXPECT_EQ((*container)->RecordOffset(3, 0), std::nullopt);  // past the last layer
  EXPECT_EQ((*container)->RecordOffset(1, 4), std::nullopt);  // 4 experts: 0..3
  EXPECT_EQ((*container)->RecordOffset(2, UINT32_MAX), std::nullopt);
}

TEST_F(ContainerTest, RecordsHoldPayloadZeroPaddingAndMatchingFooter) {
  absl::StatusOr<std::unique_ptr<Container>> container = Container::Open(dir_.path());
  WARP_ASSERT_OK(container);
  const Manifest& m = (*container)->manifest();
  for (const BankEntry& bank : m.banks) {
    const std::string file = ReadAll((*container)->BankPath(bank));
    ASSERT_EQ(file.size(), bank.record_bytes * bank.num_experts);
    for (uint32_t expert = 0; expert < bank.num_experts; ++expert) {
      SCOPED_TRACE(::testing::Message() << "layer " << bank.layer << " expert " << expert);
      const std::optional<uint64_t> offset = (*container)->RecordOffset(bank.layer, expert);
      ASSERT_TRUE(offset.has_value());
      std::span<const std::byte> record = AsBytes(file).subspan(*offset, bank.record_bytes);

      uint64_t payload_mismatches = 0;
      for (uint64_t i = 0; i < bank.payload_bytes; ++i) {
        payload_mismatches += record[i] != RecordByte(bank.layer, expert, i);
      }
      EXPECT_EQ(payload_mismatches, 0u);
      uint64_t nonzero_padding = 0;
      for (uint64_t i = bank.payload_bytes; i < bank.record_bytes - kRecordFooterBytes; ++i) {
        nonzero_padding += record[i] != std::byte{0};
      }
      EXPECT_EQ(nonzero_padding, 0u);

      const RecordFooter footer = DecodeFooter(record);
      EXPECT_EQ(footer.magic, kRecordMagic);
      EXPECT_EQ(footer.layer, bank.layer);
      EXPECT_EQ(footer.expert, expert);
      EXPECT_EQ(footer.payload_bytes, bank.payload_bytes);
      EXPECT_EQ(footer.fingerprint, m.fingerprint);
      EXPECT_EQ(footer.payload_crc32c, Crc32c(record.first(bank.payload_bytes)));

      WARP_EXPECT_OK(
          CheckRecord(record, (*container)->Expectation(bank.layer, expert), /*check_crc=*/true));
    }
  }
}

TEST_F(ContainerTest, CheckRecordRejectsFlippedPayloadByteAsChecksumMismatch) {
  absl::StatusOr<std::unique_ptr<Container>> container = Container::Open(dir_.path());
  WARP_ASSERT_OK(container);
  const BankEntry& bank = (*container)->manifest().banks[0];
  std::string file = ReadAll((*container)->BankPath(bank));
  file[2 * bank.record_bytes + 100] ^= 0x01;  // expert 2 of layer 1
  std::span<const std::byte> record =
      AsBytes(file).subspan(2 * bank.record_bytes, bank.record_bytes);
  const RecordExpectation expected = (*container)->Expectation(bank.layer, 2);
  EXPECT_THAT(CheckRecord(record, expected, /*check_crc=*/true),
              StatusIs(absl::StatusCode::kDataLoss, "expert 2 of layer 1: checksum mismatch"));
  // The footer itself is intact, so a footer-only check still passes.
  WARP_EXPECT_OK(CheckRecord(record, expected, /*check_crc=*/false));
}

// A payload digested a landed prefix at a time, in steps of any size (and
// prefixes told again or past the payload), is the CRC the footer holds.
TEST_F(ContainerTest, APayloadDigestedAsItLandsIsTheFootersCrc) {
  absl::StatusOr<std::unique_ptr<Container>> container = Container::Open(dir_.path());
  WARP_ASSERT_OK(container);
  const BankEntry& bank = (*container)->manifest().banks[0];
  std::string file = ReadAll((*container)->BankPath(bank));
  std::span<const std::byte> record = AsBytes(file).first(bank.record_bytes);
  const RecordExpectation expected = (*container)->Expectation(bank.layer, 0);
  for (uint64_t step : {uint64_t{1}, uint64_t{4096}, uint64_t{7000}, bank.record_bytes}) {
    PayloadDigest digest(record.first(expected.payload_bytes));
    for (uint64_t landed = 0; landed <= bank.record_bytes; landed += step) {
      digest.Landed(landed);
      digest.Landed(landed / 2);  // an older prefix changes nothing
    }
    const uint32_t crc = digest.Crc();
    EXPECT_EQ(crc, Crc32c(record.first(expected.payload_bytes))) << "steps of " << step;
    WARP_EXPECT_OK(CheckRecordAgainstCrc(record, expected, crc));
  }
  EXPECT_THAT(CheckRecordAgainstCrc(record, expected, 0x12345678u),
              StatusIs(absl::StatusCode::kDataLoss, "expert 0 of layer 1: checksum mismatch"));
  WARP_EXPECT_OK(CheckRecordAgainstCrc(record, expected, std::nullopt));  // the footer only
}

TEST_F(ContainerTest, CheckRecordRejectsRecordOfAnotherExpert) {
  absl::StatusOr<std::unique_ptr<Container>> container = Container::Open(dir_.path());
  WARP_ASSERT_OK(container);
  const BankEntry& bank = (*container)->manifest().banks[0];
  const std::string file = ReadAll((*container)->BankPath(bank));
  std::span<const std::byte> record_of_expert_0 = AsBytes(file).first(bank.record_bytes);
  EXPECT_THAT(
      CheckRecord(record_of_expert_0, (*container)->Expectation(bank.layer, 1),
                  /*check_crc=*/true),
      StatusIs(absl::StatusCode::kDataLoss, AllOf(HasSubstr("expert 1 of layer 1"),
                                                  HasSubstr("footer names expert 0 of layer 1"))));
}

TEST_F(ContainerTest, CheckRecordRejectsWrongFingerprintAndPayloadBytes) {
  absl::StatusOr<std::unique_ptr<Container>> container = Container::Open(dir_.path());
  WARP_ASSERT_OK(container);
  const BankEntry& bank = (*container)->manifest().banks[1];
  const std::string file = ReadAll((*container)->BankPath(bank));
  std::span<const std::byte> record = AsBytes(file).first(bank.record_bytes);

  RecordExpectation other_model = (*container)->Expectation(bank.layer, 0);
  other_model.fingerprint ^= 1;
  EXPECT_THAT(CheckRecord(record, other_model, /*check_crc=*/false),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("expert 0 of layer 2"), HasSubstr("fingerprint"))));

  RecordExpectation other_size = (*container)->Expectation(bank.layer, 0);
  other_size.payload_bytes -= 4;
  EXPECT_THAT(CheckRecord(record, other_size, /*check_crc=*/false),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("expert 0 of layer 2"), HasSubstr("payload_bytes"))));
}

// ---------------------------------------------------------------------------
// Manifest JSON encoding.

Manifest FullManifest() {
  Manifest m;
  m.architecture = "deepseek_v3";
  m.config = json{{"hidden_size", 7168}, {"n_routed_experts", 256}, {"rope", {{"theta", 1e4}}}};
  m.fingerprint = 0xfedcba9876543210ull;
  m.source = "synth --seed 7";
  m.tokenizer = TokenizerRef{.files = {"tokenizer.json", "tokenizer_config.json"},
                             .chat_template = "chat_template.jinja"};
  m.codebooks_file = "codebooks.bin";
  m.trunk_bytes = 3 * kBankAlignment;
  m.trunk.push_back(TensorEntry{.name = "model.embed_tokens.weight",
                                .format = TensorFormat::kBF16,
                                .shape = {16, 64},
                                .data = {0, 2048},
                                .crc32c = 0xdeadbeef});
  m.trunk.push_back(TensorEntry{.name = "lm_head.weight",
                                .format = TensorFormat::kQ4B32,
                                .shape = {16, 64},
                                .data = {4096, 512},
                                .scale = Extent{8192, 64},
                                .crc32c = 7});
  BankEntry bank;
  bank.layer = 3;
  bank.file = "experts-L3.bin";
  bank.num_experts = 4;
  bank.record_bytes = 8192;
  bank.payload_bytes = 4224;
  bank.matrices.push_back(TensorEntry{.name = "gate_proj",
                                      .format = TensorFormat::kF8E4M3B128,
                                      .shape = {64, 64},
                                      .data = {0, 4096},
                                      .scale = Extent{4096, 4}});
  bank.matrices.push_back(TensorEntry{
      .name = "down_proj", .format = TensorFormat::kF16, .shape = {32}, .data = {4160, 64}});
  m.banks.push_back(bank);
  bank.layer = 5;
  bank.file = "experts-L5.bin";
  m.banks.push_back(bank);
  m.shard_map = ShardMap{.num_shards = 3, .shard_index = 2, .held = {{3, {2, 3}}, {5, {0, 3}}}};
  return m;
}

TEST(ManifestJsonTest, EveryFieldSurvivesJsonRoundTrip) {
  const Manifest original = FullManifest();
  const std::string text = ManifestToJson(original).dump(1);
  absl::StatusOr<Manifest> parsed = ParseManifest(text, "m.warp/manifest.json");
  WARP_ASSERT_OK(parsed);
  ExpectManifestsEqual(*parsed, original);
  EXPECT_EQ(ManifestToJson(*parsed).dump(), ManifestToJson(original).dump());
}

TEST(ManifestJsonTest, OptionalFieldsAbsentSurviveJsonRoundTrip) {
  Manifest original = FullManifest();
  original.tokenizer.reset();
  original.codebooks_file.reset();
  original.shard_map.reset();
  const json encoded = ManifestToJson(original);
  EXPECT_TRUE(encoded["tokenizer"].is_null());
  EXPECT_TRUE(encoded["codebooks"].is_null());
  EXPECT_TRUE(encoded["shard_map"].is_null());
  absl::StatusOr<Manifest> parsed = ParseManifest(encoded.dump(), "m.warp/manifest.json");
  WARP_ASSERT_OK(parsed);
  ExpectManifestsEqual(*parsed, original);
}

TEST(ManifestJsonTest, FingerprintIsSixteenLowerCaseHexDigits) {
  EXPECT_EQ(FingerprintHex(0), "0000000000000000");
  EXPECT_EQ(FingerprintHex(0x0123456789abcdefull), "0123456789abcdef");
  EXPECT_EQ(FingerprintHex(UINT64_MAX), "ffffffffffffffff");
}

// ---------------------------------------------------------------------------
// Every validation error at Open, each provoked by editing a fresh tiny container.

class ContainerOpenErrorTest : public ContainerTest {
 protected:
  fs::path Path(const std::string& name) const { return dir_.path() / name; }
  fs::path ManifestPath() const { return Path(std::string(kManifestFile)); }

  // Parses manifest.json, applies `edit`, and writes it back.
  void EditManifest(const std::function<void(json&)>& edit) {
    json root = json::parse(ReadAll(ManifestPath()));
    edit(root);
    WriteAll(ManifestPath(), root.dump(1));
  }

  void ResizeFile(const std::string& name, int64_t delta) {
    const fs::path path = Path(name);
    fs::resize_file(path, static_cast<uint64_t>(static_cast<int64_t>(fs::file_size(path)) + delta));
  }

  absl::Status OpenStatus(Container::Options options = {}) {
    return Container::Open(dir_.path(), options).status();
  }
};

TEST_F(ContainerOpenErrorTest, MissingManifestIsNotFound) {
  fs::remove(ManifestPath());
  EXPECT_THAT(OpenStatus(), StatusIs(absl::StatusCode::kNotFound, HasSubstr("manifest.json")));
}

TEST_F(ContainerOpenErrorTest, MissingDirectoryIsNotFound) {
  EXPECT_THAT(Container::Open(Path("no-such.warp")).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no-such.warp")));
}

TEST_F(ContainerOpenErrorTest, MissingTrunkIsNotFound) {
  fs::remove(Path("trunk.bin"));
  EXPECT_THAT(OpenStatus(), StatusIs(absl::StatusCode::kNotFound, HasSubstr("trunk.bin")));
}

TEST_F(ContainerOpenErrorTest, MissingBankIsNotFound) {
  fs::remove(Path("experts-L1.bin"));
  EXPECT_THAT(OpenStatus(), StatusIs(absl::StatusCode::kNotFound, HasSubstr("experts-L1.bin")));
}

TEST_F(ContainerOpenErrorTest, TruncatedManifestIsMalformedJson) {
  const std::string text = ReadAll(ManifestPath());
  WriteAll(ManifestPath(), text.substr(0, text.size() / 2));
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("manifest.json"), HasSubstr("malformed JSON"))));
}

TEST_F(ContainerOpenErrorTest, EmptyManifestIsMalformedJson) {
  WriteAll(ManifestPath(), "");
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("manifest.json"), HasSubstr("malformed JSON"))));
}

TEST_F(ContainerOpenErrorTest, MissingFieldIsNamedByItsPath) {
  EditManifest([](json& root) { root["banks"][0].erase("record_bytes"); });
  EXPECT_THAT(OpenStatus(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     AllOf(HasSubstr("manifest.json"),
                                           HasSubstr("banks[0].record_bytes: missing"))));
}

TEST_F(ContainerOpenErrorTest, MissingNestedFieldIsNamedByItsPath) {
  EditManifest([](json& root) { root["trunk"]["tensors"][1]["scale"].erase("bytes"); });
  EXPECT_THAT(OpenStatus(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     AllOf(HasSubstr("manifest.json"),
                                           HasSubstr("trunk.tensors[1].scale.bytes: missing"))));
}

TEST_F(ContainerOpenErrorTest, StringWhereIntegerBelongsIsRejected) {
  EditManifest([](json& root) { root["banks"][1]["num_experts"] = "4"; });
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("manifest.json"),
                             HasSubstr("banks[1].num_experts: must be a non-negative integer"))));
}

TEST_F(ContainerOpenErrorTest, NegativeIntegerIsRejected) {
  EditManifest([](json& root) { root["trunk"]["bytes"] = -4096; });
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("manifest.json"),
                             HasSubstr("trunk.bytes: must be a non-negative integer"))));
}

TEST_F(ContainerOpenErrorTest, IntegerTooLargeFor32BitsIsRejected) {
  EditManifest([](json& root) { root["banks"][0]["layer"] = uint64_t{1} << 32; });
  EXPECT_THAT(OpenStatus(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("banks[0].layer: does not fit in 32 bits")));
}

TEST_F(ContainerOpenErrorTest, UnknownFormatVersionIsFailedPrecondition) {
  EditManifest([](json& root) { root["format_version"] = 99; });
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("manifest.json"), HasSubstr("format_version 99"))));
}

TEST_F(ContainerOpenErrorTest, BankShorterThanItsRecordsIsDataLoss) {
  ResizeFile("experts-L1.bin", -static_cast<int64_t>(kBankAlignment));
  EXPECT_THAT(
      OpenStatus(),
      StatusIs(absl::StatusCode::kDataLoss,
               AllOf(HasSubstr("experts-L1.bin"),
                     HasSubstr("size 12288 is not record_bytes 4096 x 4 experts = 16384"))));
}

TEST_F(ContainerOpenErrorTest, BankLongerThanItsRecordsIsDataLoss) {
  ResizeFile("experts-L1.bin", kBankAlignment);
  EXPECT_THAT(OpenStatus(), StatusIs(absl::StatusCode::kDataLoss,
                                     AllOf(HasSubstr("experts-L1.bin"), HasSubstr("size 20480"),
                                           HasSubstr("record_bytes"))));
}

TEST_F(ContainerOpenErrorTest, BankOffByOneByteIsDataLoss) {
  ResizeFile("experts-L2.bin", -1);
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("experts-L2.bin"), HasSubstr("record_bytes"))));
}

TEST_F(ContainerOpenErrorTest, TrunkOfWrongSizeIsDataLoss) {
  ResizeFile("trunk.bin", -1);
  EXPECT_THAT(OpenStatus(), StatusIs(absl::StatusCode::kDataLoss,
                                     AllOf(HasSubstr("trunk.bin"), HasSubstr("trunk.bytes"))));
}

TEST_F(ContainerOpenErrorTest, RecordBytesNotMultipleOf4096IsRejected) {
  EditManifest([](json& root) { root["banks"][0]["record_bytes"] = 5000; });
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("manifest.json"), HasSubstr("bank of layer 1"),
                             HasSubstr("record_bytes 5000"), HasSubstr("multiple of 4096"))));
}

TEST_F(ContainerOpenErrorTest, ZeroRecordBytesIsRejected) {
  EditManifest([](json& root) { root["banks"][1]["record_bytes"] = 0; });
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("bank of layer 2"), HasSubstr("record_bytes 0"))));
}

TEST_F(ContainerOpenErrorTest, PayloadLeavingNoRoomForFooterIsRejected) {
  EditManifest([](json& root) { root["banks"][0]["payload_bytes"] = 4096 - 31; });
  EXPECT_THAT(OpenStatus(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     AllOf(HasSubstr("manifest.json"),
                                           HasSubstr("payload_bytes 4065"), HasSubstr("footer"))));
}

TEST_F(ContainerOpenErrorTest, MisalignedTrunkTensorIsRejected) {
  EditManifest([](json& root) {
    json& offset = root["trunk"]["tensors"][1]["data"]["offset"];
    offset = offset.get<uint64_t>() + 8;
  });
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("manifest.json"), HasSubstr("trunk tensor lm_head.weight"),
                             HasSubstr("offset 4104 is not a multiple of 4096"))));
}

TEST_F(ContainerOpenErrorTest, MisalignedBankMatrixIsRejected) {
  EditManifest([](json& root) {
    json& offset = root["banks"][0]["matrices"][1]["data"]["offset"];
    offset = offset.get<uint64_t>() + 4;
  });
  EXPECT_THAT(OpenStatus(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     AllOf(HasSubstr("manifest.json"), HasSubstr("bank of layer 1"),
                                           HasSubstr("up_proj"),
                                           HasSubstr("offset 1028 is not a multiple of 64"))));
}

TEST_F(ContainerOpenErrorTest, ExtentBytesNotMatchingShapeIsRejected) {
  EditManifest([](json& root) { root["banks"][0]["matrices"][1]["shape"] = {16, 32}; });
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("manifest.json"), HasSubstr("up_proj"),
                             HasSubstr("1024 bytes, but its format and shape need 2048"))));
}

TEST_F(ContainerOpenErrorTest, ExtentBytesNotMatchingFormatIsRejected) {
  EditManifest([](json& root) { root["trunk"]["tensors"][0]["format"] = "bf16"; });
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("trunk tensor model.norm.weight"),
                             HasSubstr("128 bytes, but its format and shape need 64"))));
}

TEST_F(ContainerOpenErrorTest, VectorQuantizedTrunkTensorIsRejected) {
  // Codebooks belong to bank matrices: a vq3r trunk tensor has none to decode
  // with. lm_head [4, 32] as vq3r_b32: 8 codes of 12 bits a row, f16 scales.
  EditManifest([](json& root) {
    json& tensor = root["trunk"]["tensors"][1];
    tensor["format"] = "vq3r_b32";
    tensor["data"]["bytes"] = 4 * 8 * 3 / 2;
  });
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("manifest.json"), HasSubstr("trunk tensor lm_head.weight"),
                             HasSubstr("vq3r_b32, which only bank matrices may be"))));
}

TEST_F(ContainerOpenErrorTest, MatrixRunningPastPayloadIsRejected) {
  EditManifest([](json& root) { root["banks"][1]["matrices"][2]["data"]["offset"] = 2048 + 64; });
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("manifest.json"), HasSubstr("bank of layer 2"),
                             HasSubstr("down_proj"), HasSubstr("runs past the end at 3072"))));
}

TEST_F(ContainerOpenErrorTest, TrunkTensorRunningPastTrunkBytesIsRejected) {
  EditManifest([](json& root) { root["trunk"]["bytes"] = 8192; });
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("lm_head.weight scale"), HasSubstr("runs past the end"))));
}

TEST_F(ContainerOpenErrorTest, OverlappingMatricesAreRejected) {
  EditManifest([](json& root) { root["banks"][0]["matrices"][1]["data"]["offset"] = 1024 - 64; });
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("up_proj"), HasSubstr("overlaps the previous tensor"))));
}

// Extent ends are compared without overflow: offset + bytes may exceed 2^64.
TEST_F(ContainerOpenErrorTest, ExtentWhoseEndOverflowsIsRejected) {
  EditManifest([](json& root) {
    // Multiple of 64, and offset + 1024 bytes == 2^64 == 0 (mod 2^64).
    root["banks"][0]["matrices"][2]["data"]["offset"] = UINT64_MAX - 1023;
  });
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("runs past the end")));
}

// payload_bytes near 2^64 must not wrap past the footer check.
TEST_F(ContainerOpenErrorTest, PayloadBytesNearTwoToTheSixtyFourIsRejected) {
  EditManifest([](json& root) {
    root["banks"][0]["payload_bytes"] = UINT64_MAX - 16;
    root["banks"][0]["matrices"] = json::array();
  });
  EXPECT_THAT(OpenStatus({.check_footers = false}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("payload_bytes"), HasSubstr("footer"))));
}

// record_bytes x experts must not wrap to a small expected bank size.
TEST_F(ContainerOpenErrorTest, RecordBytesAboveTheFormatBoundAreRejected) {
  EditManifest([](json& root) { root["banks"][0]["record_bytes"] = uint64_t{1} << 62; });
  fs::resize_file(Path("experts-L1.bin"), 0);
  EXPECT_THAT(OpenStatus({.check_footers = false}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("bank of layer 1: record_bytes 4611686018427387904 is above")));
}

// Expert counts are bounded before any table is sized from them: 2^31 and
// 2^32-1 once ended in bad_alloc.
TEST_F(ContainerOpenErrorTest, HugeExpertCountsAreRejectedBeforeAllocation) {
  for (uint64_t count : {uint64_t{1} << 31, uint64_t{UINT32_MAX}}) {
    SCOPED_TRACE(count);
    EditManifest([&](json& root) { root["banks"][0]["num_experts"] = count; });
    EXPECT_THAT(OpenStatus({.check_footers = false}),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("manifest.json"),
                               HasSubstr(absl::StrCat("num_experts ", count, " is above")))));
  }
}

// A count within the bound but beyond the bank file is a size mismatch on disk.
TEST_F(ContainerOpenErrorTest, ExpertCountBeyondTheBankFileIsRejected) {
  EditManifest([](json& root) { root["banks"][0]["num_experts"] = 60000; });
  EXPECT_THAT(OpenStatus({.check_footers = false}),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("experts-L1.bin"), HasSubstr("x 60000 experts"))));
}

// The CRC of every trunk tensor is mandatory in format version 1: without it
// a flipped trunk byte would pass verify.
TEST_F(ContainerOpenErrorTest, TrunkTensorWithoutCrcIsRejected) {
  EditManifest([](json& root) { root["trunk"]["tensors"][0].erase("crc32c"); });
  EXPECT_THAT(OpenStatus({.check_footers = false}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("manifest.json"), HasSubstr("crc32c: missing"))));
}

// A shape whose element count overflows is refused, not sized at 0 bytes.
TEST_F(ContainerOpenErrorTest, ShapeWhoseSizeOverflowsIsRejected) {
  EditManifest([](json& root) {
    json& tensor = root["trunk"]["tensors"][0];
    tensor["shape"] = {uint64_t{1} << 32, uint64_t{1} << 32};
    tensor["data"]["bytes"] = 0;
  });
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("model.norm.weight")));
}

// Exactly 16 hex digits: no 0x prefix, sign or whitespace (SimpleHexAtoi allows them).
TEST_F(ContainerOpenErrorTest, FingerprintWithPrefixOrSignIsRejected) {
  for (const char* spelling : {"0x0123456789abcd", "+123456789abcdef", " 123456789abcdef"}) {
    SCOPED_TRACE(spelling);
    EditManifest([&](json& root) { root["fingerprint"] = spelling; });
    EXPECT_THAT(OpenStatus({.check_footers = false}),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not 16 hex digits")));
  }
}

TEST_F(ContainerOpenErrorTest, DifferentManifestFingerprintIsDataLoss) {
  EditManifest([](json& root) { root["fingerprint"] = "0123456789abcdee"; });
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("experts-L1.bin"), HasSubstr("expert 0 of layer 1"),
                             HasSubstr("fingerprint 0123456789abcdef differs from the "
                                       "manifest's 0123456789abcdee"))));
}

TEST_F(ContainerOpenErrorTest, FingerprintThatIsNotHexIsRejected) {
  EditManifest([](json& root) { root["fingerprint"] = "xyz"; });
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("manifest.json"),
                             HasSubstr("fingerprint: \"xyz\" is not 16 hex digits"))));
}

TEST_F(ContainerOpenErrorTest, FingerprintOfSixteenNonHexCharactersIsRejected) {
  EditManifest([](json& root) { root["fingerprint"] = "0123456789abcdeg"; });
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not 16 hex digits")));
}

TEST_F(ContainerOpenErrorTest, FingerprintAsNumberIsRejected) {
  EditManifest([](json& root) { root["fingerprint"] = 81985529216486895u; });
  EXPECT_THAT(OpenStatus(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("fingerprint: must be a string")));
}

TEST_F(ContainerOpenErrorTest, CorruptFooterMagicOfLastRecordIsDataLoss) {
  // Default tiny container: 4 experts of record_bytes 4096 per bank.
  OverwriteBytes(Path("experts-L1.bin"), 4 * 4096 - kRecordFooterBytes, "XXXX");
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("experts-L1.bin"), HasSubstr("expert 3 of layer 1"),
                             HasSubstr("bad footer magic"))));
}

TEST_F(ContainerOpenErrorTest, FooterOfWrongExpertInFirstRecordIsDataLoss) {
  // Swap records 0 and 1 of layer 2: both footers are well formed, but name the wrong expert.
  const std::string bank = ReadAll(Path("experts-L2.bin"));
  WriteAll(Path("experts-L2.bin"),
           bank.substr(4096, 4096) + bank.substr(0, 4096) + bank.substr(8192));
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("experts-L2.bin"), HasSubstr("expert 0 of layer 2"),
                             HasSubstr("footer names expert 1 of layer 2"))));
}

TEST_F(ContainerOpenErrorTest, UnknownTensorFormatIsRejected) {
  EditManifest([](json& root) { root["banks"][0]["matrices"][0]["format"] = "f64"; });
  EXPECT_THAT(
      OpenStatus(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("manifest.json"),
                     HasSubstr("banks[0].matrices[0].format: unknown tensor format \"f64\""))));
}

TEST_F(ContainerOpenErrorTest, ShapeTheFormatCannotHoldIsRejected) {
  EditManifest([](json& root) { root["trunk"]["tensors"][1]["shape"] = {4, 30}; });
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("trunk.tensors[1].shape"),
                             HasSubstr("q8_b32 needs columns divisible by 32, has 30"))));
}

TEST_F(ContainerOpenErrorTest, BankFileWithSlashIsRejected) {
  EditManifest([](json& root) { root["banks"][0]["file"] = "../elsewhere/experts-L1.bin"; });
  EXPECT_THAT(OpenStatus(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     AllOf(HasSubstr("manifest.json"), HasSubstr("bank of layer 1"),
                                           HasSubstr("must be a plain file name"))));
}

TEST_F(ContainerOpenErrorTest, BankFileDotDotIsRejected) {
  EditManifest([](json& root) { root["banks"][1]["file"] = ".."; });
  EXPECT_THAT(OpenStatus(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be a plain file name")));
}

TEST_F(ContainerOpenErrorTest, BanksOutOfLayerOrderAreRejected) {
  EditManifest([](json& root) { std::swap(root["banks"][0], root["banks"][1]); });
  EXPECT_THAT(
      OpenStatus(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("manifest.json"),
                     HasSubstr("banks[1]: layer 1 is not above the previous bank's layer"))));
}

TEST_F(ContainerOpenErrorTest, WithoutFooterChecksCorruptFooterIsAccepted) {
  OverwriteBytes(Path("experts-L1.bin"), 4 * 4096 - kRecordFooterBytes, "XXXX");
  absl::StatusOr<std::unique_ptr<Container>> container =
      Container::Open(dir_.path(), {.check_footers = false});
  WARP_ASSERT_OK(container);
  EXPECT_EQ((*container)->RecordOffset(1, 3), 3u * 4096);
}

TEST_F(ContainerOpenErrorTest, WithoutFooterChecksSizesAreStillChecked) {
  ResizeFile("experts-L1.bin", -static_cast<int64_t>(kBankAlignment));
  EXPECT_THAT(OpenStatus({.check_footers = false}),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("experts-L1.bin")));
}

// ---------------------------------------------------------------------------
// ContainerWriter

TEST(ContainerWriterTest, CreateRefusesDirectoryThatHoldsAContainer) {
  TempDir dir;
  WARP_ASSERT_OK(WriteTinyContainer(dir.path()));
  Manifest header;
  header.architecture = "test";
  EXPECT_THAT(ContainerWriter::Create(dir.path(), header, {}).status(),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("already holds a container")));
  // The existing container is untouched.
  WARP_EXPECT_OK(Container::Open(dir.path()));
}

TEST(ContainerWriterTest, LayoutBankAlignsSubTensorsAndRoundsRecordTo4096) {
  const BankEntry bank =
      LayoutBank(7, 16,
                 {{.name = "gate_proj", .format = TensorFormat::kQ4B32, .shape = {10, 64}},
                  {.name = "up_proj", .format = TensorFormat::kF8E4M3B128, .shape = {130, 3}},
                  {.name = "down_proj", .format = TensorFormat::kBF16, .shape = {64, 5}}});
  EXPECT_EQ(bank.layer, 7u);
  EXPECT_EQ(bank.file, "experts-L7.bin");
  EXPECT_EQ(bank.num_experts, 16u);
  ASSERT_EQ(bank.matrices.size(), 3u);
  uint64_t end = 0;
  for (const TensorEntry& matrix : bank.matrices) {
    SCOPED_TRACE(matrix.name);
    EXPECT_EQ(matrix.data.offset % kSubTensorAlignment, 0u);
    EXPECT_GE(matrix.data.offset, end);
    EXPECT_LT(matrix.data.offset, end + kSubTensorAlignment);
    EXPECT_EQ(matrix.data.bytes, DataBytes(matrix.format, matrix.shape));
    end = matrix.data.offset + matrix.data.bytes;
    ASSERT_EQ(matrix.scale.has_value(), HasScale(matrix.format));
    if (matrix.scale) {
      EXPECT_EQ(matrix.scale->offset % kSubTensorAlignment, 0u);
      EXPECT_EQ(matrix.scale->bytes, ScaleBytes(matrix.format, matrix.shape));
      end = matrix.scale->offset + matrix.scale->bytes;
    }
  }
  EXPECT_EQ(bank.payload_bytes, end);
  EXPECT_EQ(bank.record_bytes, RecordBytesFor(end));
  EXPECT_EQ(bank.record_bytes % kBankAlignment, 0u);
}

}  // namespace
}  // namespace warp
