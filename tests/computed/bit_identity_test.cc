// DESIGN.md Invariant 1 from the command line: the logits of `computed
// logits` — every prompt position and every step of the greedy continuation —
// are byte-identical whatever reads the experts (the embedded store, three
// shard directories, or expertd daemons over a Unix socket and TCP), whatever
// the threads and prefill chunk, and whatever the budget, down to the floor
// where records are evicted and read again.

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/byte_size.h"
#include "common/client/grpc_source.h"
#include "common/format/container.h"
#include "common/io/file.h"
#include "computed/planner/planner.h"
#include "tests/computed/bit_identity_fixture.h"
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
namespace {

TEST_F(BitIdentityTest, LogitsDoNotDependOnThreadsOrChunking) {
  SetReference("--threads 1");
  ExpectIdentical("--threads 2");
  ExpectIdentical("--threads 2 --prefill-chunk 1");
  ExpectIdentical("--threads 1 --prefill-chunk 16");
  ExpectIdentical("--threads 2 --prefill-chunk 5 --io-threads 1");
}

TEST_F(BitIdentityTest, LogitsDoNotDependOnPrefetchLookaheadOrBudget) {
  SetReference("--no-prefetch --lookahead 0");
  ExpectIdentical("--lookahead 0");
  ExpectIdentical("--lookahead 1");
  ExpectIdentical("--lookahead 6");
  ExpectIdentical("--lookahead 16 --prefill-chunk 3");
  ExpectIdentical("--lookahead 6 --lookahead-precision 0");  // every rank hinted
  ExpectIdentical("--lookahead 6 --lookahead-precision 1");  // ranks never wrong only
  ExpectIdentical("--lookahead 6 --lookahead-depth 2 --lookahead-precision 0");
  ExpectIdentical("--lookahead 16 --lookahead-depth 2 --prefill-chunk 3");
  ExpectIdentical("--no-prefetch --lookahead 6");
  ExpectIdentical("--early-route --lookahead 6");
  ExpectIdentical("--early-route --prefill-chunk 3 --threads 2");
  ExpectIdentical("--budget 64M");  // every record stays cached
  ExpectIdentical("--io-engine pread --lookahead 6");
  ExpectIdentical("--no-ordered-pieces --lookahead 6 --lookahead-precision 0");
  ExpectIdentical("--io-depth 1 --lookahead 6 --lookahead-precision 0");  // one piece at a time
  // Records landing a page at a time: misses computed row block by row block.
  ExpectIdentical("--io-depth 2 --io-piece-kib 4 --lookahead 0");
}

// The modes the bits are compared in reach the store: its settings line says
// what it runs with (defaults first, then each flag changing its part).
TEST_F(BitIdentityTest, TheModesComparedAreTheModesTheStoreRuns) {
  ExpectSettings("", {"(duel, foresight on)", "reading with uring, 32 pieces of 1.00 MiB in flight, "
                      "ordered by priority"});
  ExpectSettings("--cache-policy arc", {"(arc, foresight on)"});
  ExpectSettings("--cache-policy lfru --no-foresight", {"(lfru, foresight off)"});
  ExpectSettings("--io-engine pread", {"reading with pread, verify"});
  ExpectSettings("--no-ordered-pieces", {"in flight per read, unordered"});
  ExpectSettings("--io-depth 2 --io-piece-kib 4", {"2 pieces of 4.00 KiB in flight"});
  ExpectSettings("--io-threads 1", {"1 I/O threads"});
}

// From the floor (two MoE layers' records: with this model's two, one token's
// working set, a quarter of the records) to a few records above it: records
// are evicted and read again, and every logit of the prefill and the
// continuation is still the same. (per_layer_floor_test: a floor below one
// working set.)
TEST_F(BitIdentityTest, LogitsDoNotDependOnEvictionAtAndJustAboveTheFloor) {
  auto container = Container::Open(Model());
  WARP_ASSERT_OK(container);
  const Manifest& manifest = (*container)->manifest();
  // `computed logits` and `run` size the KV cache for the prompt + continuation + 1.
  auto plan = ComputePlan(manifest, num_tokens_ + kGreedy + 1);
  WARP_ASSERT_OK(plan);
  const uint64_t record_bytes = manifest.banks.front().record_bytes;
  ASSERT_EQ(plan->working_set_bytes, 4 * 2 * record_bytes);  // top-4 x 2 MoE layers
  ASSERT_EQ(plan->bank_bytes, 32 * record_bytes);            // 2 layers x 16 experts

  // Below the floor, by one byte, is refused with the floor's figure.
  const std::string floor = std::to_string(plan->floor_bytes);
  auto refused = RunBinary("computed", "logits " + Model() + " --tokens " + tokens_ + " --greedy " +
                                           std::to_string(kGreedy) + " --budget " +
                                           std::to_string(plan->floor_bytes - 1));
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.output,
              ::testing::HasSubstr("is below the floor: this model needs at least " +
                                   FormatBytes(plan->floor_bytes)));

