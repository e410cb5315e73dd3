// The computed command line as a user runs it: exit codes and messages.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/crc32c.h"
#include "common/format/usage_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/fixtures.h"
#include "tests/testing/run_command.h"
#include "tests/testing/stats_line.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp::computed {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::warp::testing::RunBinary;
using ::warp::testing::RunStats;

class ComputedCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto result = RunBinary("computed", "synth --quiet --preset tiny " + Model());
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("wrote " + Model()));
  }

  std::string Model() const { return (dir_ / "tiny.warp").string(); }

  warp::testing::TempDir dir_;
};

TEST_F(ComputedCliTest, PlanPrintsEveryFigure) {
  auto result = RunBinary("computed", "plan --context 1000 " + Model());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  for (const char* row :
       {"trunk", "kv/state", "working set", "banks", "floor", "recommended", "default"}) {
    EXPECT_THAT(result.output, HasSubstr(row));
  }
  EXPECT_THAT(result.output, HasSubstr("1000 tokens x 640 B"));
}

TEST_F(ComputedCliTest, PlanParallelCountsTheStateOfEverySequence) {
  auto result = RunBinary("computed", "plan --context 1000 --parallel 3 " + Model());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("1.83 MiB  3 sequences x (1000 tokens x 640 B)"));
  auto refused = RunBinary("computed", "plan --parallel 65 " + Model());
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.output, HasSubstr("--parallel"));
}

TEST_F(ComputedCliTest, PlanRefusesABudgetBelowTheFloor) {
  auto result = RunBinary("computed", "plan --budget 1M " + Model());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, HasSubstr("computed plan: budget 1.00 MiB is below the floor"));
  EXPECT_THAT(result.output, HasSubstr("needs at least"));
}

TEST_F(ComputedCliTest, PlanAcceptsABudgetAboveTheFloor) {
  auto result = RunBinary("computed", "plan --budget 64M " + Model());
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("--budget; expert cache"));
}

TEST_F(ComputedCliTest, PlanSplitsTheCacheAcrossLocalDaemons) {
  // tiny: trunk 671744 (its early routes' folds included) + KV 1000 x 640 + cache; a 4 MiB
  // budget leaves 2882560 B of cache.
  auto result = RunBinary("computed", "plan --context 1000 --budget 4M --daemons 2 " + Model());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output,
              ::testing::ContainsRegex("per daemon +1\\.37 MiB +--budget of each of 2"));
}

// A release planned from its config.json (Kimi K3, tests/configs): its KDA
// state is the same at any context, its MLA cache grows; on a 64 GB machine it
// opens with a q4 trunk (the floor is two MoE layers' records, not a working
// set), while its bf16 trunk alone is too big, and the refusal says by how much.
TEST_F(ComputedCliTest, PlanOfAReleaseConfigShowsTheFixedStateAtAnyContext) {
  const std::string config =
      (warp::testing::SourceDir() / "tests/configs/kimi_k3.config.json").string();
  for (const char* context : {"1000", "100000"}) {
    auto result = RunBinary("computed", std::string("plan --config ") + config + " --ram 64G " +
                                            "--context " + context + " --trunk q4");
    EXPECT_THAT(result.output, HasSubstr(std::string(context) + " tokens x 55296 B + 886.22 MiB "
                                                                "recurrent state at any context"));
    EXPECT_THAT(result.output, HasSubstr("24.06 GiB  16 experts x 92 MoE layers x 17551360 B"));
    EXPECT_THAT(result.output,
                HasSubstr("48.00 GiB  3/4 of 64.00 GiB available (--ram 64G); expert cache"));
  }
  auto native = RunBinary("computed", "plan --config " + config + " --ram 64G");
  EXPECT_EQ(native.exit_code, 1);
  EXPECT_THAT(native.output, HasSubstr("not enough memory: this model needs at least 108.42 GiB "
                                       "(trunk 106.82 GiB"));
  EXPECT_THAT(native.output, HasSubstr("(--ram 64G)"));
  auto both = RunBinary("computed", "plan " + Model() + " --config " + config);
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_THAT(both.output, HasSubstr("give either MODEL.warp or --config config.json"));
  std::ofstream(dir_ / "not-a-config.json") << R"({"hidden_size": 64})";
  auto untyped = RunBinary("computed", "plan --config " + (dir_ / "not-a-config.json").string());
  EXPECT_EQ(untyped.exit_code, 1);
  EXPECT_THAT(untyped.output, HasSubstr("not-a-config.json: not a config.json with a model_type"));
  auto bad = RunBinary("computed", "plan --config " + config + " --trunk q3");
  EXPECT_THAT(bad.output, HasSubstr("--trunk q3: expected native, bf16, q8, q4, mixed"));
  // vq3r experts: 3.5 bits an element against MXFP4's 4.25; a trunk cannot be vq3r.
  auto vq3r = RunBinary("computed", "plan --config " + config + " --ram 64G --experts vq3r");
  EXPECT_THAT(vq3r.output, HasSubstr("16 experts x 92 MoE layers x 14454784 B records"));
  auto vq3r_trunk = RunBinary("computed", "plan --config " + config + " --trunk vq3r");
  EXPECT_THAT(vq3r_trunk.output, HasSubstr("--trunk vq3r: expected native, bf16, q8, q4, mixed"));
}

