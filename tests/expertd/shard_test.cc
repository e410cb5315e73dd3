#include "expertd/shard.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/format/container.h"
#include "common/format/usage_file.h"
#include "expertd/shard_verify.h"
#include "expertd/verify.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tiny_container.h"

namespace warp::expertd {
namespace {

namespace fs = std::filesystem;

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::warp::testing::StatusIs;

constexpr uint32_t kLayers = 2;  // banks are layers 1 and 2
constexpr uint32_t kExperts = 5;

std::string ReadBytes(const fs::path& path, uint64_t offset, uint64_t bytes) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::string out(bytes, '\0');
  in.read(out.data(), static_cast<std::streamsize>(bytes));
  EXPECT_EQ(static_cast<uint64_t>(in.gcount()), bytes) << path;
  return out;
}

// XORs one byte of `path` with 0x01.
void FlipByte(const fs::path& path, uint64_t offset) {
  const int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << path;
  unsigned char byte;
  ASSERT_EQ(::pread(fd, &byte, 1, offset), 1);
  byte ^= 0x01;
  ASSERT_EQ(::pwrite(fd, &byte, 1, offset), 1);
  ::close(fd);
}

class ShardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto manifest =
        warp::testing::WriteTinyContainer(model_, {.num_layers = kLayers, .num_experts = kExperts});
    WARP_ASSERT_OK(manifest);
    manifest_ = *manifest;
  }

  std::vector<fs::path> Dirs(int n, const std::string& prefix = "s") const {
    std::vector<fs::path> dirs;
    for (int i = 0; i < n; ++i) dirs.push_back(dir_ / absl::StrCat(prefix, i));
    return dirs;
  }

  uint64_t RecordBytes() const { return manifest_.banks[0].record_bytes; }

  warp::testing::TempDir dir_;
  fs::path model_ = dir_ / "m.warp";
  Manifest manifest_;
};

class ShardCountTest : public ShardTest, public ::testing::WithParamInterface<int> {};

TEST_P(ShardCountTest, EachShardIsAContainerHoldingExpertModuloNVerbatim) {
  const uint32_t n = GetParam();
  const std::vector<fs::path> dirs = Dirs(n);
  auto report = ShardContainer(model_, dirs, {});
  WARP_ASSERT_OK(report);
  EXPECT_EQ(report->bytes_copied, kLayers * kExperts * RecordBytes());
  for (uint32_t s = 0; s < n; ++s) {
    SCOPED_TRACE(dirs[s].string());
    auto shard = Container::Open(dirs[s]);
    WARP_ASSERT_OK(shard);
    const Manifest& m = (*shard)->manifest();
    EXPECT_EQ(m.fingerprint, manifest_.fingerprint);
    EXPECT_EQ(m.architecture, manifest_.architecture);
    EXPECT_EQ(m.config, manifest_.config);
    EXPECT_EQ(m.source, manifest_.source);
    // The trunk stays with the original.
    EXPECT_EQ(m.trunk_bytes, 0u);
    EXPECT_THAT(m.trunk, IsEmpty());
    EXPECT_EQ(fs::file_size(dirs[s] / "trunk.bin"), 0u);
    ASSERT_TRUE(m.shard_map.has_value());
    EXPECT_EQ(m.shard_map->num_shards, n);
    EXPECT_EQ(m.shard_map->shard_index, s);
    std::vector<uint32_t> want;
    for (uint32_t e = s; e < kExperts; e += n) want.push_back(e);
    EXPECT_EQ(m.shard_map->held, (ExpertsByLayer{{1, want}, {2, want}}));
    EXPECT_EQ(report->records[s], kLayers * want.size());
    ASSERT_EQ(m.banks.size(), kLayers);
    for (const BankEntry& bank : m.banks) {
      EXPECT_THAT((*shard)->HeldExperts(bank), ElementsAreArray(want));
      for (uint32_t expert : want) {
        const std::optional<uint64_t> offset = (*shard)->RecordOffset(bank.layer, expert);
        ASSERT_TRUE(offset.has_value());
        EXPECT_EQ(ReadBytes((*shard)->BankPath(bank), *offset, RecordBytes()),
                  ReadBytes(model_ / bank.file, expert * RecordBytes(), RecordBytes()))
            << "expert " << expert << " of layer " << bank.layer;
      }
    }
    auto verified = VerifyContainer(dirs[s], {});
    WARP_ASSERT_OK(verified);
    EXPECT_THAT(verified->problems, IsEmpty());
    EXPECT_EQ(verified->records_checked, kLayers * want.size());
  }
  auto set = VerifyShardSet(model_, dirs, {});
  WARP_ASSERT_OK(set);
  EXPECT_THAT(set->problems, IsEmpty());
  EXPECT_EQ(set->records_checked, 2 * kLayers * kExperts);  // the model's and the shards'
  EXPECT_EQ(set->trunk_tensors_checked, 2u);
}

