#include "common/format/manifest.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/format/bank_format.h"
#include "common/format/container.h"
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
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::warp::testing::RecordByte;
using ::warp::testing::StatusIs;
using ::warp::testing::TempDir;
using ::warp::testing::WriteTinyContainer;

constexpr std::string_view kSource = "m.warp/manifest.json";

// A small valid manifest (one bank of 4 experts), as JSON to edit.
json ValidManifestJson() {
  Manifest m;
  m.architecture = "test";
  m.config = json{{"num_experts", 4}};
  m.fingerprint = 0x0123456789abcdefull;
  m.trunk_bytes = 4096;
  m.trunk.push_back(TensorEntry{.name = "model.norm.weight",
                                .format = TensorFormat::kF32,
                                .shape = {32},
                                .data = {0, 128},
                                .crc32c = 0});
  BankEntry bank;
  bank.layer = 1;
  bank.file = "experts-L1.bin";
  bank.num_experts = 4;
  bank.record_bytes = 4096;
  bank.payload_bytes = 1024;
  bank.matrices.push_back(TensorEntry{
      .name = "gate_proj", .format = TensorFormat::kF32, .shape = {8, 32}, .data = {0, 1024}});
  m.banks.push_back(bank);
  return ManifestToJson(m);
}

absl::StatusOr<Manifest> Parse(const json& root) { return ParseManifest(root.dump(), kSource); }

// ---------------------------------------------------------------------------
// ParseManifest

TEST(ParseManifestTest, ValidManifestParses) {
  absl::StatusOr<Manifest> manifest = Parse(ValidManifestJson());
  WARP_ASSERT_OK(manifest);
  EXPECT_EQ(manifest->fingerprint, 0x0123456789abcdefull);
  EXPECT_FALSE(manifest->shard_map.has_value());
  EXPECT_FALSE(manifest->tokenizer.has_value());
  EXPECT_FALSE(manifest->codebooks_file.has_value());
}

TEST(ParseManifestTest, TopLevelArrayIsRejected) {
  EXPECT_THAT(ParseManifest("[1, 2, 3]", kSource),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("m.warp/manifest.json"),
                             HasSubstr("top level: must be an object"))));
}

TEST(ParseManifestTest, TopLevelStringIsRejected) {
  EXPECT_THAT(ParseManifest("\"warp\"", kSource),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("top level")));
}

TEST(ParseManifestTest, MalformedJsonNamesSourceAndByte) {
  EXPECT_THAT(ParseManifest("{\"format_version\": 1,", kSource),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("m.warp/manifest.json: malformed JSON at byte"))));
}

TEST(ParseManifestTest, ErrorsNameSourceThenFieldPath) {
  json root = ValidManifestJson();
  root["banks"][0].erase("payload_bytes");
  EXPECT_THAT(Parse(root), StatusIs(absl::StatusCode::kInvalidArgument,
                                    "m.warp/manifest.json: banks[0].payload_bytes: missing"));
}

TEST(ParseManifestTest, BankThatIsNotAnObjectIsRejected) {
  json root = ValidManifestJson();
  root["banks"].push_back(7);
  EXPECT_THAT(Parse(root), StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("banks[1]: must be an object")));
}

TEST(ParseManifestTest, ConfigThatIsNotAnObjectIsRejected) {
  json root = ValidManifestJson();
  root["config"] = json::array();
  EXPECT_THAT(Parse(root),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("config: must be an object")));
}

TEST(ParseManifestTest, ShapeWithNegativeDimensionIsRejected) {
  json root = ValidManifestJson();
  root["trunk"]["tensors"][0]["shape"] = {-32};
  EXPECT_THAT(Parse(root), StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("trunk.tensors[0].shape: must hold non-negative")));
}

TEST(ParseManifestTest, ShapeWithZeroDimensionIsRejected) {
  json root = ValidManifestJson();
  root["banks"][0]["matrices"][0]["shape"] = {8, 0};
  EXPECT_THAT(
      Parse(root),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("banks[0].matrices[0].shape: tensor gate_proj: shape has a zero")));
}

