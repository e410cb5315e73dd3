// `expertd serve` as an operator meets it: startup failures exit 1 with a
// message naming what is wrong, a signal drains and exits 0 leaving no socket
// file behind, and flags override the config file. Real processes throughout.

#include "expertd/serve.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "common/client/grpc_source.h"
#include "common/store/store_flags.h"
#include "expertd/serve_command.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/daemon.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tiny_container.h"

namespace warp::expertd {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::warp::testing::CommandResult;
using ::warp::testing::Daemon;
using ::warp::testing::StatusIs;

// `expertd ARGS`, killed after 10 s: a regression that lets a misconfigured
// daemon start serving must fail its test, not hang the suite.
CommandResult RunExpertd(const std::string& args) {
  return warp::testing::RunBinary("expertd", args, 10);
}

void WriteFile(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

class ServeTest : public ::testing::Test {
 protected:
  void SetUp() override { WARP_ASSERT_OK(warp::testing::WriteTinyContainer(model_)); }

  // "serve --model M --listen unix:DIR/NAME" plus `extra`.
  std::string ServeArgs(const std::string& extra, const std::string& socket = "s.sock") {
    return absl::StrCat("serve --model ", model_.string(),
                        " --listen unix:", (dir_ / socket).string(), " ", extra);
  }

  // A connected gRPC client of `address` (as the daemon printed it).
  std::unique_ptr<GrpcExpertSource> Connect(const std::string& address) {
    auto client =
        GrpcExpertSource::Connect({.address = address, .retry_deadline = std::chrono::seconds(2)});
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(*client) : nullptr;
  }

  uint64_t StatsCounter(const std::string& address, const std::string& name) {
    std::unique_ptr<GrpcExpertSource> client = Connect(address);
    if (client == nullptr) return 0;
    absl::StatusOr<v1::StatsReply> stats = client->Stats();
    EXPECT_TRUE(stats.ok()) << stats.status();
    if (!stats.ok() || !stats->counters().contains(name)) {
      ADD_FAILURE() << "no counter " << name;
      return 0;
    }
    return stats->counters().at(name);
  }

  warp::testing::TempDir dir_;
  fs::path model_ = dir_ / "m.warp";
};

// --- Startup failures ---------------------------------------------------------

TEST_F(ServeTest, MissingModelDirExitsOneNamingIt) {
  const fs::path missing = dir_ / "nowhere.warp";
  const CommandResult result = RunExpertd(absl::StrCat(
      "serve --model ", missing.string(), " --listen unix:", (dir_ / "s.sock").string()));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, AllOf(HasSubstr("expertd serve: "), HasSubstr(missing.string())));
  EXPECT_FALSE(fs::exists(dir_ / "s.sock"));
}

TEST_F(ServeTest, MissingBankFileExitsOneNamingIt) {
  fs::remove(model_ / "experts-L1.bin");
  const CommandResult result = RunExpertd(ServeArgs(""));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("experts-L1.bin"));
}

TEST_F(ServeTest, MissingConfigFileExitsOneNamingIt) {
  const fs::path config = dir_ / "absent.textproto";
  const CommandResult result = RunExpertd(ServeArgs("--config " + config.string()));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr(config.string()));
}

TEST_F(ServeTest, MalformedConfigExitsOneNamingFileAndLine) {
  const fs::path config = dir_ / "bad.textproto";
  WriteFile(config, absl::StrCat("model: \"", model_.string(),
                                 "\"\n"
                                 "listen: \"unix:",
                                 (dir_ / "s.sock").string(),
                                 "\"\n"
                                 "budget_bytes: lots\n"));
  const CommandResult result = RunExpertd("serve --config " + config.string());
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr(config.string() + ":3:")) << "file:line:column";
}