  SetReference("--no-prefetch --lookahead 0 --budget 64M");
  for (const uint64_t extra_records : {0, 1, 4}) {
    const std::string budget =
        " --budget " + std::to_string(plan->floor_bytes + extra_records * record_bytes);
    for (const char* mode : {"--no-prefetch --lookahead 0 --prefill-chunk 1", "--prefill-chunk 1",
                             "--lookahead 16 --prefill-chunk 3 --lookahead-precision 0",
                             "--threads 2", "", "--cache-policy arc --prefill-chunk 1",
                             "--cache-policy lru", "--cache-policy lfru --no-foresight",
                             "--lookahead-depth 2 --lookahead-precision 0 --prefill-chunk 2",
                             "--io-engine pread --prefill-chunk 1",
                             "--no-ordered-pieces --lookahead-precision 0"}) {
      const std::string flags = mode + budget;
      ExpectIdentical(flags);
      // The same run through `computed run`: more records read for a demand than
      // the banks hold (misses, and those a prediction or an early route brought
      // in), and more bytes, so records really were evicted and read again.
      const RunStats stats = Stats(flags);
      EXPECT_GT(stats.misses + stats.lookahead_hits + stats.certain_hits, 32u) << flags;
      EXPECT_GT(stats.read_bytes, static_cast<double>(plan->bank_bytes)) << flags;
    }
  }
  // Early routes (on above: the converter wrote the folds into the trunk) read
  // each layer's records before its router; off, or with `--early-route`, the
  // same bits. The folds are trunk bytes, so `--early-route` folds nothing
  // more and plans the same floor.
  auto early = ComputePlan(manifest, num_tokens_ + kGreedy + 1, "manifest.json", 1,
                           /*fold_early_routes=*/true);
  WARP_ASSERT_OK(early);
  EXPECT_EQ(early->floor_bytes, plan->floor_bytes);
  EXPECT_EQ(early->fold_bytes, 0u);
  for (const uint64_t extra_records : {0, 4}) {
    for (const char* mode : {"--no-early-route", "--early-route"}) {
      const std::string flags = std::string(mode) + " --prefill-chunk 2 --budget " +
                                std::to_string(plan->floor_bytes + extra_records * record_bytes);
      ExpectIdentical(flags);
      const RunStats stats = Stats(flags);
      EXPECT_GT(stats.misses + stats.lookahead_hits + stats.certain_hits, 32u) << flags;
    }
  }
  // With every record cached, each is read once: the comparison above is not vacuous.
  // (Unpaced: paced growth may hold the cache to the slots the prefault has backed.)
  const RunStats cached =
      Stats("--no-prefetch --lookahead 0 --prefill-chunk 1 --budget 64M --no-paced-growth");
  EXPECT_LE(cached.misses, 32u);
  EXPECT_LE(cached.read_bytes, static_cast<double>(plan->bank_bytes));
}

