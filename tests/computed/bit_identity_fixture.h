#pragma once

// The fixture of the bit-identity tests (DESIGN.md Invariant 1 from the
// command line): a model, a prompt, a reference run of `computed logits`, and
// the runs whose every logit must equal it, with the stats line of `computed
// run` to show what they read.

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/format/container.h"
#include "common/io/file.h"
#include "computed/planner/planner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/daemon.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/run_command.h"
#include "tests/testing/stats_line.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_certificates.h"

namespace warp::computed {

namespace fs = std::filesystem;
using ::warp::testing::RunBinary;
using ::warp::testing::RunStats;

inline std::string Fixture(const std::string& name) { return warp::testing::FixtureDir(name).string(); }

inline constexpr uint32_t kGreedy = 6;  // decoded tokens: 5 decode steps after the prefill
inline constexpr uint32_t kVocab = 256;

// What one `computed logits --greedy` run computed.
struct Outputs {
  std::string prefill;  // float32 [prompt positions][vocab]
  std::string decode;   // float32 [kGreedy - 1][vocab], one row per decode step
  std::string tokens;   // the continuation it printed, "12,7,..."
};

// "first difference at float 300 (decode step 1, token 44)" or "" when equal.
inline std::string FirstDifference(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return absl::StrCat("sizes ", a.size(), " vs ", b.size());
  for (size_t i = 0; i + 4 <= a.size(); i += 4) {
    if (std::memcmp(a.data() + i, b.data() + i, 4) != 0) {
      float x, y;
      std::memcpy(&x, a.data() + i, 4);
      std::memcpy(&y, b.data() + i, 4);
      return absl::StrFormat("first difference at row %d token %d: %a vs %a", i / 4 / kVocab,
                             i / 4 % kVocab, x, y);
    }
  }
  return "";
}

class BitIdentityTest : public ::testing::Test {
 protected:
  // The fixture every run converts and runs.
  virtual std::string FixtureName() const { return "deepseek_v3_f32"; }
  // Flags of its `computed convert`.
  virtual std::string ConvertFlags() const { return ""; }

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(MakeModel());
    num_tokens_ = static_cast<uint32_t>(std::count(tokens_.begin(), tokens_.end(), ',') + 1);
  }

  // Writes Model() and sets tokens_, the prompt: the fixture converted, its tokens.
  virtual void MakeModel() {
    auto result = RunBinary("computed", "convert --quiet " + Fixture(FixtureName()) + " " +
                                            Model() + " " + ConvertFlags());
    ASSERT_EQ(result.exit_code, 0) << result.output;
    std::ifstream in(Fixture(FixtureName()) + "/tokens.txt");
    std::getline(in, tokens_);
  }

  std::string Model() const { return (dir_ / "m.warp").string(); }

  // Runs `computed logits` with `extra` flags: its prefill and decode-step logits and tokens.
  Outputs Logits(const std::string& extra) {
    const std::string out = (dir_ / ("logits" + std::to_string(runs_))).string();
    const std::string decode_out = (dir_ / ("decode" + std::to_string(runs_++))).string();
    auto result =
        RunBinary("computed", "--log-level warn logits " + Model() + " --tokens " + tokens_ +
                                  " --greedy " + std::to_string(kGreedy) + " --out " + out +
                                  " --decode-out " + decode_out + " " + extra);
    EXPECT_EQ(result.exit_code, 0) << extra << "\n" << result.output;
    auto prefill = ReadFileToString(out);
    auto decode = ReadFileToString(decode_out);
    EXPECT_TRUE(prefill.ok() && decode.ok()) << extra;
    std::string tokens = result.output;
    while (!tokens.empty() && tokens.back() == '\n') tokens.pop_back();
    return {prefill.value_or(""), decode.value_or(""), tokens};
  }

  // The reference run: every later run must give its bytes.
  void SetReference(const std::string& extra) {
    reference_ = Logits(extra);
    ASSERT_EQ(reference_.prefill.size(), size_t{num_tokens_} * kVocab * 4);
    ASSERT_EQ(reference_.decode.size(), size_t{kGreedy - 1} * kVocab * 4);
    ASSERT_THAT(reference_.tokens, ::testing::MatchesRegex("[0-9]+(,[0-9]+){5}"));
  }

  void ExpectIdentical(const std::string& extra) {
    SCOPED_TRACE(extra);
    const Outputs run = Logits(extra);
    EXPECT_EQ(FirstDifference(run.prefill, reference_.prefill), "") << "prefill logits";
    EXPECT_EQ(FirstDifference(run.decode, reference_.decode), "") << "decode-step logits";
    EXPECT_EQ(run.tokens, reference_.tokens);
  }

  // The store settings in force with `extra` (the line `computed --log-level
  // info` logs once): that each of `wanted` is in it shows the flags reached
  // the store, so that a mode the bits are compared in is the mode asked for.
  void ExpectSettings(const std::string& extra, const std::vector<std::string>& wanted) {
    SCOPED_TRACE(extra);
    auto result = RunBinary("computed", "--log-level info logits " + Model() + " --tokens " +
                                            tokens_ + " " + extra);
    EXPECT_EQ(result.exit_code, 0) << result.output;
    const size_t at = result.output.find("[store] info: ");
    ASSERT_NE(at, std::string::npos) << result.output;
    const std::string line = result.output.substr(at, result.output.find('\n', at) - at);
    for (const std::string& text : wanted) EXPECT_THAT(line, ::testing::HasSubstr(text));
  }