TEST_F(ServeTest, UnknownConfigFieldIsAnError) {
  const fs::path config = dir_ / "typo.textproto";
  WriteFile(config, absl::StrCat("model: \"", model_.string(),
                                 "\"\n"
                                 "cache_budget: 1048576\n"));
  const CommandResult result = RunExpertd("serve --config " + config.string() +
                                          " --listen unix:" + (dir_ / "s.sock").string());
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, AllOf(HasSubstr(config.string() + ":2:"), HasSubstr("cache_budget")));
}

TEST_F(ServeTest, NoModelIsAnError) {
  const CommandResult result = RunExpertd("serve --listen unix:" + (dir_ / "s.sock").string());
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("no --model"));
}

TEST_F(ServeTest, MalformedShardExitsOneSayingWhatIsExpected) {
  for (const std::string shard : {"1", "0/0", "2/2"}) {  // 0/0 once served unsharded
    SCOPED_TRACE(shard);
    const CommandResult result = RunExpertd(ServeArgs("--shard " + shard));
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output,
                HasSubstr("--shard " + shard + ": expected I/N with 0 <= I < N, e.g. 0/2"));
  }
}

TEST_F(ServeTest, BadListenSpecExitsOneSayingWhatIsExpected) {
  for (const std::string spec : {"http://127.0.0.1:7070", "tcp:7070", "unix:"}) {
    SCOPED_TRACE(spec);
    const CommandResult result =
        RunExpertd(absl::StrCat("serve --model ", model_.string(), " --listen ", spec));
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("--listen " + spec));
  }
  // Unknown schemes and a port without a host get the list of accepted forms.
  for (const std::string spec : {"http://127.0.0.1:7070", "tcp:7070"}) {
    SCOPED_TRACE(spec);
    const CommandResult result =
        RunExpertd(absl::StrCat("serve --model ", model_.string(), " --listen ", spec));
    EXPECT_THAT(result.output, HasSubstr("expected unix:PATH, tcp:HOST:PORT or fastpath:PATH"));
  }
}

TEST_F(ServeTest, UnknownCachePolicyExitsOneNamingTheChoices) {
  const CommandResult result = RunExpertd(ServeArgs("--cache-policy fifo"));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("cache policy 'fifo': expected lfru, lru, arc or duel"));
}

TEST_F(ServeTest, UnknownIoEngineExitsOneNamingTheChoices) {
  const CommandResult result = RunExpertd(ServeArgs("--io-engine aio"));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("unknown I/O engine \"aio\" (pread or uring)"));
}

TEST_F(ServeTest, UringPiecesThatAreNotPagesExitOne) {
  const fs::path config = dir_ / "c.textproto";
  WriteFile(config, absl::StrCat("model: \"", model_.string(), "\"\nio_engine: \"uring\"\n",
                                 "io_piece_bytes: 1000\n"));
  const CommandResult result = RunExpertd(
      absl::StrCat("serve --config ", config.string(), " --listen tcp:127.0.0.1:0 --insecure"));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("piece size 1000"));
}

TEST_F(ServeTest, APortPast65535AndTooManyIoThreadsAreRefused) {
  CommandResult result = RunExpertd(
      absl::StrCat("serve --model ", model_.string(), " --insecure --listen tcp:127.0.0.1:999999"));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("--listen tcp:127.0.0.1:999999: port \"999999\" is not 0 "
                                       "to 65535"));
  result = RunExpertd(ServeArgs("--io-threads 100000"));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("io_threads 100000: at most 1024"));
}

TEST_F(ServeTest, StagingSlotsWithoutAFastPathListenerOrPast1024AreRefused) {
  CommandResult result = RunExpertd(ServeArgs("--staging-slots 2"));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("staging_slots 2: only fast-path clients use staging slots, and no "
                        "fastpath: address is listened on"));
  result = RunExpertd(absl::StrCat("serve --model ", model_.string(), " --listen fastpath:",
                                   (dir_ / "f.sock").string(), " --staging-slots 5000"));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("staging_slots 5000: at most 1024"));
}