// --preload reads every record the cache holds before the first token. With
// a cache that holds them all, the run reads nothing and every use is a hit;
// with one that holds part, the rest is read on demand and evicted as before.
// Every logit is the reference's either way, through a daemon too.
TEST_F(BitIdentityTest, APreloadedCacheReadsNothingWhileItRuns) {
  auto container = Container::Open(Model());
  WARP_ASSERT_OK(container);
  auto plan = ComputePlan((*container)->manifest(), num_tokens_ + kGreedy + 1);
  WARP_ASSERT_OK(plan);
  SetReference("--no-prefetch --lookahead 0 --budget 64M");
  for (const char* mode : {"--preload --budget 64M", "--preload --budget 64M --threads 2",
                           "--preload --budget 64M --prefill-chunk 1 --lookahead 16"}) {
    ExpectIdentical(mode);
    const RunStats stats = Stats(mode);
    EXPECT_EQ(stats.misses, 0u) << mode;
    EXPECT_EQ(stats.lookahead_hits + stats.certain_hits, 0u) << mode;
    EXPECT_EQ(stats.read_bytes, 0.0) << mode;
    EXPECT_GT(stats.hits, 0u) << mode;
  }
  // At the floor the preload fills a quarter of the records; the rest miss.
  const std::string floor =
      "--preload --prefill-chunk 1 --budget " + std::to_string(plan->floor_bytes);
  ExpectIdentical(floor);
  const RunStats stats = Stats(floor);
  EXPECT_GT(stats.misses, 0u);
  EXPECT_GT(stats.hits, 0u);

  auto daemon = warp::testing::Daemon::Start({"--model", Model(), "--listen",
                                              "fastpath:" + (dir_ / "preload.sock").string(),
                                              "--budget", "64M"});
  WARP_ASSERT_OK(daemon);
  // Its first run fills the fresh daemon's cache: every use is a hit there.
  const std::string remote = "--preload --stores " + (*daemon)->addresses().at(0);
  const RunStats through_daemon = Stats(remote);
  EXPECT_EQ(through_daemon.misses, 0u);
  EXPECT_GT(through_daemon.hits, 0u);
  ExpectIdentical(remote);

  // A corrupt record stops the preload, and the run, naming the record.
  const BankEntry& bank = (*container)->manifest().banks.front();
  {
    std::fstream file((std::filesystem::path(Model()) / bank.file).string(),
                      std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(5 * bank.record_bytes + 64));
    file.put('\x5a');
  }
  auto corrupt = RunBinary("computed", "--log-level warn run --ids " + Model() + " " + tokens_ +
                                           " -n 2 --preload --budget 64M");
  EXPECT_EQ(corrupt.exit_code, 1) << corrupt.output;
  EXPECT_THAT(corrupt.output, ::testing::HasSubstr("checksum mismatch"));
  EXPECT_THAT(corrupt.output,
              ::testing::HasSubstr(bank.file + " @" + std::to_string(5 * bank.record_bytes)));
}

TEST_F(BitIdentityTest, LogitsDoNotDependOnShardsOrTransport) {
  SetReference("");
  std::string stores;
  ASSERT_NO_FATAL_FAILURE(StartThreeShardDaemons(stores));
  ExpectIdentical("--banks " + shards_);
  ExpectIdentical(stores);
  ExpectIdentical(stores + " --no-prefetch --lookahead 0");
}

// The stats line counts the same hits, misses and disk bytes whatever the
// transport: each daemon says how it served every record, and gRPC daemons
// report their reads. (The fast path carries no counters: it shows the bytes
// its misses read.) Synchronous and unpaced, so what hits does not depend on
// timing (paced growth follows the prefault thread's progress).
TEST_F(BitIdentityTest, StatsLineMeansTheSameOnEveryTransport) {
  const std::string sync = "--no-prefetch --lookahead 0 --prefill-chunk 1 --no-paced-growth";
  const RunStats embedded = Stats(sync);
  EXPECT_GT(embedded.hits, 0u);
  EXPECT_GT(embedded.misses, 0u);
  for (const char* scheme : {"fastpath:", "unix:"}) {
    SCOPED_TRACE(scheme);
    auto daemon =
        warp::testing::Daemon::Start({"--model", Model(), "--listen",
                                      scheme + (dir_ / "stats.sock").string(), "--budget", "64M"});
    WARP_ASSERT_OK(daemon);
    const RunStats remote = Stats(sync + " --stores " + (*daemon)->addresses().at(0));
    EXPECT_EQ(remote.hits, embedded.hits);
    EXPECT_EQ(remote.misses, embedded.misses);
    EXPECT_EQ(remote.lookahead_hits + remote.certain_hits, 0u);
    EXPECT_EQ(remote.read_bytes, embedded.read_bytes);
  }
}