// DeepSeek V4's hash layers route by token id: their records are read
// CERTAIN at the start of each chunk, and the stats line counts them apart.
TEST_F(ComputedCliTest, HashLayersReadTheirExpertsCertainAndSaySo) {
  const std::string model = (dir_ / "v4.warp").string();
  auto synth = RunBinary("computed", "synth --quiet --arch deepseek_v4 --preset tiny " + model);
  ASSERT_EQ(synth.exit_code, 0) << synth.output;
  auto run = RunBinary("computed", "--log-level warn run --ids " + model +
                                       " 1,2,3,4,5,6,7,8,9 -n 4 --prefill-chunk 3");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, ::testing::ContainsRegex("\\| certain [1-9][0-9]* \\("));
}

TEST_F(ComputedCliTest, PlanOfAMissingModelNamesTheFile) {
  auto result = RunBinary("computed", "plan " + (dir_ / "nope.warp").string());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, HasSubstr("nope.warp/manifest.json: No such file or directory"));
}

TEST_F(ComputedCliTest, SynthRejectsAMalformedSize) {
  auto result = RunBinary("computed", "synth --size 12X " + (dir_ / "m.warp").string());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, HasSubstr("invalid size \"12X\""));
}

TEST_F(ComputedCliTest, SynthRejectsAnUnknownFormat) {
  auto result = RunBinary("computed", "synth --experts q3 " + (dir_ / "m.warp").string());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, HasSubstr("--experts: unknown format \"q3\""));
}

TEST_F(ComputedCliTest, SynthHelpListsThePresets) {
  auto result = RunBinary("computed", "synth --help");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("deepseek_v3 / k2-slice"));
}

}  // namespace
}  // namespace warp::computed

namespace warp::computed {
namespace {

std::string Fixture(const std::string& name) { return warp::testing::FixtureDir(name).string(); }

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// The line of token ids ("12,7,3") a run prints among its log lines, or "".
std::string TokenLine(const std::string& output) {
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.find_first_not_of("0123456789,") == std::string::npos) return line;
  }
  return "";
}

class LogitsCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto result =
        RunBinary("computed", "convert --quiet " + Fixture("mixtral_f32") + " " + Model());
    ASSERT_EQ(result.exit_code, 0) << result.output;
  }
  std::string Model() const { return (dir_ / "m.warp").string(); }
  warp::testing::TempDir dir_;
};

TEST_F(LogitsCliTest, GreedyPrintsTheReferenceContinuation) {
  const std::string tokens = ReadText(Fixture("mixtral_f32") + "/tokens.txt");
  const std::string out = (dir_ / "logits.f32").string();
  auto result = RunBinary("computed", "logits " + Model() + " --tokens " + tokens +
                                          " --greedy 16 --out " + out + " --prefill-chunk 7");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr(ReadText(Fixture("mixtral_f32") + "/greedy.txt")));
  EXPECT_EQ(std::filesystem::file_size(out), 24u * 256 * sizeof(float));  // [positions][vocab]
}

TEST_F(LogitsCliTest, TokenOutsideTheVocabularyIsRefused) {
  auto result = RunBinary("computed", "logits " + Model() + " --tokens 1,2,999");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, HasSubstr("token 999 at index 2 is outside the vocabulary of 256"));
}

TEST_F(LogitsCliTest, MalformedTokensAreRefused) {
  auto result = RunBinary("computed", "logits " + Model() + " --tokens 1,x");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, HasSubstr("--tokens: \"x\" is not a token id"));
}