TEST(NormalizeConfigTest, StagingSlotsAreTwicePerIoThreadWithAFastPathListenerOnly) {
  v1::ExpertdConfig config;
  config.set_model("m.warp");
  config.set_io_threads(3);
  config.add_listen("unix:/tmp/g.sock");
  absl::StatusOr<v1::ExpertdConfig> normalized = NormalizeConfig(config);
  WARP_ASSERT_OK(normalized);
  EXPECT_EQ(normalized->staging_slots(), 0u);
  config.add_listen("fastpath:/tmp/f.sock");
  normalized = NormalizeConfig(config);
  WARP_ASSERT_OK(normalized);
  EXPECT_EQ(normalized->staging_slots(), 6u);
  config.set_staging_slots(0);  // set, not unset: copies through the socket
  normalized = NormalizeConfig(config);
  WARP_ASSERT_OK(normalized);
  EXPECT_EQ(normalized->staging_slots(), 0u);
}

TEST(NormalizeConfigTest, ComputeDefaultsAndTheRowLimit) {
  v1::ExpertdConfig config;
  config.set_model("m.warp");
  config.add_listen("unix:/tmp/g.sock");
  absl::StatusOr<v1::ExpertdConfig> normalized = NormalizeConfig(config);
  WARP_ASSERT_OK(normalized);
  EXPECT_EQ(normalized->max_compute_rows(), 256u);
  EXPECT_GE(normalized->compute_threads(), 1u);
  config.set_max_compute_rows(5000);
  EXPECT_THAT(NormalizeConfig(config).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("max_compute_rows 5000: at most 4096")));
}

TEST_F(ServeTest, AMissingSocketDirectoryIsNamedNotCalledAddressInUse) {
  for (const std::string scheme : {"unix:", "fastpath:"}) {
    const std::string socket = (dir_ / "no-such-dir" / "s.sock").string();
    const CommandResult result =
        RunExpertd(absl::StrCat("serve --model ", model_.string(), " --listen ", scheme, socket));
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr((dir_ / "no-such-dir").string() + " does not exist"))
        << scheme;
  }
}

TEST_F(ServeTest, UnparsableBudgetFlagIsAnError) {
  const CommandResult result = RunExpertd(ServeArgs("--budget 12Q"));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("12Q"));
}

TEST_F(ServeTest, TcpPortHeldByAnotherProgramExitsNonZeroNamingTheAddress) {
  // A plain listening socket (no SO_REUSEPORT), as any other program holds a port.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string address = absl::StrCat("tcp:127.0.0.1:", ntohs(addr.sin_port));
  const CommandResult result =
      RunExpertd(absl::StrCat("serve --model ", model_.string(), " --insecure --listen ", address));
  ::close(fd);
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_NE(result.exit_code, 137) << "expertd served a port another program holds";
  EXPECT_THAT(result.output, HasSubstr("cannot listen on " + address));
}

TEST_F(ServeTest, TcpPortInUseExitsNonZeroNamingTheAddress) {
  auto first =
      Daemon::Start({"--model", model_.string(), "--listen", "tcp:127.0.0.1:0", "--insecure"});
  WARP_ASSERT_OK(first);
  const std::string address = (*first)->addresses().at(0);
  ASSERT_THAT(address, HasSubstr("tcp:127.0.0.1:"));
  ASSERT_THAT(address, Not(HasSubstr("tcp:127.0.0.1:0")));
  const CommandResult second =
      RunExpertd(absl::StrCat("serve --model ", model_.string(), " --insecure --listen ", address));
  EXPECT_NE(second.exit_code, 0) << second.output;
  EXPECT_NE(second.exit_code, 137) << "the second daemon was serving the same port";
  EXPECT_THAT(second.output, HasSubstr("cannot listen on " + address +
                                       ": the port is in use (another expertd, or another "
                                       "program, listens there)"));
  EXPECT_EQ((*first)->Stop(SIGTERM), 0);
}