// Issue 16: two computed processes on one machine (a `serve` and a `chat`, say)
// reading through the same local expertd share its cache: the second finds
// every record the first brought in, as leases on the daemon's memory, and
// computes the same bytes as the embedded store.
TEST_F(BitIdentityTest, ProcessesReadingThroughOneDaemonShareItsCache) {
  const std::string sync = "--no-prefetch --lookahead 0 --prefill-chunk 1";
  SetReference(sync);
  auto daemon = warp::testing::Daemon::Start({"--model", Model(), "--listen",
                                              "fastpath:" + (dir_ / "shared.sock").string(),
                                              "--budget", "1G"});
  WARP_ASSERT_OK(daemon);
  const std::string stores = sync + " --stores " + (*daemon)->addresses().at(0);
  const RunStats first = Stats(stores);
  EXPECT_GT(first.misses, 0u);
  const RunStats second = Stats(stores);
  EXPECT_EQ(second.misses, 0u);
  EXPECT_EQ(second.hits, first.hits + first.misses);
  ExpectIdentical(stores);
}

// gpt-oss (MXFP4 experts kept native, sliding layers whose ring of window + 16
// positions wraps within the 24-token prompt and its continuation): the same
// bits across threads, chunks, prefetch and lookahead, eviction and daemons.
class GptOssBitIdentityTest : public BitIdentityTest {
 protected:
  std::string FixtureName() const override { return "gpt_oss_mxfp4"; }
};

TEST_F(GptOssBitIdentityTest, LogitsDoNotDependOnSchedulingBudgetOrTransport) {
  auto container = Container::Open(Model());
  WARP_ASSERT_OK(container);
  auto plan = ComputePlan((*container)->manifest(), num_tokens_ + kGreedy + 1);
  WARP_ASSERT_OK(plan);
  const uint64_t record_bytes = (*container)->manifest().banks.front().record_bytes;
  SetReference("--threads 1 --no-prefetch --lookahead 0");
  for (const char* mode :
       {"--threads 2", "--prefill-chunk 1", "--prefill-chunk 16 --threads 2",
        "--prefill-chunk 5 --lookahead 16", "--no-prefetch --lookahead 4", "--lookahead 0",
        "--lookahead 16 --lookahead-depth 2 --lookahead-precision 0"}) {
    ExpectIdentical(mode);
  }
  for (const uint64_t extra_records : {0, 2}) {
    const std::string budget =
        "--budget " + std::to_string(plan->floor_bytes + extra_records * record_bytes);
    ExpectIdentical(budget + " --prefill-chunk 1");
    ExpectIdentical(budget + " --lookahead 16");
    ExpectIdentical(budget + " --lookahead 16 --lookahead-depth 2 --lookahead-precision 0");
    const RunStats stats = Stats(budget);
    EXPECT_GT(stats.read_bytes, static_cast<double>(plan->bank_bytes)) << budget;
  }
  auto daemon = warp::testing::Daemon::Start(
      {"--model", Model(), "--listen", "unix:" + (dir_ / "d").string()});
  WARP_ASSERT_OK(daemon);
  ExpectIdentical("--stores " + (*daemon)->addresses().at(0) + " --prefill-chunk 3");
}