INSTANTIATE_TEST_SUITE_P(TwoAndThree, ShardCountTest, ::testing::Values(2, 3));

TEST_F(ShardTest, WeightsThreeToOneGiveShardZeroThreeQuarters) {
  warp::testing::TempDir dir;
  const fs::path model = dir / "m8.warp";
  WARP_ASSERT_OK(warp::testing::WriteTinyContainer(model, {.num_experts = 8}));
  const std::vector<fs::path> dirs = {dir / "big", dir / "small"};
  auto report = ShardContainer(model, dirs, {.weights = {3, 1}});
  WARP_ASSERT_OK(report);
  EXPECT_THAT(report->records, ElementsAre(2 * 6, 2 * 2));
  auto big = Container::Open(dirs[0]);
  WARP_ASSERT_OK(big);
  EXPECT_THAT((*big)->HeldExperts((*big)->manifest().banks[0]), ElementsAre(0, 2, 3, 4, 6, 7));
  auto set = VerifyShardSet(model, dirs, {});
  WARP_ASSERT_OK(set);
  EXPECT_THAT(set->problems, IsEmpty());
}

TEST_F(ShardTest, FlippedShardByteIsAChecksumMismatchAndDiffersFromTheOriginal) {
  const std::vector<fs::path> dirs = Dirs(2);
  WARP_ASSERT_OK(ShardContainer(model_, dirs, {}));
  // Shard 1 holds experts 1 and 3: expert 3 is in slot 1.
  const fs::path bank = dirs[1] / "experts-L2.bin";
  FlipByte(bank, RecordBytes() + 100);
  const std::string where = absl::StrCat(" (", bank.string(), " @", RecordBytes(), ")");
  for (uint64_t chunk : {uint64_t{64} << 20, uint64_t{4096}}) {
    SCOPED_TRACE(chunk);
    auto report = VerifyShardSet(model_, dirs, {.read_chunk_bytes = chunk});
    WARP_ASSERT_OK(report);
    EXPECT_THAT(report->problems,
                ElementsAre("expert 3 of layer 2: checksum mismatch" + where,
                            "expert 3 of layer 2: differs from the original" + where));
    EXPECT_EQ(report->records_checked, 2 * kLayers * kExperts);
  }
}

TEST_F(ShardTest, DifferentPaddingIsCaughtOnlyByTheComparison) {
  const std::vector<fs::path> dirs = Dirs(2);
  WARP_ASSERT_OK(ShardContainer(model_, dirs, {}));
  FlipByte(dirs[0] / "experts-L1.bin", RecordBytes() - 64);  // expert 0, padding
  auto report = VerifyShardSet(model_, dirs, {});
  WARP_ASSERT_OK(report);
  EXPECT_THAT(report->problems,
              ElementsAre(HasSubstr("expert 0 of layer 1: differs from the original")));
}