TEST_F(ServeTest, UnixSocketOfALiveDaemonIsNotTakenOver) {
  const std::string listen = "unix:" + (dir_ / "s.sock").string();
  auto first = Daemon::Start({"--model", model_.string(), "--listen", listen});
  WARP_ASSERT_OK(first);
  const CommandResult second = RunExpertd(ServeArgs(""));
  EXPECT_NE(second.exit_code, 0) << second.output;
  EXPECT_NE(second.exit_code, 137) << "the second daemon took the socket over";
  EXPECT_THAT(second.output,
              HasSubstr("cannot listen on " + listen + ": already served by another expertd"));
  // The first daemon still answers on its socket.
  std::unique_ptr<GrpcExpertSource> client = Connect(listen);
  ASSERT_NE(client, nullptr);
  const ExpertKey key{1, 2};
  WARP_EXPECT_OK(client->ReadAll(std::span(&key, 1)).at(0));
  client.reset();
  EXPECT_EQ((*first)->Stop(SIGTERM), 0);
}

TEST_F(ServeTest, FastPathSocketOfALiveDaemonIsNotTakenOver) {
  const std::string listen = "fastpath:" + (dir_ / "f.sock").string();
  auto first = Daemon::Start({"--model", model_.string(), "--listen", listen});
  WARP_ASSERT_OK(first);
  const CommandResult second =
      RunExpertd(absl::StrCat("serve --model ", model_.string(), " --listen ", listen));
  EXPECT_NE(second.exit_code, 0) << second.output;
  EXPECT_NE(second.exit_code, 137) << "the second daemon took the socket over";
  EXPECT_THAT(second.output,
              HasSubstr("cannot listen on " + listen + ": already served by another expertd"));
  EXPECT_EQ((*first)->Stop(SIGTERM), 0);
}

// What a daemon killed with SIGKILL leaves: a socket file nobody accepts on.
TEST_F(ServeTest, AStaleSocketFileOfADeadDaemonIsReplaced) {
  for (const std::string scheme : {"unix:", "fastpath:"}) {
    const fs::path socket = dir_ / (scheme == "unix:" ? "s.sock" : "f.sock");
    const std::string listen = scheme + socket.string();
    auto dead = Daemon::Start({"--model", model_.string(), "--listen", listen});
    WARP_ASSERT_OK(dead);
    EXPECT_EQ((*dead)->Stop(SIGKILL), 128 + SIGKILL);
    struct stat st;
    ASSERT_EQ(::lstat(socket.c_str(), &st), 0) << "SIGKILL leaves the file";
    auto next = Daemon::Start({"--model", model_.string(), "--listen", listen});
    WARP_ASSERT_OK(next) << listen;
    EXPECT_EQ((*next)->addresses().at(0), listen);
    EXPECT_EQ((*next)->Stop(SIGTERM), 0);
  }
}

// --- Lifecycle ----------------------------------------------------------------