// The families whose layers keep state token by token inside a chunk (Kimi's
// KDA recurrent state and conv history, DeepSeek V4's compressor windows and
// indexer): the same bits for prefill chunks 1, 3 and 16, threads, prefetch
// and lookahead, a budget at the floor and a daemon.
class StatefulBitIdentityTest : public BitIdentityTest {
 protected:
  void ExpectIdenticalInEveryMode() {
    auto container = Container::Open(Model());
    WARP_ASSERT_OK(container);
    auto plan = ComputePlan((*container)->manifest(), num_tokens_ + kGreedy + 1);
    WARP_ASSERT_OK(plan);
    SetReference("--threads 1 --no-prefetch --lookahead 0 --prefill-chunk 1");
    for (const char* mode :
         {"--prefill-chunk 3", "--prefill-chunk 16 --threads 2", "--threads 2 --lookahead 16",
          "--no-prefetch --lookahead 4", "--io-engine pread --prefill-chunk 3",
          "--lookahead 16 --lookahead-depth 2 --lookahead-precision 0 --prefill-chunk 3"}) {
      ExpectIdentical(mode);
    }
    const std::string floor = "--budget " + std::to_string(plan->floor_bytes) + " --prefill-chunk 3";
    ExpectIdentical(floor);
    // At the floor records are evicted and read again: more bytes read than the banks hold.
    EXPECT_GT(Stats(floor).read_bytes, static_cast<double>(plan->bank_bytes)) << floor;
    auto daemon = warp::testing::Daemon::Start(
        {"--model", Model(), "--listen", "unix:" + (dir_ / "d").string()});
    WARP_ASSERT_OK(daemon);
    ExpectIdentical("--stores " + (*daemon)->addresses().at(0) + " --prefill-chunk 16");
    // The daemon computes the experts (issue 47): the family's activation,
    // sent with the rows, and the same kernels.
    ExpectIdentical("--expert-compute daemons --stores " + (*daemon)->addresses().at(0) +
                    " --prefill-chunk 3");
  }
};

// Kimi-Linear: KDA with the softplus decay and NoPE MLA.
class KimiLinearBitIdentityTest : public StatefulBitIdentityTest {
 protected:
  std::string FixtureName() const override { return "kimi_linear_bf16"; }
};

TEST_F(KimiLinearBitIdentityTest, LogitsDoNotDependOnChunkingSchedulingBudgetOrTransport) {
  ExpectIdenticalInEveryMode();
}

// Kimi K3: AttnRes, LatentMoE with MXFP4 latent experts kept native, gated
// MLA, the lower-bounded KDA decay.
class KimiK3BitIdentityTest : public StatefulBitIdentityTest {
 protected:
  std::string FixtureName() const override { return "kimi_k3_mxfp4"; }
};

TEST_F(KimiK3BitIdentityTest, LogitsDoNotDependOnChunkingSchedulingBudgetOrTransport) {
  ExpectIdenticalInEveryMode();
}

// DeepSeek V4 as released (FP8 trunk, FP4 experts): hyper-connections,
// sliding + CSA/HCA compressed attention, hash layers read CERTAIN.
class DeepseekV4BitIdentityTest : public StatefulBitIdentityTest {
 protected:
  std::string FixtureName() const override { return "deepseek_v4_native"; }
};

TEST_F(DeepseekV4BitIdentityTest, LogitsDoNotDependOnChunkingSchedulingBudgetOrTransport) {
  ExpectIdenticalInEveryMode();
  std::vector<std::string> addresses;
  StartHalves("v4", "64M", addresses);
  ExpectIdentical("--stores " + absl::StrJoin(addresses, ",") + " --prefill-chunk 3");
}

// DeepSeek V4.1: CSA2's shared caches, indexers and candidate blocks,
// single-pass hyper-connections, and the engram's rows from its tables: the
// same bits with no engram cache and a large one, and through two daemons
// that split the experts and the tables' records (fast path and gRPC).
class DeepseekV41BitIdentityTest : public StatefulBitIdentityTest {
 protected:
  std::string FixtureName() const override { return "deepseek_v41_native"; }
};

TEST_F(DeepseekV41BitIdentityTest, LogitsDoNotDependOnChunkingSchedulingBudgetTransportOrEngramCache) {
  ExpectIdenticalInEveryMode();
  ExpectIdentical("--engram-cache-mib 0 --prefill-chunk 3");
  ExpectIdentical("--engram-cache-mib 1024 --prefill-chunk 16 --threads 2");
  std::vector<std::string> addresses;
  StartHalves("v41", "64M", addresses);
  ExpectIdentical("--stores " + absl::StrJoin(addresses, ",") + " --prefill-chunk 3");
  ExpectIdentical("--stores " + absl::StrJoin(addresses, ",") + " --engram-cache-mib 0");
  // With --stores the tables' rows come from the daemons alone (sources.cc
  // OpenEngramStore), split between them by record (engram_serve_test).
}