TEST(ParseManifestTest, ScaledFormatWithoutScaleIsRejected) {
  json root = ValidManifestJson();
  root["banks"][0]["matrices"][0]["format"] = "q8_b32";
  EXPECT_THAT(Parse(root), StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("banks[0].matrices[0].scale: missing")));
}

TEST(ParseManifestTest, TokenizerFilesMustBeStrings) {
  json root = ValidManifestJson();
  root["tokenizer"] = {{"files", {"tokenizer.json", 3}}};
  EXPECT_THAT(Parse(root), StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("tokenizer.files: must hold strings")));
}

TEST(ParseManifestTest, TokenizerWithoutChatTemplateHasEmptyTemplate) {
  json root = ValidManifestJson();
  root["tokenizer"] = {{"files", {"tokenizer.json"}}, {"chat_template", nullptr}};
  absl::StatusOr<Manifest> manifest = Parse(root);
  WARP_ASSERT_OK(manifest);
  ASSERT_TRUE(manifest->tokenizer.has_value());
  EXPECT_THAT(manifest->tokenizer->files, ElementsAre("tokenizer.json"));
  EXPECT_EQ(manifest->tokenizer->chat_template, "");
}

TEST(ParseManifestTest, AbsentOptionalFieldsAreAccepted) {
  json root = ValidManifestJson();
  root.erase("source");
  root.erase("tokenizer");
  root.erase("codebooks");
  root.erase("shard_map");
  absl::StatusOr<Manifest> manifest = Parse(root);
  WARP_ASSERT_OK(manifest);
  EXPECT_EQ(manifest->source, "");
  EXPECT_FALSE(manifest->shard_map.has_value());
}

TEST(ParseManifestTest, ShardMapParses) {
  json root = ValidManifestJson();
  root["shard_map"] = {{"num_shards", 2},
                       {"shard_index", 1},
                       {"held", {{{"layer", 1}, {"experts", {0, 2, 3}}}}}};
  absl::StatusOr<Manifest> manifest = Parse(root);
  WARP_ASSERT_OK(manifest);
  ASSERT_TRUE(manifest->shard_map.has_value());
  EXPECT_EQ(manifest->shard_map->num_shards, 2u);
  EXPECT_EQ(manifest->shard_map->shard_index, 1u);
  EXPECT_EQ(manifest->shard_map->held, (ExpertsByLayer{{1, {0, 2, 3}}}));
  EXPECT_THAT(manifest->shard_map->HeldExperts(1), ElementsAre(0, 2, 3));
  EXPECT_THAT(manifest->shard_map->HeldExperts(2), IsEmpty());
}

TEST(ParseManifestTest, FirstFormatOwnerIsReadAsTheExpertsHeldInEveryLayer) {
  json root = ValidManifestJson();
  root["shard_map"] = {{"num_shards", 2}, {"shard_index", 1}, {"owner", {0, 1, 0, 1}}};
  absl::StatusOr<Manifest> manifest = Parse(root);
  WARP_ASSERT_OK(manifest);
  EXPECT_EQ(manifest->shard_map->held, (ExpertsByLayer{{1, {1, 3}}}));
  // Written back in the current form.
  EXPECT_EQ(ManifestToJson(*manifest)["shard_map"]["held"],
            json::parse(R"([{"layer": 1, "experts": [1, 3]}])"));
}