TEST_F(LogitsCliTest, SeededSamplingRepeats) {
  const std::string args = "logits " + Model() +
                           " --tokens 5,6,7 --greedy 8 --temperature 1.5 "
                           "--top-k 20 --top-p 0.9 --seed 42";
  // --log-level warn: the info lines carry figures (free memory) that move between runs.
  auto first = RunBinary("computed", "--log-level warn " + args);
  auto second = RunBinary("computed", "--log-level warn " + args);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_EQ(first.output, second.output);
}

// The sampling flags reach the sampler: the seed picks the continuation, the
// same seed repeats it, and temperature 0 is greedy whatever the other flags.
class SamplingFlagsTest : public LogitsCliTest {
 protected:
  // The 12 tokens `computed logits` continues 5,6,7 with under `flags`.
  std::string Continuation(const std::string& flags) {
    auto result = RunBinary(
        "computed", "--log-level warn logits " + Model() + " --tokens 5,6,7 --greedy 12 " + flags);
    EXPECT_EQ(result.exit_code, 0) << flags << "\n" << result.output;
    std::string text = result.output;
    while (!text.empty() && text.back() == '\n') text.pop_back();
    EXPECT_THAT(text, ::testing::MatchesRegex("[0-9]+(,[0-9]+){11}")) << flags;
    return text;
  }
  const std::string sampled_ = "--temperature 1.5 --top-k 50 --top-p 0.95";
};

TEST_F(SamplingFlagsTest, TheSeedChoosesTheContinuation) {
  const std::string seed1 = Continuation(sampled_ + " --seed 1");
  EXPECT_EQ(Continuation(sampled_ + " --seed 1"), seed1);
  // Three other seeds: each draws a continuation of its own.
  std::set<std::string> continuations = {seed1};
  for (const char* seed : {" --seed 2", " --seed 3", " --seed 12345"}) {
    continuations.insert(Continuation(sampled_ + seed));
  }
  EXPECT_EQ(continuations.size(), 4u);
}

TEST_F(SamplingFlagsTest, TemperatureZeroIsGreedyAndSamplingIsNot) {
  const std::string greedy = Continuation("");
  EXPECT_EQ(Continuation("--temperature 0 --top-k 50 --top-p 0.5 --seed 9"), greedy);
  EXPECT_EQ(Continuation("--temperature 0 --seed 10"), greedy);
  // --top-k 1 leaves the sampler one candidate: greedy at any temperature.
  EXPECT_EQ(Continuation("--temperature 1.5 --top-k 1 --seed 9"), greedy);
  EXPECT_NE(Continuation(sampled_ + " --seed 9"), greedy);
  EXPECT_NE(Continuation(sampled_ + " --seed 10"), greedy);
}

TEST_F(SamplingFlagsTest, RunTakesTheSameSamplingFlags) {
  auto run = [&](const std::string& flags) {
    auto result =
        RunBinary("computed", "--log-level warn run --ids " + Model() + " 5,6,7 -n 12 " + flags);
    EXPECT_EQ(result.exit_code, 0) << result.output;
    return TokenLine(result.output);
  };
  const std::string greedy = Continuation("");
  EXPECT_EQ(run(""), greedy);
  EXPECT_EQ(run(sampled_ + " --seed 3"), Continuation(sampled_ + " --seed 3"));
  EXPECT_NE(run(sampled_ + " --seed 3"), greedy);
}

}  // namespace
}  // namespace warp::computed

namespace warp::computed {
namespace {

class RunCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto result =
        RunBinary("computed", "convert --quiet " + Fixture("qwen3_moe_f32") + " " + Model());
    ASSERT_EQ(result.exit_code, 0) << result.output;
  }
  std::string Model() const { return (dir_ / "m.warp").string(); }
  warp::testing::TempDir dir_;
};