// GLM-5.3: KDA, DSA layers whose pooled indexer picks positions per token,
// hyper-connections.
class Glm5NextBitIdentityTest : public StatefulBitIdentityTest {
 protected:
  std::string FixtureName() const override { return "glm5_next_bf16"; }
};

TEST_F(Glm5NextBitIdentityTest, LogitsDoNotDependOnChunkingSchedulingBudgetOrTransport) {
  ExpectIdenticalInEveryMode();
}

// q4 experts under both arithmetics: 8-bit activations (the default) in
// integer dots, and --activations f32 in float ones, each as independent of the
// threads, the chunking, the budget and the transport.
class Q4ActivationsBitIdentityTest : public BitIdentityTest {
 protected:
  std::string ConvertFlags() const override { return "--experts q4"; }
};

TEST_F(Q4ActivationsBitIdentityTest, EightBitLogitsDoNotDependOnThreadsChunkingBudgetOrTransport) {
  ASSERT_NO_FATAL_FAILURE(ExpectIdenticalAcrossThreadsChunksBudgetAndDaemons("--activations q8"));
  // The default is q8, and the setting is taken: float activations give other logits.
  EXPECT_EQ(FirstDifference(Logits("--threads 1").prefill, reference_.prefill), "");
  EXPECT_NE(FirstDifference(Logits("--threads 1 --activations f32").prefill, reference_.prefill),
            "");
}

TEST_F(Q4ActivationsBitIdentityTest, FloatLogitsDoNotDependOnThreadsChunkingBudgetOrTransport) {
  ExpectIdenticalAcrossThreadsChunksBudgetAndDaemons("--activations f32");
}

// MXFP4 experts kept native (gpt-oss): the default's E2M1 codes through a byte
// table into the same integer dots (GptOssBitIdentityTest), and the float ones.
class Mxfp4ActivationsBitIdentityTest : public BitIdentityTest {
 protected:
  std::string FixtureName() const override { return "gpt_oss_mxfp4"; }
};

TEST_F(Mxfp4ActivationsBitIdentityTest, FloatLogitsDoNotDependOnThreadsChunkingBudgetOrTransport) {
  ASSERT_NO_FATAL_FAILURE(ExpectIdenticalAcrossThreadsChunksBudgetAndDaemons("--activations f32"));
  EXPECT_NE(FirstDifference(Logits("--threads 1").prefill, reference_.prefill), "");
}

// vq3r experts: table-lookup kernels over codebooks the engine holds, records
// from daemons that know nothing of codebooks.
class Vq3rBitIdentityTest : public BitIdentityTest {
 protected:
  std::string ConvertFlags() const override { return "--experts vq3r"; }
};

TEST_F(Vq3rBitIdentityTest, LogitsDoNotDependOnThreadsChunkingBudgetOrTransport) {
  ExpectIdenticalAcrossThreadsChunksBudgetAndDaemons("");
}

