// DESIGN.md Invariant 1 from the command line: the logits of `computed
// logits` are byte-identical whatever reads the experts — the embedded store,
// three shard directories, or expertd daemons over a Unix socket and TCP —
// and whatever the threads and prefill chunk.

#include <filesystem>
#include <fstream>

#include "absl/strings/str_join.h"
#include "common/io/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/daemon.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp::computed {
namespace {

namespace fs = std::filesystem;
using ::warp::testing::RunBinary;

std::string Fixture(const std::string& name) { return warp::testing::FixtureDir(name).string(); }

class BitIdentityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto result =
        RunBinary("computed", "convert --quiet " + Fixture("deepseek_v3_f32") + " " + Model());
    ASSERT_EQ(result.exit_code, 0) << result.output;
    std::ifstream in(Fixture("deepseek_v3_f32") + "/tokens.txt");
    std::getline(in, tokens_);
  }

  std::string Model() const { return (dir_ / "m.warp").string(); }

  // Runs `computed logits` with `extra` flags and returns the logits file's bytes.
  std::string Logits(const std::string& extra) {
    const std::string out = (dir_ / ("logits" + std::to_string(runs_++))).string();
    auto result = RunBinary("computed", "logits " + Model() + " --tokens " + tokens_ +
                                            " --greedy 4 --out " + out + " " + extra);
    EXPECT_EQ(result.exit_code, 0) << extra << "\n" << result.output;
    auto bytes = ReadFileToString(out);
    EXPECT_TRUE(bytes.ok());
    return bytes.value_or("");
  }

  warp::testing::TempDir dir_;
  std::string tokens_;
  int runs_ = 0;
};

TEST_F(BitIdentityTest, LogitsDoNotDependOnThreadsOrChunking) {
  const std::string reference = Logits("--threads 1");
  ASSERT_FALSE(reference.empty());
  EXPECT_EQ(Logits("--threads 2"), reference);
  EXPECT_EQ(Logits("--threads 2 --prefill-chunk 1"), reference);
  EXPECT_EQ(Logits("--threads 1 --prefill-chunk 16"), reference);
}

TEST_F(BitIdentityTest, LogitsDoNotDependOnPrefetchLookaheadOrBudget) {
  const std::string reference = Logits("--no-prefetch --lookahead 0");
  ASSERT_FALSE(reference.empty());
  EXPECT_EQ(Logits("--lookahead 0"), reference);
  EXPECT_EQ(Logits("--lookahead 6"), reference);
  EXPECT_EQ(Logits("--lookahead 16 --prefill-chunk 3"), reference);
  // From the floor (nothing cached beyond one token) to fully resident.
  EXPECT_EQ(Logits("--budget 4M --prefill-chunk 1"), reference);
  EXPECT_EQ(Logits("--budget 64M"), reference);
}

TEST_F(BitIdentityTest, LogitsDoNotDependOnShardsOrTransport) {
  const std::string reference = Logits("");
  ASSERT_FALSE(reference.empty());
  std::vector<std::string> shards;
  for (int i = 0; i < 3; ++i) shards.push_back((dir_ / ("s" + std::to_string(i))).string());
  auto shard = RunBinary("expertd", "shard " + Model() + " --dirs " + absl::StrJoin(shards, ","));
  ASSERT_EQ(shard.exit_code, 0) << shard.output;
  EXPECT_EQ(Logits("--banks " + absl::StrJoin(shards, ",")), reference);

  // One daemon per shard: two over Unix sockets, one over TCP.
  std::vector<std::unique_ptr<warp::testing::Daemon>> daemons;
  std::vector<std::string> addresses;
  for (int i = 0; i < 3; ++i) {
    const std::string listen = i < 2 ? "unix:" + (dir_ / ("d" + std::to_string(i))).string()
                                     : std::string("tcp:127.0.0.1:0");
    auto daemon = warp::testing::Daemon::Start({"--model", shards[i], "--listen", listen});
    WARP_ASSERT_OK(daemon);
    addresses.push_back((*daemon)->addresses().at(0));
    daemons.push_back(std::move(*daemon));
  }
  EXPECT_EQ(Logits("--stores " + absl::StrJoin(addresses, ",")), reference);
}

TEST_F(BitIdentityTest, TwoDaemonsSplittingOneCopyOfTheBanks) {
  const std::string reference = Logits("");
  ASSERT_FALSE(reference.empty());
  std::vector<std::unique_ptr<warp::testing::Daemon>> daemons;
  std::vector<std::string> addresses;
  for (int i = 0; i < 2; ++i) {
    auto daemon = warp::testing::Daemon::Start(
        {"--model", Model(), "--shard", std::to_string(i) + "/2", "--listen",
         i == 0 ? "fastpath:" + (dir_ / "f0").string() : "unix:" + (dir_ / "u1").string(),
         "--budget", "1M"});
    WARP_ASSERT_OK(daemon);
    addresses.push_back((*daemon)->addresses().at(0));
    daemons.push_back(std::move(*daemon));
  }
  EXPECT_EQ(Logits("--stores " + absl::StrJoin(addresses, ",")), reference);
  // One half alone cannot serve the model: the other half's experts are held by no one.
  auto result = RunBinary(
      "computed", "logits " + Model() + " --tokens " + tokens_ + " --stores " + addresses[0]);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, ::testing::HasSubstr("held by no shard"));
}

TEST_F(BitIdentityTest, LocalDaemonCachesMustFitInTheBudget) {
  std::vector<std::unique_ptr<warp::testing::Daemon>> daemons;
  std::vector<std::string> addresses;
  for (int i = 0; i < 2; ++i) {
    auto daemon = warp::testing::Daemon::Start({"--model", Model(), "--shard",
                                                std::to_string(i) + "/2", "--listen",
                                                "unix:" + (dir_ / ("b" + std::to_string(i))).string(),
                                                "--budget", "1M"});
    WARP_ASSERT_OK(daemon);
    addresses.push_back((*daemon)->addresses().at(0));
    daemons.push_back(std::move(*daemon));
  }
  const std::string stores = " --stores " + absl::StrJoin(addresses, ",");
  // Just above the floor (878 KiB) the budget leaves about 250 KiB for experts,
  // less than the two daemons' 1 MiB caches.
  auto refused = RunBinary("computed", "logits " + Model() + " --tokens " + tokens_ + stores +
                                           " --budget 900K");
  EXPECT_EQ(refused.exit_code, 1);
  // Each holds 16 records of 28 KiB, so a 1M budget caches all 448 KiB of them.
  EXPECT_THAT(refused.output, ::testing::HasSubstr("the local expertd caches hold 896.00 KiB"));
  EXPECT_THAT(refused.output, ::testing::HasSubstr(addresses[1] + " 448.00 KiB"));
  EXPECT_THAT(refused.output, ::testing::HasSubstr("computed plan --daemons 2"));
  EXPECT_FALSE(Logits(stores + " --budget 2M").empty());
}

TEST_F(BitIdentityTest, AShardOfAnotherModelIsRefused) {
  auto other = RunBinary("computed", "convert --quiet " + Fixture("deepseek_v3_bf16") + " " +
                                         (dir_ / "other.warp").string());
  ASSERT_EQ(other.exit_code, 0) << other.output;
  auto result = RunBinary(
      "computed", "logits " + Model() + " --tokens 1,2 --banks " + (dir_ / "other.warp").string());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, ::testing::HasSubstr("other.warp: holds model"));
}

}  // namespace
}  // namespace warp::computed