TEST_F(ShardTest, ManyLargeRecordsAreWrittenInSeveralPiecesAndVerifiedInSmallChunks) {
  warp::testing::TempDir dir;
  const fs::path model = dir / "big.warp";
  // 400 records of 100 KiB: each shard's 20 MiB goes out in several 8 MiB writes.
  auto manifest =
      warp::testing::WriteTinyContainer(model, {.num_layers = 1, .num_experts = 400, .rows = 256});
  WARP_ASSERT_OK(manifest);
  const std::vector<fs::path> dirs = {dir / "a", dir / "b"};
  WARP_ASSERT_OK(ShardContainer(model, dirs, {}));
  const uint64_t record_bytes = manifest->banks[0].record_bytes;
  EXPECT_EQ(fs::file_size(dirs[1] / "experts-L1.bin"), 200 * record_bytes);
  EXPECT_EQ(ReadBytes(dirs[1] / "experts-L1.bin", 150 * record_bytes, record_bytes),
            ReadBytes(model / "experts-L1.bin", 301 * record_bytes, record_bytes));
  FlipByte(dirs[1] / "experts-L1.bin", 150 * record_bytes + 3);  // expert 301
  auto report = VerifyShardSet(model, dirs, {.read_chunk_bytes = 7 * record_bytes});
  WARP_ASSERT_OK(report);
  EXPECT_THAT(report->problems,
              ElementsAre(HasSubstr("expert 301 of layer 1: checksum mismatch"),
                          HasSubstr("expert 301 of layer 1: differs from the original")));
  EXPECT_EQ(report->records_checked, 800u);
}

TEST_F(ShardTest, UsageSpreadsHotExpertsAndReplicatesTheHottest) {
  // Layer 1: experts 3 and 4 are hot; layer 2: expert 0. With room for two
  // replicas a shard, the four hottest get a second copy.
  const fs::path usage_file = dir_ / "usage.warp";
  UsageTable usage{.fingerprint = manifest_.fingerprint, .tokens = 100};
  usage.entries = {{1, 0, 1}, {1, 3, 50}, {1, 4, 40}, {2, 0, 60}, {2, 1, 2}};
  WARP_ASSERT_OK(WriteUsageFile(usage_file, usage));
  const std::vector<fs::path> dirs = Dirs(2);
  auto report = ShardContainer(
      model_, dirs, {.usage_file = usage_file, .replica_bytes = 2 * RecordBytes()});
  WARP_ASSERT_OK(report);
  EXPECT_THAT(report->replicated, ElementsAre(4, 4));
  EXPECT_EQ(report->records[0] + report->records[1], kLayers * kExperts + 4);
  // Layer 1 by heat: 3 to s0, 4 and 0 to s1 (40 < 50, then s1 is full), 1
  // and 2 to s0. Replicas, hottest first: layer 2's 0 and layer 1's 3 to s1,
  // layer 1's 4 and layer 2's 1 to s0; layer 1's 0 finds no room.
  auto s0 = Container::Open(dirs[0]);
  auto s1 = Container::Open(dirs[1]);
  WARP_ASSERT_OK(s0);
  WARP_ASSERT_OK(s1);
  EXPECT_THAT((*s0)->HeldExperts((*s0)->manifest().banks[0]), ElementsAre(1, 2, 3, 4));
  EXPECT_THAT((*s1)->HeldExperts((*s1)->manifest().banks[0]), ElementsAre(0, 3, 4));
  auto set = VerifyShardSet(model_, dirs, {});
  WARP_ASSERT_OK(set);
  EXPECT_THAT(set->problems, IsEmpty());  // every copy byte-identical to the original
  EXPECT_EQ(set->records_checked, 2 * kLayers * kExperts + 4);

  EXPECT_THAT(ShardContainer(model_, Dirs(2, "r"), {.replica_bytes = RecordBytes()}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("replicas need a usage file")));
  usage.fingerprint = 42;
  WARP_ASSERT_OK(WriteUsageFile(usage_file, usage));
  EXPECT_THAT(ShardContainer(model_, Dirs(2, "u"), {.usage_file = usage_file}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr(usage_file.string() + ": counts model 000000000000002a, not ")));
  EXPECT_THAT(ShardContainer(model_, Dirs(2, "v"), {.usage_file = dir_ / "none.warp"}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("none.warp")));
}