TEST_F(RunCliTest, PrintsTokensAndTheStatsLine) {
  auto result = RunBinary("computed", "run " + Model() + " 5,6,7,8 -n 6");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  // Prefill (4 prompt tokens) and decode (5 steps: the 6th token is sampled, not run) apart.
  EXPECT_THAT(result.output, ::testing::ContainsRegex(
                                 "\\[prefill 4 tokens [0-9.]+ tok/s: experts [0-9]+ hit / "
                                 "[0-9]+ miss [0-9]+%.*, read [0-9.]+ [KMG]?i?B \\| decode 5 "
                                 "tokens [0-9.]+ tok/s: experts [0-9]+ hit / [0-9]+ miss "
                                 "[0-9]+%.*, read [0-9.]+ [KMG]?i?B, [0-9.]+ [KMG]?i?B a token"));
  EXPECT_THAT(result.output, HasSubstr("lookahead recall"));
  const RunStats stats = warp::testing::ParseStatsLine(result.output);
  EXPECT_EQ(stats.phases, 2);
  EXPECT_EQ(stats.tokens, 9u);
  // Every demand record is counted once, as a hit, a prediction's hit or a miss:
  // 9 tokens x 2 MoE layers x top-4, fewer where a prefill chunk shares records.
  EXPECT_LE(stats.hits + stats.misses + stats.lookahead_hits + stats.certain_hits, 9u * 2 * 4);
  EXPECT_GE(stats.hits + stats.misses + stats.lookahead_hits + stats.certain_hits, 5u * 2 * 4);
}

// Two layers ahead: each depth's recall and unused hints on the stats line.
// The tiny qwen3_moe preset has 4 MoE layers: layer 0's hints reach layer 2.
TEST_F(RunCliTest, ALookaheadTwoLayersDeepReportsEachDepth) {
  const std::string model = (dir_ / "q.warp").string();
  auto synth = RunBinary("computed", "synth --quiet --arch qwen3_moe --preset tiny " + model);
  ASSERT_EQ(synth.exit_code, 0) << synth.output;
  auto result = RunBinary("computed", "run " + model +
                                          " 5,6,7,8 -n 6 --lookahead-depth 2 "
                                          "--lookahead-precision 0");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output,
              ::testing::ContainsRegex("depth 1: recall [0-9]+%, [0-9.]+ [KMG]?i?B hinted unused; "
                                       "depth 2: recall [0-9]+%, [0-9.]+ [KMG]?i?B hinted unused"));
  for (const char* bad : {"0", "3"}) {
    auto refused = RunBinary("computed", "run " + Model() + " 5,6 --lookahead-depth " + bad);
    EXPECT_EQ(refused.exit_code, 1);
    EXPECT_THAT(refused.output,
                HasSubstr(std::string("--lookahead-depth ") + bad + ": expected 1 or 2"));
  }
}

TEST_F(RunCliTest, BudgetBelowTheFloorIsRefusedWithTheFigure) {
  auto result = RunBinary("computed", "run " + Model() + " 5,6 --budget 1K");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, HasSubstr("is below the floor: this model needs at least"));
}

TEST_F(RunCliTest, UnknownCachePolicyIsRefusedNamingTheChoices) {
  auto result = RunBinary("computed", "run " + Model() + " 5,6 --cache-policy fifo");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, HasSubstr("cache policy 'fifo': expected lfru, lru, arc or duel"));
}

TEST_F(RunCliTest, UnknownActivationsAreRefusedNamingTheChoices) {
  auto result = RunBinary("computed", "run " + Model() + " 5,6 --activations q4");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("--activations"));
  EXPECT_THAT(result.output, HasSubstr("q4 not in {f32,q8}"));
}

TEST_F(RunCliTest, EarlyRoutesOnAndOffTogetherAreRefused) {
  auto result = RunBinary("computed", "run " + Model() + " 5,6 --early-route --no-early-route");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("--early-route excludes --no-early-route"));
}

TEST_F(RunCliTest, UnknownIoEngineIsRefusedNamingTheChoices) {
  auto result = RunBinary("computed", "run " + Model() + " 5,6 --io-engine aio");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, HasSubstr("unknown I/O engine \"aio\" (pread or uring)"));
}

TEST_F(RunCliTest, ANegativeLookaheadAndAnUnknownLogLevelAreRefused) {
  auto lookahead = RunBinary("computed", "run " + Model() + " 5,6 --lookahead -5");
  EXPECT_NE(lookahead.exit_code, 0);
  // The flag writes Transformer::Options' unsigned count as parsed.
  EXPECT_THAT(lookahead.output, HasSubstr("Could not convert: --lookahead = -5"));
  auto level = RunBinary("computed", "--log-level bogus run " + Model() + " 5,6");
  EXPECT_NE(level.exit_code, 0);
  EXPECT_THAT(level.output, HasSubstr("--log-level: bogus not in {trace,debug,info,warn,error,"));
  auto daemon = RunBinary("expertd", "--log-level bogus serve --model " + Model());
  EXPECT_NE(daemon.exit_code, 0);
  EXPECT_THAT(daemon.output, HasSubstr("--log-level: bogus not in"));
}