  // `computed run` of the same prompt and continuation with `extra`: its stats line.
  RunStats Stats(const std::string& extra) {
    auto result = RunBinary("computed", "--log-level warn run --ids " + Model() + " " + tokens_ +
                                            " -n " + std::to_string(kGreedy) + " " + extra);
    EXPECT_EQ(result.exit_code, 0) << extra << "\n" << result.output;
    const RunStats stats = warp::testing::ParseStatsLine(result.output);
    EXPECT_EQ(stats.phases, 2) << result.output;  // prefill and decode
    return stats;
  }

  // Two daemons over one copy of the banks, shards 0/2 (fast path) and 1/2
  // (gRPC over a Unix socket), each caching at most `budget`.
  void StartHalves(const std::string& name, const std::string& budget,
                   std::vector<std::string>& addresses) {
    for (int i = 0; i < 2; ++i) {
      const std::string socket = (dir_ / (name + std::to_string(i))).string();
      auto daemon = warp::testing::Daemon::Start(
          {"--model", Model(), "--shard", std::to_string(i) + "/2", "--listen",
           (i == 0 ? "fastpath:" : "unix:") + socket, "--budget", budget});
      WARP_ASSERT_OK(daemon);
      addresses.push_back((*daemon)->addresses().at(0));
      daemons_.push_back(std::move(*daemon));
    }
  }

  // The model split in three shards (--banks `shards_`), one daemon each:
  // two over Unix sockets (the second reading with pread), one over TLS on
  // TCP; `stores` gets the flags that reach them (--stores, --tls-ca, --token-file).
  void StartThreeShardDaemons(std::string& stores) {
    std::vector<std::string> shards;
    for (int i = 0; i < 3; ++i) shards.push_back((dir_ / ("s" + std::to_string(i))).string());
    auto shard = RunBinary("expertd", "shard " + Model() + " --dirs " + absl::StrJoin(shards, ","));
    ASSERT_EQ(shard.exit_code, 0) << shard.output;
    shards_ = absl::StrJoin(shards, ",");
    auto certs = warp::testing::MakeTestCertificates(dir_.path());
    ASSERT_TRUE(certs.ok()) << certs.status();
    std::vector<std::string> addresses;
    for (int i = 0; i < 3; ++i) {
      std::vector<std::string> args = {"--model", shards[i]};
      if (i < 2) {
        const std::string socket = (dir_ / ("d" + std::to_string(i))).string();
        args.insert(args.end(), {"--listen", "unix:" + socket});
      } else {
        args.insert(args.end(), {"--listen", "tcp:127.0.0.1:0", "--tls-cert", certs->server_cert,
                                 "--tls-key", certs->server_key, "--token-file", certs->token});
      }
      if (i == 1) args.insert(args.end(), {"--io-engine", "pread"});
      auto daemon = warp::testing::Daemon::Start(args);
      ASSERT_TRUE(daemon.ok()) << daemon.status();
      const std::string address = (*daemon)->addresses().at(0);
      addresses.push_back(i < 2 ? address : "tls:" + address.substr(4));
      daemons_.push_back(std::move(*daemon));
    }
    stores = absl::StrCat("--stores ", absl::StrJoin(addresses, ","), " --tls-ca ", certs->ca,
                          " --token-file ", certs->token);
  }

  // The reference with `flags` on one thread, then the same bits on two
  // threads, in prefill chunks of 1 (with lookahead) and 5 (at the floor,
  // where records are evicted and read again: more bytes read than the banks
  // hold), and from two daemons holding half the banks each.
  void ExpectIdenticalAcrossThreadsChunksBudgetAndDaemons(const std::string& flags) {
    auto container = Container::Open(Model());
    ASSERT_TRUE(container.ok()) << container.status();
    auto plan = ComputePlan((*container)->manifest(), num_tokens_ + kGreedy + 1);
    ASSERT_TRUE(plan.ok()) << plan.status();
    SetReference(flags + " --threads 1");
    ExpectIdentical(flags + " --threads 2");
    ExpectIdentical(flags + " --threads 2 --prefill-chunk 1 --lookahead 16");
    const std::string floor =
        flags + " --threads 2 --prefill-chunk 5 --budget " + std::to_string(plan->floor_bytes);
    ExpectIdentical(floor);
    EXPECT_GT(Stats(floor).read_bytes, static_cast<double>(plan->bank_bytes)) << floor;
    std::vector<std::string> addresses;
    ASSERT_NO_FATAL_FAILURE(StartHalves("half", "1M", addresses));
    ExpectIdentical(flags + " --stores " + absl::StrJoin(addresses, ","));
    // A daemon computing the experts (issue 47) with this arithmetic.
    auto computing = warp::testing::Daemon::Start(
        {"--model", Model(), "--listen", "unix:" + (dir_ / "computing").string()});
    ASSERT_TRUE(computing.ok()) << computing.status();
    ExpectIdentical(flags + " --expert-compute daemons --prefill-chunk 3 --stores " +
                    (*computing)->addresses().at(0));
  }

  warp::testing::TempDir dir_;
  std::string shards_;  // StartThreeShardDaemons's shard directories, comma-separated
  std::vector<std::unique_ptr<warp::testing::Daemon>> daemons_;
  std::string tokens_;
  uint32_t num_tokens_ = 0;
  Outputs reference_;
  int runs_ = 0;
};

}  // namespace warp::computed