// Issue 47: experts computed where their records live give the bits of the
// records read here: one daemon, a row limit that splits each prefill pass,
// and three shard daemons (two over Unix sockets, one over TLS) computing
// their own experts; every prefill chunk and thread count. `auto` computes
// on daemons only across a network: on loopback it reads records, and says so.
TEST_F(BitIdentityTest, LogitsDoNotDependOnWhereTheExpertsAreComputed) {
  SetReference("--threads 1");
  auto one = warp::testing::Daemon::Start({"--model", Model(), "--listen",
                                           "unix:" + (dir_ / "one").string(), "--max-compute-rows",
                                           "2", "--compute-threads", "1", "--budget", "1M"});
  WARP_ASSERT_OK(one);
  const std::string daemons = "--expert-compute daemons --stores " + (*one)->addresses().at(0);
  for (const char* mode : {"", "--prefill-chunk 1", "--prefill-chunk 5 --threads 2",
                           "--no-prefetch --lookahead 0", "--lookahead 16 --prefill-chunk 3"}) {
    ExpectIdentical(daemons + " " + mode);
  }
  // The daemon did compute them: every pass's rows, in requests of 2.
  auto client = GrpcExpertSource::Connect({.address = (*one)->addresses().at(0)});
  WARP_ASSERT_OK(client);
  const std::map<std::string, uint64_t> counters = (*client)->Counters();
  EXPECT_GT(counters.at("expertd.compute.requests"), counters.at("expertd.compute.rows") / 2);
  EXPECT_GT(counters.at("expertd.compute.expert_rows"), counters.at("expertd.compute.rows"));
  std::string stores;
  ASSERT_NO_FATAL_FAILURE(StartThreeShardDaemons(stores));
  ExpectIdentical("--expert-compute daemons --prefill-chunk 3 " + stores);
  ExpectIdentical("--expert-compute daemons --threads 2 " + stores);

  // The stats line counts each expert once whichever computes it.
  const RunStats here = Stats("--no-prefetch --lookahead 0 " + stores);
  const RunStats there = Stats("--expert-compute daemons --no-prefetch --lookahead 0 " + stores);
  EXPECT_EQ(there.hits + there.misses, here.hits + here.misses);

  // auto: these daemons are on this machine, so records, and the log says why.
  auto log = RunBinary("computed", "--log-level info logits " + Model() + " --tokens " + tokens_ +
                                       " " + stores);
  EXPECT_EQ(log.exit_code, 0) << log.output;
  EXPECT_THAT(log.output, ::testing::HasSubstr("expert records read from the stores, some of "
                                               "which are on this machine"));
  // Daemons that cannot compute (the fast path) are refused for it, saying why.
  auto fast = warp::testing::Daemon::Start(
      {"--model", Model(), "--listen", "fastpath:" + (dir_ / "fast").string()});
  WARP_ASSERT_OK(fast);
  auto refused = RunBinary("computed", "logits " + Model() + " --tokens " + tokens_ +
                                           " --expert-compute daemons --stores " +
                                           (*fast)->addresses().at(0));
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.output, ::testing::HasSubstr("--expert-compute daemons: every expert source "
                                                   "must be an expertd over gRPC"));
}

// Issue 47: experts placed by learned heat with the hottest replicated
// (expertd shard --usage --replicate-mib), over 2 and 4 daemons, read as
// records or computed there: whichever holder serves a replicated expert,
// the bits are the embedded store's.
TEST_F(BitIdentityTest, LogitsDoNotDependOnReplicasOrTheNumberOfDaemons) {
  SetReference("");
  auto learned = RunBinary("computed", "--log-level warn run --ids " + Model() + " " + tokens_ +
                                           " -n 3 --learn");
  ASSERT_EQ(learned.exit_code, 0) << learned.output;
  for (int n : {2, 4}) {
    SCOPED_TRACE(n);
    std::vector<std::string> dirs;
    for (int i = 0; i < n; ++i) dirs.push_back((dir_ / absl::StrCat("r", n, "-", i)).string());
    auto shard = RunBinary("expertd", "shard --quiet " + Model() + " --dirs " +
                                          absl::StrJoin(dirs, ",") + " --usage " + Model() +
                                          "/usage.warp --replicate-mib 1");
    ASSERT_EQ(shard.exit_code, 0) << shard.output;
    ASSERT_THAT(shard.output, ::testing::Not(::testing::HasSubstr("(0 replicated")));
    std::vector<std::string> addresses;
    for (int i = 0; i < n; ++i) {
      auto daemon = warp::testing::Daemon::Start(
          {"--model", dirs[i], "--listen", "unix:" + dirs[i] + ".sock", "--budget", "1M"});
      WARP_ASSERT_OK(daemon);
      addresses.push_back((*daemon)->addresses().at(0));
      daemons_.push_back(std::move(*daemon));
    }
    const std::string stores = "--stores " + absl::StrJoin(addresses, ",");
    ExpectIdentical(stores);
    ExpectIdentical(stores + " --threads 2 --prefill-chunk 1 --lookahead 16");
    ExpectIdentical("--expert-compute daemons --prefill-chunk 3 " + stores);
    ExpectIdentical("--banks " + absl::StrJoin(dirs, ","));
  }
}