TEST_F(RunCliTest, LookaheadPrecisionOutsideZeroToOneIsRefused) {
  for (const char* precision : {"1.5", "-0.5"}) {
    auto result =
        RunBinary("computed", "run " + Model() + " 5,6 --lookahead-precision " + precision);
    EXPECT_EQ(result.exit_code, 1) << precision;
    EXPECT_THAT(result.output,
                HasSubstr(std::string("--lookahead-precision ") + precision + ": expected 0 to 1"));
  }
}

TEST_F(RunCliTest, BadCpusAndAnUnwritableTraceAreRefused) {
  auto cpus = RunBinary("computed", "run " + Model() + " 5,6 --cpus 0,x");
  EXPECT_EQ(cpus.exit_code, 1);
  EXPECT_THAT(cpus.output, HasSubstr("--cpus: \"x\" is not a CPU number"));
  auto trace = RunBinary("computed", "run " + Model() + " 5,6 --trace /nonexistent/dir/t.txt");
  EXPECT_EQ(trace.exit_code, 1);
  EXPECT_THAT(trace.output, HasSubstr("/nonexistent/dir/t.txt: cannot write"));
}

TEST_F(RunCliTest, TextPromptIsRefusedUntilTheTokenizerLands) {
  auto result = RunBinary("computed", "run " + Model() + " \"hello\"");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, HasSubstr("the prompt must be token ids"));
}

TEST_F(RunCliTest, LearnWritesUsageAndTraceWritesRouting) {
  const std::string trace = (dir_ / "trace.txt").string();
  auto result = RunBinary("computed", "run " + Model() + " 5,6,7 -n 3 --learn --trace " + trace);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  auto usage = ReadUsageFile(dir_ / "m.warp" / "usage.warp");
  WARP_ASSERT_OK(usage);
  EXPECT_EQ(usage->tokens, 5u);  // 3 prompt + 2 decoded (the last is sampled, not run)
  uint64_t total = 0;
  for (const ExpertUsage& entry : usage->entries) total += entry.count;
  EXPECT_EQ(total, 5u * 2 * 4);  // tokens x MoE layers x top-4
  EXPECT_GT(std::filesystem::file_size(trace), 0u);
  // A second run merges into the same file and preloads the learned experts.
  result = RunBinary("computed", "run " + Model() + " 5,6,7 -n 3 --learn");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  usage = ReadUsageFile(dir_ / "m.warp" / "usage.warp");
  WARP_ASSERT_OK(usage);
  EXPECT_EQ(usage->tokens, 10u);
}

RunStats ParseStats(const std::string& output) {
  const RunStats stats = warp::testing::ParseStatsLine(output);
  EXPECT_GT(stats.phases, 0) << output;
  return stats;
}

// A run with a learned usage.warp preloads its hottest experts into the cache
// before the first token, so it hits where the cold run missed. The runs are
// synchronous (no lookahead, no prefetch) and token by token, so the cold run
// looks up 8 records a token and misses exactly once per distinct record it
// uses (the default budget caches the whole model; paced growth, which may hold
// the cache to the slots an idle-priority thread has backed, is off so that the
// count does not depend on that thread's progress on a loaded machine).
TEST_F(RunCliTest, LearnedUsagePreloadsTheCacheAndRaisesTheHitRate) {
  const std::string args = "run --ids " + Model() +
                           " 5,6,7,8,9 -n 8 --no-prefetch --lookahead 0 --prefill-chunk 1 "
                           "--no-paced-growth";
  auto cold = RunBinary("computed", args + " --learn");
  ASSERT_EQ(cold.exit_code, 0) << cold.output;
  EXPECT_THAT(cold.output, ::testing::Not(HasSubstr("preloading")));
  auto usage = ReadUsageFile(dir_ / "m.warp" / "usage.warp");
  WARP_ASSERT_OK(usage);
  const RunStats cold_stats = ParseStats(cold.output);
  EXPECT_EQ(cold_stats.misses, usage->entries.size());
  EXPECT_EQ(cold_stats.hits + cold_stats.misses, 12u * 2 * 4);  // tokens x MoE layers x top-4

  auto warm = RunBinary("computed", args);
  ASSERT_EQ(warm.exit_code, 0) << warm.output;
  EXPECT_THAT(warm.output, HasSubstr("preloading " + std::to_string(usage->entries.size()) +
                                     " learned hot experts"));
  const RunStats warm_stats = ParseStats(warm.output);
  // The preload is a certain read: its records are "certain hits" at their first use.
  auto all = [](const RunStats& r) {
    return r.hits + r.misses + r.lookahead_hits + r.certain_hits;
  };
  EXPECT_EQ(all(warm_stats), all(cold_stats));
  EXPECT_EQ(cold_stats.certain_hits, 0u);
  // Every record was read before its first use, unless its preload was still in flight
  // when the demand came (then the demand joins it and counts as a miss).
  EXPECT_LT(warm_stats.misses, cold_stats.misses);
  EXPECT_GT(warm_stats.certain_hits, 0u);
  EXPECT_GT(warm_stats.hits + warm_stats.certain_hits, cold_stats.hits);
  // The same tokens: the preload changes when records are read, never what is computed.
  EXPECT_FALSE(TokenLine(cold.output).empty()) << cold.output;
  EXPECT_EQ(TokenLine(warm.output), TokenLine(cold.output));
}