TEST(ParseManifestTest, BadHeldListsAreRejectedByField) {
  auto with_held = [](json held) {
    json root = ValidManifestJson();
    root["shard_map"] = {{"num_shards", 2}, {"shard_index", 0}, {"held", std::move(held)}};
    return Parse(root);
  };
  EXPECT_THAT(with_held({{{"layer", 1}, {"experts", {2, 1}}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("shard_map.held[0].experts: must be increasing expert numbers")));
  EXPECT_THAT(with_held({{{"layer", 1}, {"experts", {1, 1}}}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be increasing")));
  EXPECT_THAT(with_held({{{"layer", 1}, {"experts", {4}}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("bank of layer 1: shard_map.held names expert 4, the bank has 4")));
  EXPECT_THAT(with_held({{{"layer", 7}, {"experts", {0}}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("shard_map.held: layer 7 has no bank")));
  EXPECT_THAT(with_held({{{"layer", 1}, {"experts", {0}}}, {{"layer", 1}, {"experts", {1}}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("shard_map.held[1].layer: 1 is listed twice")));
  EXPECT_THAT(with_held({1}), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("shard_map.held[0]: must be an object")));
}

TEST(ParseManifestTest, ShardIndexNotBelowNumShardsIsRejected) {
  json root = ValidManifestJson();
  root["shard_map"] = {{"num_shards", 2}, {"shard_index", 2}, {"owner", {0, 1, 0, 1}}};
  EXPECT_THAT(Parse(root),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("m.warp/manifest.json"),
                             HasSubstr("shard_map.shard_index: 2 is not below num_shards 2"))));
}

TEST(ParseManifestTest, ZeroShardsIsRejected) {
  json root = ValidManifestJson();
  root["shard_map"] = {{"num_shards", 0}, {"shard_index", 0}, {"owner", json::array()}};
  EXPECT_THAT(Parse(root),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("shard_map.shard_index: 0 is not below num_shards 0")));
}

TEST(ParseManifestTest, OwnerNamingUnknownShardIsRejected) {
  json root = ValidManifestJson();
  root["shard_map"] = {{"num_shards", 2}, {"shard_index", 0}, {"owner", {0, 1, 2, 1}}};
  EXPECT_THAT(Parse(root),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("shard_map.owner: must hold shard indices below num_shards")));
}

// ---------------------------------------------------------------------------
// ExpertsHeld and lookups

TEST(ExpertsHeldTest, UnshardedHoldsEveryExpert) {
  BankEntry bank;
  bank.num_experts = 6;
  EXPECT_EQ(ExpertsHeld(bank, std::nullopt), 6u);
}

TEST(ExpertsHeldTest, ShardHoldsTheExpertsListedForTheBanksLayer) {
  BankEntry bank;
  bank.layer = 2;
  bank.num_experts = 5;
  const ShardMap map{.num_shards = 3, .shard_index = 0, .held = {{2, {0, 3, 4}}, {3, {1}}}};
  EXPECT_EQ(ExpertsHeld(bank, map), 3u);
  bank.layer = 3;
  EXPECT_EQ(ExpertsHeld(bank, map), 1u);
  bank.layer = 4;
  EXPECT_EQ(ExpertsHeld(bank, map), 0u);
}

TEST(ManifestLookupTest, FindBankAndFindTrunkTensorReturnNullWhenAbsent) {
  absl::StatusOr<Manifest> manifest = Parse(ValidManifestJson());
  WARP_ASSERT_OK(manifest);
  EXPECT_EQ(manifest->FindBank(1), &manifest->banks[0]);
  EXPECT_EQ(manifest->FindBank(0), nullptr);
  EXPECT_EQ(manifest->FindTrunkTensor("model.norm.weight"), &manifest->trunk[0]);
  EXPECT_EQ(manifest->FindTrunkTensor("lm_head.weight"), nullptr);
}

// ---------------------------------------------------------------------------
// Container over a sharded directory, built from an unsharded tiny container.

std::string ReadAll(const fs::path& path) {
  absl::StatusOr<std::string> contents = ReadFileToString(path);
  EXPECT_TRUE(contents.ok()) << contents.status();
  return contents.ok() ? *contents : std::string();
}

void WriteAll(const fs::path& path, const std::string& contents) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  ASSERT_TRUE(file.is_open()) << path;
  file.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  ASSERT_TRUE(file.good()) << path;
}

class ShardedContainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Manifest> written = WriteTinyContainer(full_.path());
    ASSERT_TRUE(written.ok()) << written.status();
    full_manifest_ = *std::move(written);
  }

  // Makes shard `shard_index` of `owner` in shard_.path(): the trunk, each bank
  // holding only the owned experts' records (copied from the full container, so
  // footers keep their true expert numbers), and the manifest with a shard_map.
  void MakeShard(const std::vector<uint32_t>& owner, uint32_t num_shards, uint32_t shard_index) {
    fs::copy_file(full_.path() / kTrunkFile, shard_.path() / kTrunkFile,
                  fs::copy_options::overwrite_existing);
    for (const BankEntry& bank : full_manifest_.banks) {
      const std::string full_bank = ReadAll(full_.path() / bank.file);
      std::string shard_bank;
      for (uint32_t expert = 0; expert < bank.num_experts; ++expert) {
        if (owner[expert] != shard_index) continue;
        shard_bank += full_bank.substr(expert * bank.record_bytes, bank.record_bytes);
      }
      WriteAll(shard_.path() / bank.file, shard_bank);
    }
    Manifest manifest = full_manifest_;
    manifest.shard_map = ShardMap{.num_shards = num_shards, .shard_index = shard_index};
    for (const BankEntry& bank : full_manifest_.banks) {
      std::vector<uint32_t>& held = manifest.shard_map->held[bank.layer];
      for (uint32_t expert = 0; expert < bank.num_experts; ++expert) {
        if (owner[expert] == shard_index) held.push_back(expert);
      }
    }
    WriteAll(shard_.path() / kManifestFile, ManifestToJson(manifest).dump(1));
  }

  TempDir full_;
  TempDir shard_;
  Manifest full_manifest_;
};

TEST_F(ShardedContainerTest, ShardHoldsOnlyItsExpertsInFileOrder) {
  MakeShard({0, 1, 0, 1}, 2, 0);
  absl::StatusOr<std::unique_ptr<Container>> container = Container::Open(shard_.path());
  WARP_ASSERT_OK(container);
  const Manifest& m = (*container)->manifest();
  ASSERT_TRUE(m.shard_map.has_value());
  EXPECT_EQ(m.shard_map->shard_index, 0u);
  ASSERT_EQ(m.banks.size(), 2u);
  const uint64_t record_bytes = m.banks[0].record_bytes;
  for (const BankEntry& bank : m.banks) {
    SCOPED_TRACE(bank.file);
    EXPECT_THAT((*container)->HeldExperts(bank), ElementsAre(0, 2));
    EXPECT_EQ(ExpertsHeld(bank, m.shard_map), 2u);
    EXPECT_EQ(fs::file_size((*container)->BankPath(bank)), 2 * bank.record_bytes);
  }
  EXPECT_EQ((*container)->RecordOffset(1, 0), 0u);
  EXPECT_EQ((*container)->RecordOffset(1, 2), record_bytes);
  EXPECT_EQ((*container)->RecordOffset(1, 1), std::nullopt);
  EXPECT_EQ((*container)->RecordOffset(1, 3), std::nullopt);
  EXPECT_EQ((*container)->RecordOffset(2, 2), record_bytes);
  EXPECT_EQ((*container)->RecordOffset(1, 4), std::nullopt);
}

TEST_F(ShardedContainerTest, HeldRecordsAtTheirOffsetsAreThoseExperts) {
  MakeShard({0, 1, 0, 1}, 2, 1);
  absl::StatusOr<std::unique_ptr<Container>> container = Container::Open(shard_.path());
  WARP_ASSERT_OK(container);
  for (const BankEntry& bank : (*container)->manifest().banks) {
    EXPECT_THAT((*container)->HeldExperts(bank), ElementsAre(1, 3));
    const std::string file = ReadAll((*container)->BankPath(bank));
    for (uint32_t expert : {1u, 3u}) {
      SCOPED_TRACE(::testing::Message() << "layer " << bank.layer << " expert " << expert);
      const std::optional<uint64_t> offset = (*container)->RecordOffset(bank.layer, expert);
      ASSERT_TRUE(offset.has_value());
      std::span<const std::byte> record =
          std::as_bytes(std::span(file.data(), file.size())).subspan(*offset, bank.record_bytes);
      WARP_EXPECT_OK(
          CheckRecord(record, (*container)->Expectation(bank.layer, expert), /*check_crc=*/true));
      EXPECT_EQ(record[5], RecordByte(bank.layer, expert, 5));
    }
  }
}

TEST_F(ShardedContainerTest, ShardHoldingNoExpertsHasEmptyBanks) {
  MakeShard({0, 0, 0, 0}, 2, 1);
  absl::StatusOr<std::unique_ptr<Container>> container = Container::Open(shard_.path());
  WARP_ASSERT_OK(container);
  for (const BankEntry& bank : (*container)->manifest().banks) {
    EXPECT_THAT((*container)->HeldExperts(bank), IsEmpty());
    for (uint32_t expert = 0; expert < bank.num_experts; ++expert) {
      EXPECT_EQ((*container)->RecordOffset(bank.layer, expert), std::nullopt);
    }
  }
}

TEST_F(ShardedContainerTest, BankHoldingEveryExpertIsTooLongForTheShard) {
  MakeShard({0, 1, 0, 1}, 2, 0);
  fs::copy_file(full_.path() / "experts-L2.bin", shard_.path() / "experts-L2.bin",
                fs::copy_options::overwrite_existing);
  EXPECT_THAT(Container::Open(shard_.path()).status(),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("experts-L2.bin"),
                             HasSubstr("record_bytes 4096 x 2 experts = 8192"))));
}

TEST_F(ShardedContainerTest, RecordsOfAnotherShardAreDataLoss) {
  // Shard 1's map over shard 0's bank files: the first record's footer names expert 0.
  MakeShard({0, 1, 0, 1}, 2, 0);
  json root = json::parse(ReadAll(shard_.path() / kManifestFile));
  root["shard_map"]["shard_index"] = 1;
  root["shard_map"]["held"] = json::parse(
      R"([{"layer": 1, "experts": [1, 3]}, {"layer": 2, "experts": [1, 3]}])");
  WriteAll(shard_.path() / kManifestFile, root.dump(1));
  EXPECT_THAT(Container::Open(shard_.path()).status(),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("experts-L1.bin"), HasSubstr("expert 1 of layer 1"),
                             HasSubstr("footer names expert 0 of layer 1"))));
}