TEST_F(ServeTest, SigtermDrainsExitsZeroAndRemovesTheSocket) {
  const fs::path socket = dir_ / "s.sock";
  auto daemon = Daemon::Start({"--model", model_.string(), "--listen", "unix:" + socket.string()});
  WARP_ASSERT_OK(daemon);
  EXPECT_EQ((*daemon)->addresses().at(0), "unix:" + socket.string());
  struct stat st;
  ASSERT_EQ(::lstat(socket.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0660u) << std::oct << (st.st_mode & 07777);
  {
    std::unique_ptr<GrpcExpertSource> client = Connect("unix:" + socket.string());
    ASSERT_NE(client, nullptr);
    const std::vector<ExpertKey> keys = {{1, 0}, {2, 3}};
    for (const absl::StatusOr<ExpertRecord>& record : client->ReadAll(keys)) {
      WARP_EXPECT_OK(record);
    }
  }
  EXPECT_EQ((*daemon)->Stop(SIGTERM), 0);
  EXPECT_FALSE(fs::exists(fs::symlink_status(socket)));
}

TEST_F(ServeTest, SigtermRemovesTheFastPathSocketToo) {
  const fs::path grpc_socket = dir_ / "g.sock";
  const fs::path fast_socket = dir_ / "f.sock";
  auto daemon =
      Daemon::Start({"--model", model_.string(), "--listen", "unix:" + grpc_socket.string(),
                     "--listen", "fastpath:" + fast_socket.string(), "--budget", "1M"});
  WARP_ASSERT_OK(daemon);
  struct stat st;
  ASSERT_EQ(::lstat(fast_socket.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0660u) << std::oct << (st.st_mode & 07777);
  EXPECT_EQ((*daemon)->Stop(SIGTERM), 0);
  EXPECT_FALSE(fs::exists(fs::symlink_status(grpc_socket)));
  EXPECT_FALSE(fs::exists(fs::symlink_status(fast_socket)));
}

TEST_F(ServeTest, SigintAlsoDrainsAndExitsZero) {
  const fs::path socket = dir_ / "s.sock";
  auto daemon = Daemon::Start({"--model", model_.string(), "--listen", "unix:" + socket.string(),
                               "--listen", "tcp:127.0.0.1:0", "--insecure"});
  WARP_ASSERT_OK(daemon);
  ASSERT_EQ((*daemon)->addresses().size(), 2u);
  EXPECT_EQ((*daemon)->Stop(SIGINT), 0);
  EXPECT_FALSE(fs::exists(fs::symlink_status(socket)));
}

// An idle gRPC channel (a connected client between reads) must not hold up
// the drain: gRPC's Shutdown waits for the channel's connection otherwise
// (3.3-4.8 s measured before the drain deadline was shortened).
TEST_F(ServeTest, SigtermWithAnIdleGrpcClientExitsWithinASecond) {
  const fs::path socket = dir_ / "s.sock";
  auto daemon = Daemon::Start({"--model", model_.string(), "--listen", "unix:" + socket.string(),
                               "--listen", "tcp:127.0.0.1:0", "--insecure"});
  WARP_ASSERT_OK(daemon);
  std::vector<std::unique_ptr<GrpcExpertSource>> clients;
  for (const std::string& address : (*daemon)->addresses()) {
    clients.push_back(Connect(address));
    ASSERT_NE(clients.back(), nullptr);
    const ExpertKey key{1, 1};
    WARP_ASSERT_OK(clients.back()->ReadAll(std::span(&key, 1)).at(0));
  }
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ((*daemon)->Stop(SIGTERM), 0);
  const auto drain = std::chrono::steady_clock::now() - start;
  EXPECT_LT(drain, std::chrono::seconds(1))
      << std::chrono::duration_cast<std::chrono::milliseconds>(drain).count() << " ms";
  std::printf(
      "drained with idle gRPC clients in %lld ms\n",
      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(drain).count()));
}

TEST_F(ServeTest, SocketModeComesFromTheConfig) {
  const fs::path socket = dir_ / "s.sock";
  const fs::path config = dir_ / "c.textproto";
  WriteFile(config, absl::StrCat("model: \"", model_.string(), "\"\nsocket_mode: 0600\n"));
  auto daemon = Daemon::Start({"--config", config.string(), "--listen", "unix:" + socket.string()});
  WARP_ASSERT_OK(daemon);
  struct stat st;
  ASSERT_EQ(::lstat(socket.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u) << std::oct << (st.st_mode & 07777);
}

// --- Config and flags -----------------------------------------------------------

TEST_F(ServeTest, ConfigFieldsApplyWithoutFlags) {
  const fs::path config = dir_ / "c.textproto";
  WriteFile(config, absl::StrCat("model: \"", model_.string(),
                                 "\"\n"
                                 "budget_bytes: 16384\n"));  // one of its two records
  // Daemon waits for one "listening" line per --listen flag, so the address
  // comes from a flag here; ListenFlagReplacesTheConfigList covers the config's.
  auto daemon =
      Daemon::Start({"--config", config.string(), "--listen", "tcp:127.0.0.1:0", "--insecure"});
  WARP_ASSERT_OK(daemon);
  EXPECT_EQ(StatsCounter((*daemon)->addresses().at(0), "expertd.store.cache_capacity_bytes"),
            16384u);
}

// The cache's slots are faulted in ahead by default; --no-prefault leaves them
// to the reads (no read is made here, so none is faulted in).
TEST_F(ServeTest, TheCacheIsFaultedInAheadUnlessNoPrefault) {
  for (const bool prefault : {true, false}) {
    std::vector<std::string> args = {"--model",  model_.string(), "--budget", "32K",
                                     "--listen", "tcp:127.0.0.1:0", "--insecure"};
    if (!prefault) args.push_back("--no-prefault");
    auto daemon = Daemon::Start(args);
    WARP_ASSERT_OK(daemon);
    const std::string address = (*daemon)->addresses().at(0);
    const uint64_t slots = StatsCounter(address, "expertd.store.cache_capacity_bytes") /
                           StatsCounter(address, "expertd.store.cache_slot_bytes");
    ASSERT_GT(slots, 0u);
    uint64_t prefaulted = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    do {
      prefaulted = StatsCounter(address, "expertd.store.cache_prefaulted_slots");
      if (!prefault || prefaulted == slots) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (std::chrono::steady_clock::now() < deadline);
    EXPECT_EQ(prefaulted, prefault ? slots : 0u) << (prefault ? "default" : "--no-prefault");
  }
}

TEST_F(ServeTest, FlagsOverrideConfigFields) {
  const fs::path config = dir_ / "c.textproto";
  WriteFile(config, absl::StrCat("model: \"", model_.string(),
                                 "\"\n"
                                 "listen: \"unix:",
                                 (dir_ / "from-config.sock").string(),
                                 "\"\n"
                                 "budget_bytes: 16384\n"));
  auto daemon = Daemon::Start({"--config", config.string(), "--budget", "32K", "--listen",
                               "tcp:127.0.0.1:0", "--insecure"});
  WARP_ASSERT_OK(daemon);
  ASSERT_EQ((*daemon)->addresses().size(), 1u);
  const std::string address = (*daemon)->addresses()[0];
  EXPECT_THAT(address, HasSubstr("tcp:127.0.0.1:"));
  EXPECT_EQ(StatsCounter(address, "expertd.store.cache_capacity_bytes"), 32768u);
  // --listen replaces the config's list; it does not add to it.
  EXPECT_FALSE(fs::exists(dir_ / "from-config.sock"));
}

TEST_F(ServeTest, ListenFromTheConfigIsUsed) {
  const fs::path socket = dir_ / "from-config.sock";
  const fs::path config = dir_ / "c.textproto";
  WriteFile(config, absl::StrCat("model: \"", model_.string(),
                                 "\"\nlisten: \"unix:", socket.string(), "\"\n"));
  // No --listen flag, so Daemon does not wait for readiness: connect with retries.
  auto daemon = Daemon::Start({"--config", config.string()});
  WARP_ASSERT_OK(daemon);
  auto client = GrpcExpertSource::Connect(
      {.address = "unix:" + socket.string(), .retry_deadline = std::chrono::seconds(10)});
  WARP_ASSERT_OK(client);
  const ExpertKey key{2, 1};
  WARP_EXPECT_OK((*client)->ReadAll(std::span(&key, 1)).at(0));
  client->reset();
  EXPECT_EQ((*daemon)->Stop(SIGTERM), 0);
}

// The config's store knobs are ExpertStore::Options' fields: set from a
// struct and read back, each knob comes back (no field left behind on one side).
TEST(StoreConfigTest, TheStoreKnobsRoundTripThroughTheConfig) {
  ExpertStore::Options store{.io_threads = 7,
                             .cache_policy = EvictionPolicy::kArc,
                             .prefault_cache = false,
                             .foresight = false};
  store.banks.verify = false;
  store.banks.verify_every_read = true;
  store.banks.io_backend = IoBackend::kPread;
  store.banks.uring.depth = 3;
  store.banks.uring.piece_bytes = 8192;
  store.banks.ordered_pieces = false;
  v1::ExpertdConfig config;
  SetStoreFields(store, config);
  absl::StatusOr<ExpertStore::Options> back = StoreOptionsOf(config);
  WARP_ASSERT_OK(back);
  EXPECT_EQ(back->io_threads, 7u);
  EXPECT_EQ(back->cache_policy, EvictionPolicy::kArc);
  EXPECT_FALSE(back->prefault_cache);
  EXPECT_FALSE(back->foresight);
  EXPECT_FALSE(back->banks.verify);
  EXPECT_TRUE(back->banks.verify_every_read);
  EXPECT_EQ(back->banks.io_backend, IoBackend::kPread);
  EXPECT_EQ(back->banks.uring.depth, 3u);
  EXPECT_EQ(back->banks.uring.piece_bytes, 8192u);
  EXPECT_FALSE(back->banks.ordered_pieces);
  // skip_crc is no_verify's old name: either one skips the CRC.
  v1::ExpertdConfig old_name;
  old_name.set_skip_crc(true);
  absl::StatusOr<ExpertStore::Options> skipped = StoreOptionsOf(old_name);
  WARP_ASSERT_OK(skipped);
  EXPECT_FALSE(skipped->banks.verify);
}

// An empty config is the daemon's defaults: ExpertStore::Options', with the
// cache faulted in ahead.
TEST(StoreConfigTest, AnEmptyConfigGivesTheStoreDefaults) {
  absl::StatusOr<ExpertStore::Options> store = StoreOptionsOf(v1::ExpertdConfig());
  WARP_ASSERT_OK(store);
  const ExpertStore::Options defaults;
  EXPECT_EQ(store->io_threads, defaults.io_threads);
  EXPECT_EQ(store->cache_policy, defaults.cache_policy);
  EXPECT_TRUE(store->prefault_cache);
  EXPECT_TRUE(store->foresight);
  EXPECT_TRUE(store->banks.verify);
  EXPECT_FALSE(store->banks.verify_every_read);
  EXPECT_EQ(store->banks.io_backend, defaults.banks.io_backend);
  EXPECT_EQ(store->banks.uring.depth, defaults.banks.uring.depth);
  EXPECT_EQ(store->banks.uring.piece_bytes, defaults.banks.uring.piece_bytes);
  EXPECT_TRUE(store->banks.ordered_pieces);
}

std::set<std::string> FlagNames(const CLI::App& app) {
  std::set<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) {
      if (name != "help") names.insert("--" + name);
    }
  }
  return names;
}

// The daemon takes every store flag of computed's embedded store under the
// same name, but the two that tune a store beside a compute engine.
TEST(StoreConfigTest, TheDaemonTakesTheEmbeddedStoresFlags) {
  ExpertStore::Options embedded_options, daemon_options;
  CLI::App embedded, daemon, serve;
  AddStoreFlags(&embedded, embedded_options, StoreFlagsFor::kEmbedded);
  AddStoreFlags(&daemon, daemon_options, StoreFlagsFor::kDaemon);
  AddServeCommand(serve);
  std::set<std::string> expected = FlagNames(embedded);
  EXPECT_TRUE(expected.contains("--no-foresight"));
  expected.erase("--prefault-anytime");
  expected.erase("--no-paced-growth");
  EXPECT_EQ(FlagNames(daemon), expected);
  const std::set<std::string> served = FlagNames(*serve.get_subcommand("serve"));
  for (const std::string& flag : expected) EXPECT_TRUE(served.contains(flag)) << flag;
}

}  // namespace
}  // namespace warp::expertd