// Nonsense numbers are refused at parse time, naming the flag, instead of
// NaN logits, a sampler that never stops or 100000 threads.
TEST_F(ComputedCliTest, OutOfRangeSamplingAndThreadFlagsAreRefused) {
  const std::pair<const char*, const char*> cases[] = {
      {"--temperature nan", "--temperature: nan is not a number in [0, 100]"},
      {"--temperature inf", "--temperature: inf is not a number in [0, 100]"},
      {"--temperature -1", "--temperature: -1 is not a number in [0, 100]"},
      {"--top-p 0", "--top-p: 0 is not a number in (0, 1]"},
      {"--top-p 1.5", "--top-p: 1.5 is not a number in (0, 1]"},
      {"--threads 100000", "--threads: Value 100000 not in range 0 to 1024"},
      {"--io-threads 100000", "--io-threads: Value 100000 not in range 1 to 256"},
      {"--io-depth 0", "--io-depth: Value 0 not in range 1 to 4096"},
      {"--io-depth 5000", "--io-depth: Value 5000 not in range 1 to 4096"},
      {"--io-piece-kib 2", "--io-piece-kib: Value 2 not in range 4 to 1048576"},
      {"--io-piece-kib 6", "--io-piece-kib 6: not a multiple of 4 (a page)"},
  };
  for (const auto& [flag, says] : cases) {
    auto result = RunBinary("computed", absl::StrCat("run ", Model(), " --ids 1 -n 1 ", flag));
    EXPECT_NE(result.exit_code, 0) << flag;
    EXPECT_THAT(result.output, HasSubstr(says)) << flag;
  }
  auto sampled = RunBinary("computed", absl::StrCat("run ", Model(),
                                                    " --ids 1 -n 2 --temperature 0.7 "
                                                    "--top-p 0.9 --threads 2 --io-depth 1"));
  EXPECT_EQ(sampled.exit_code, 0) << sampled.output;
}

// "1,2,3,..." of `n` token ids.
std::string LongPrompt(int n) {
  std::string ids;
  for (int i = 0; i < n; ++i) absl::StrAppend(&ids, i == 0 ? "" : ",", 1 + i % 200);
  return ids;
}

// Sizes and counts that once wrapped or were taken silently: a context of
// 2^60 planned as 0 B, -n 2^32-1 wrapped the positions, a budget above the
// machine, a CPU that does not exist, a prompt past the model's positions.
TEST_F(ComputedCliTest, ContextBudgetAndCpuFlagsOutsideTheMachineOrTheModelAreRefused) {
  const std::pair<std::string, std::string> cases[] = {
      {"plan --context -1 " + Model(), "--context"},
      {"plan --context 1152921504606846976 " + Model(), "not in range 1 to 16777216"},
      {"logits " + Model() + " --tokens " + LongPrompt(4097),
       "the prompt reaches position 4097, past the model's 4096 (" + Model() +
           "/manifest.json: config.max_position_embeddings)"},
      {"run " + Model() + " --ids 1 -n 4294967295",
       "the prompt and the tokens to generate need 4294967297 positions"},
      {"run " + Model() + " --ids 1 -n 1 --cpus 99",
       "--cpus: CPU 99 is not one this process may run on (allowed: "},
      {"run " + Model() + " --ids 1 -n 1 --budget 1000T", "budget 1000.00 TiB is above the "},
  };
  for (const auto& [args, says] : cases) {
    auto result = RunBinary("computed", args);
    EXPECT_NE(result.exit_code, 0) << args;
    EXPECT_THAT(result.output, HasSubstr(says)) << args;
  }
}