TEST_F(ShardedContainerTest, FirstFormatOwnerShorterThanBankIsRejected) {
  MakeShard({0, 1, 0, 1}, 2, 0);
  json root = json::parse(ReadAll(shard_.path() / kManifestFile));
  root["shard_map"].erase("held");
  root["shard_map"]["owner"] = {0, 1, 0};
  WriteAll(shard_.path() / kManifestFile, root.dump(1));
  EXPECT_THAT(Container::Open(shard_.path()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("manifest.json"),
                             HasSubstr("shard_map.owner: names 3 experts, the bank of layer 1 4"))));
}

}  // namespace
}  // namespace warp

namespace warp {
namespace {

// expertd serve --shard I/N: a view of an unsharded container.
TEST_F(ShardedContainerTest, RestrictToShardServesEveryNthExpertInPlace) {
  auto container = Container::Open(full_.path());
  WARP_ASSERT_OK(container);
  WARP_ASSERT_OK((*container)->RestrictToShard(1, 2));
  const BankEntry& bank = (*container)->manifest().banks[0];
  EXPECT_THAT((*container)->HeldExperts(bank), ElementsAre(1, 3));
  // Records stay where they are in the full bank file.
  EXPECT_EQ((*container)->RecordOffset(bank.layer, 3), 3 * bank.record_bytes);
  EXPECT_EQ((*container)->RecordOffset(bank.layer, 2), std::nullopt);
  EXPECT_EQ((*container)->shard(), std::make_pair(1u, 2u));
}

TEST_F(ShardedContainerTest, RestrictToShardRefusesABadIndexOrAShard) {
  auto full = Container::Open(full_.path());
  WARP_ASSERT_OK(full);
  EXPECT_THAT((*full)->RestrictToShard(2, 2), StatusIs(absl::StatusCode::kInvalidArgument,
                                                       HasSubstr("shard 2/2: need 0 <= I < N")));
  MakeShard({0, 1, 0, 1}, 2, 0);
  auto shard = Container::Open(shard_.path());
  WARP_ASSERT_OK(shard);
  EXPECT_THAT((*shard)->RestrictToShard(0, 2),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("is already shard 0 of 2; --shard applies to a whole model")));
}

}  // namespace
}  // namespace warp