TEST_F(BitIdentityTest, TwoDaemonsSplittingOneCopyOfTheBanks) {
  SetReference("");
  std::vector<std::string> addresses;
  ASSERT_NO_FATAL_FAILURE(StartHalves("f", "1M", addresses));
  ExpectIdentical("--stores " + absl::StrJoin(addresses, ","));
  ExpectIdentical("--stores " + absl::StrJoin(addresses, ",") +
                  " --prefill-chunk 1 --lookahead 16");
  // One half alone cannot serve the model: the other half's experts are held by no one.
  auto result = RunBinary(
      "computed", "logits " + Model() + " --tokens " + tokens_ + " --stores " + addresses[0]);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, ::testing::HasSubstr("held by no shard"));
}

// Daemons whose caches hold 5 of their 16 records each: the daemons evict and
// re-read (the fast path under leases, the gRPC path by copy) and the logits
// stay the same.
TEST_F(BitIdentityTest, DaemonsEvictingTheirRecordsGiveTheSameLogits) {
  SetReference("");
  std::vector<std::string> addresses;
  ASSERT_NO_FATAL_FAILURE(StartHalves("e", "140K", addresses));
  const std::string stores = "--stores " + absl::StrJoin(addresses, ",");
  for (const char* mode :
       {"", "--prefill-chunk 1", "--no-prefetch --lookahead 0 --prefill-chunk 1"}) {
    const std::string flags = stores + " " + mode;
    ExpectIdentical(flags);
    // Only the gRPC daemon reports its store's counters (the fast-path client
    // has none): it reads more than its 16 records of 28 KiB (misses, and records
    // an early route or a prediction brought in).
    const RunStats stats = Stats(flags);
    EXPECT_GT(stats.misses + stats.lookahead_hits + stats.certain_hits, 16u) << flags;
    EXPECT_GT(stats.read_bytes, 16 * 28 * 1024.0) << flags;
  }
}

TEST_F(BitIdentityTest, LocalDaemonCachesMustFitInTheBudget) {
  std::vector<std::unique_ptr<warp::testing::Daemon>> daemons;
  std::vector<std::string> addresses;
  for (int i = 0; i < 2; ++i) {
    auto daemon = warp::testing::Daemon::Start(
        {"--model", Model(), "--shard", std::to_string(i) + "/2", "--listen",
         "unix:" + (dir_ / ("b" + std::to_string(i))).string(), "--budget", "1M"});
    WARP_ASSERT_OK(daemon);
    addresses.push_back((*daemon)->addresses().at(0));
    daemons.push_back(std::move(*daemon));
  }
  const std::string stores = " --stores " + absl::StrJoin(addresses, ",");
  // Just above the floor (878 KiB) the budget leaves about 250 KiB for experts,
  // less than the two daemons' 1 MiB caches.
  auto refused = RunBinary(
      "computed", "logits " + Model() + " --tokens " + tokens_ + stores + " --budget 900K");
  EXPECT_EQ(refused.exit_code, 1);
  // Each holds 16 records of 28 KiB, so a 1M budget caches all 448 KiB of them.
  EXPECT_THAT(refused.output, ::testing::HasSubstr("the local expertd caches hold 896.00 KiB"));
  EXPECT_THAT(refused.output, ::testing::HasSubstr(addresses[1] + " 448.00 KiB"));
  EXPECT_THAT(refused.output, ::testing::HasSubstr("computed plan --daemons 2"));
  SetReference("");
  ExpectIdentical(stores + " --budget 2M");
  // Without --budget the daemons' caches count once, as memory they hold:
  // the run's budget is its trunk and KV plus them, not a share of what the
  // machine has left after them (which a second process would find smaller).
  auto defaulted =
      RunBinary("computed", "--log-level info logits " + Model() + " --tokens " + tokens_ + stores);
  EXPECT_EQ(defaulted.exit_code, 0) << defaulted.output;
  EXPECT_THAT(
      defaulted.output,
      ::testing::HasSubstr("trunk + KV + the 2 local expertd caches (896.00 KiB), counted once"));
  ExpectIdentical(stores);
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