// A NaN in the weights (with a matching CRC: a broken converter, not a flipped
// bit) stops the run naming the layer, instead of sampling token 0 with exit 0.
TEST_F(ComputedCliTest, ANonFiniteValueStopsTheRunNamingTheLayer) {
  const fs::path manifest_path = fs::path(Model()) / "manifest.json";
  nlohmann::ordered_json manifest;
  std::ifstream(manifest_path) >> manifest;
  for (auto& tensor : manifest["trunk"]["tensors"]) {
    if (tensor["name"] != "model.layers.2.input_layernorm.weight") continue;
    const uint64_t offset = tensor["data"]["offset"], bytes = tensor["data"]["bytes"];
    std::fstream trunk(fs::path(Model()) / "trunk.bin", std::ios::in | std::ios::out);
    std::string data(bytes, '\0');
    trunk.seekg(offset);
    trunk.read(data.data(), bytes);
    const float nan = std::nanf("");
    std::memcpy(data.data() + 4 * 7, &nan, sizeof(nan));
    trunk.seekp(offset);
    trunk.write(data.data(), bytes);
    tensor["crc32c"] = Crc32c(data);
  }
  std::ofstream(manifest_path) << manifest.dump();
  auto result = RunBinary("computed", "logits " + Model() + " --tokens 1,2,3 --greedy 2");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("layer 2's attention computed nan at position 0"));
}

// A disk that fills during convert: the error names the file that could not
// be written, and nothing partial is left (the directory convert made, or the
// files it wrote into one that was there). The disk is a small tmpfs in a
// mount namespace of the test's own.
TEST_F(ComputedCliTest, ConvertOntoAFullDiskNamesTheFileAndLeavesNothing) {
  // CI runs as root, as the tests of network namespaces need: a missing
  // namespace is a failure, not a skip.
  ASSERT_EQ(std::system("unshare -m true 2>/dev/null"), 0) << "no mount namespace here (unshare -m)";
  const fs::path mount = dir_ / "small";
  fs::create_directories(mount);
  const std::string computed = warp::testing::BinaryPath("computed");
  const std::string checkpoint = (warp::testing::SourceDir() / "tests/demo_model/kjv-moe").string();
  // 3 MiB runs out in trunk.bin; 6 MiB in a bank, after the trunk; 12000 and
  // 12100 KiB in tokenizer.json (the last reported "Input/output error").
  for (const char* size : {"3m", "6m", "12000k", "12100k"}) {
    for (bool existing : {false, true}) {
      SCOPED_TRACE(absl::StrCat(size, existing ? ", into an existing directory" : ""));
      const std::string script =
          absl::StrCat("mount -t tmpfs -o size=", size, " tmpfs ", mount.string(), " && ",
                       existing ? "mkdir " + mount.string() + "/k.warp && " : "", computed,
                       " --log-level warn convert --quiet ", checkpoint, " ", mount.string(),
                       "/k.warp; echo \"rc=$?\"; echo left:; ls -A ", mount.string(), " ",
                       mount.string(), "/k.warp 2>&1");
      FILE* pipe = ::popen(("unshare -m sh -c '" + script + "' 2>&1").c_str(), "r");
      ASSERT_NE(pipe, nullptr);
      std::string out;
      char buffer[4096];
      for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) out.append(buffer, n);
      ::pclose(pipe);
      EXPECT_THAT(out, HasSubstr("rc=1")) << out;
      EXPECT_THAT(out, ::testing::ContainsRegex("k.warp/(trunk|experts-L[0-9]+|tokenizer).(bin|json(.tmp)?) "
                                                "@[0-9]+: No space left on device"))
          << out;
      const std::string left = out.substr(out.find("left:"));
      if (existing) {  // the directory stays, empty
        EXPECT_THAT(left, ::testing::Not(HasSubstr(".bin"))) << out;
        EXPECT_THAT(left, ::testing::Not(HasSubstr("manifest"))) << out;
      } else {
        EXPECT_THAT(left, HasSubstr("No such file or directory")) << out;
      }
    }
  }
}

}  // namespace
}  // namespace warp::computed