// --probe-weights: each target's disk measured first, its bytes/s the weight
// (here both directories are on one disk: nearly even, whatever the noise).
TEST_F(ShardTest, ProbedWeightsAreEachDisksRate) {
  const std::vector<fs::path> dirs = Dirs(2);
  auto report = ShardContainer(model_, dirs, {.probe_weights = true});
  WARP_ASSERT_OK(report);
  ASSERT_EQ(report->probed.size(), 2u);
  EXPECT_GT(report->probed[0], 0);
  EXPECT_GT(report->probed[1], 0);
  EXPECT_EQ(report->records[0] + report->records[1], kLayers * kExperts);
  auto set = VerifyShardSet(model_, dirs, {});
  WARP_ASSERT_OK(set);
  EXPECT_THAT(set->problems, IsEmpty());
  EXPECT_THAT(ShardContainer(model_, Dirs(2, "w"), {.weights = {1, 1}, .probe_weights = true}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not both")));
}

TEST_F(ShardTest, MissingShardIsReported) {
  const std::vector<fs::path> dirs = Dirs(2);
  WARP_ASSERT_OK(ShardContainer(model_, dirs, {}));
  auto report = VerifyShardSet(model_, {dirs[0]}, {});
  WARP_ASSERT_OK(report);
  EXPECT_THAT(report->problems, ElementsAre("shard 1 of 2 is missing",
                                            "layer 1: 2 of 5 experts held by no shard: 1, 3",
                                            "layer 2: 2 of 5 experts held by no shard: 1, 3"));
}

TEST_F(ShardTest, ShardGivenTwiceIsReported) {
  const std::vector<fs::path> dirs = Dirs(2);
  WARP_ASSERT_OK(ShardContainer(model_, dirs, {}));
  auto report = VerifyShardSet(model_, {dirs[0], dirs[1], dirs[0]}, {});
  WARP_ASSERT_OK(report);
  EXPECT_THAT(report->problems, ElementsAre(absl::StrCat(dirs[0].string(), ": shard_index 0 is also ",
                                                         dirs[0].string(), "'s")));
}

TEST_F(ShardTest, ShardsOfAnotherModelOrMixedSplitsAreReported) {
  const std::vector<fs::path> two = Dirs(2);
  const std::vector<fs::path> three = Dirs(3, "t");
  WARP_ASSERT_OK(ShardContainer(model_, two, {}));
  WARP_ASSERT_OK(ShardContainer(model_, three, {}));
  auto mixed = VerifyShardSet(model_, {two[0], three[1]}, {});
  WARP_ASSERT_OK(mixed);
  EXPECT_THAT(mixed->problems, Contains(HasSubstr(": num_shards 3 differs from")));

  const fs::path other = dir_ / "other.warp";
  WARP_ASSERT_OK(warp::testing::WriteTinyContainer(
      other, {.num_layers = kLayers, .num_experts = kExperts, .fingerprint = 42}));
  const std::vector<fs::path> others = Dirs(2, "o");
  WARP_ASSERT_OK(ShardContainer(other, others, {}));
  auto report = VerifyShardSet(model_, {two[0], others[1]}, {});
  WARP_ASSERT_OK(report);
  EXPECT_THAT(report->problems,
              Contains(absl::StrCat(others[1].string(),
                                    ": fingerprint 000000000000002a differs from the model's "
                                    "0123456789abcdef")));
  EXPECT_THAT(report->problems, Contains("shard 1 of 2 is missing"));
  EXPECT_THAT(VerifyShardSet(two[0], {two[1]}, {}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("is itself shard 0 of 2")));
}

TEST_F(ShardTest, BadArgumentsAreRefusedByName) {
  EXPECT_THAT(ShardContainer(model_, Dirs(1), {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("at least 2 shard directories, got 1")));
  EXPECT_THAT(
      ShardContainer(model_, Dirs(2), {.weights = {1, 2, 3}}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("3 weights for 2 shard directories")));
  EXPECT_THAT(ShardContainer(model_, Dirs(2), {.weights = {1, 0}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("weight 2 (0, for " + Dirs(2)[1].string() +
                                 ") is not a positive number")));
  EXPECT_THAT(ShardContainer(model_, Dirs(2), {.weights = {-1, 1}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("weight 1 (-1")));
  EXPECT_THAT(ShardContainer(model_, {dir_ / "a", dir_ / "b" / ".." / "a"}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("given twice")));
  EXPECT_THAT(ShardContainer(model_, {dir_ / "a", model_}, {}),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       HasSubstr(model_.string() + ": already holds a container")));
  EXPECT_THAT(ShardContainer(dir_ / "nope.warp", Dirs(2), {}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("nope.warp/manifest.json")));
  EXPECT_FALSE(fs::exists(dir_ / "s0"));  // nothing was written

  WARP_ASSERT_OK(ShardContainer(model_, Dirs(2), {}));
  EXPECT_THAT(ShardContainer(model_, Dirs(2), {}),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("s0: already holds")));
  EXPECT_THAT(ShardContainer(Dirs(2)[0], Dirs(2, "t"), {}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("is itself shard 0 of 2; shard the original")));
}

TEST_F(ShardTest, CorruptOriginalRecordIsNeverCopied) {
  FlipByte(model_ / "experts-L1.bin", 2 * RecordBytes() + 5);
  const std::vector<fs::path> dirs = Dirs(2);
  EXPECT_THAT(ShardContainer(model_, dirs, {}),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr(absl::StrCat("expert 2 of layer 1: checksum mismatch (",
                                              (model_ / "experts-L1.bin").string(), " @",
                                              2 * RecordBytes(), ")"))));
  // The run left nothing behind: no manifest, no partial banks, no directories.
  EXPECT_FALSE(fs::exists(dirs[0]));
  EXPECT_FALSE(fs::exists(dirs[1]));
}

TEST_F(ShardTest, CommandShardsAndVerifiesTheSet) {
  const std::vector<fs::path> dirs = Dirs(2);
  const std::string list = dirs[0].string() + "," + dirs[1].string();
  auto sharded =
      warp::testing::RunBinary("expertd", "shard --quiet " + model_.string() + " --dirs " + list);
  ASSERT_EQ(sharded.exit_code, 0) << sharded.output;
  EXPECT_THAT(sharded.output,
              HasSubstr(dirs[0].string() + ": shard 0 of 2, 6 records (0 replicated on another shard)"));
  EXPECT_THAT(sharded.output,
              HasSubstr(dirs[1].string() + ": shard 1 of 2, 4 records (0 replicated on another shard)"));
  EXPECT_THAT(sharded.output, HasSubstr("sharded into 2 directories"));

  const std::string set = model_.string() + " " + dirs[0].string() + " " + dirs[1].string();
  auto clean = warp::testing::RunBinary("expertd", "verify --quiet " + set);
  EXPECT_EQ(clean.exit_code, 0) << clean.output;
  EXPECT_THAT(clean.output, HasSubstr("+ 2 shards: 20 records, 2 trunk tensors"));
  EXPECT_THAT(clean.output, HasSubstr(": OK"));

  auto missing = warp::testing::RunBinary(
      "expertd", "verify --quiet " + model_.string() + " " + dirs[0].string());
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.output, HasSubstr("shard 1 of 2 is missing"));

  FlipByte(dirs[0] / "experts-L1.bin", RecordBytes() + 9);  // slot 1: expert 2
  auto damaged = warp::testing::RunBinary("expertd", "verify --quiet " + set);
  EXPECT_EQ(damaged.exit_code, 1);
  EXPECT_THAT(damaged.output, HasSubstr("expert 2 of layer 1: checksum mismatch ("));
  EXPECT_THAT(damaged.output, HasSubstr(absl::StrCat("expert 2 of layer 1: differs from the "
                                                     "original (",
                                                     (dirs[0] / "experts-L1.bin").string(), " @",
                                                     RecordBytes(), ")")));
  EXPECT_THAT(damaged.output, HasSubstr(": 2 problems\n"));
}

TEST_F(ShardTest, CommandRefusesBadArguments) {
  auto one = warp::testing::RunBinary(
      "expertd", "shard --quiet " + model_.string() + " --dirs " + Dirs(1)[0].string());
  EXPECT_EQ(one.exit_code, 1);
  EXPECT_THAT(one.output, HasSubstr("expertd shard: sharding needs at least 2 shard directories"));

  const std::string list = Dirs(2)[0].string() + "," + Dirs(2)[1].string();
  auto weights = warp::testing::RunBinary(
      "expertd", "shard --quiet " + model_.string() + " --dirs " + list + " --weights 1,0");
  EXPECT_EQ(weights.exit_code, 1);
  EXPECT_THAT(weights.output, HasSubstr("weight 2 (0, for"));
  EXPECT_THAT(weights.output, HasSubstr("is not a positive number"));

  auto taken = warp::testing::RunBinary(
      "expertd", "shard --quiet " + model_.string() + " --dirs " + list + "," + model_.string());
  EXPECT_EQ(taken.exit_code, 1);
  EXPECT_THAT(taken.output, HasSubstr("already holds a container"));
}

}  // namespace
}  // namespace warp::expertd
