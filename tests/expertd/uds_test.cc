// The Unix-socket fast path against a real expertd process: leases keep
// slots from eviction, a client that goes away releases its leases, a bad
// frame closes only its own connection, and cached records are read in place.
// (The conformance suite runs every ExpertSource test on the fast path too.)

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/client/fastpath_connection.h"
#include "common/client/grpc_source.h"
#include "common/client/uds_source.h"
#include "common/format/container.h"
#include "common/io/file.h"
#include "common/wire/fastpath_frame.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/daemon.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tiny_container.h"

namespace warp {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

constexpr uint32_t kExperts = 8;  // per layer; layers 1 and 2

std::string AsString(std::span<const std::byte> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

class UdsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto manifest = warp::testing::WriteTinyContainer(model_, {.num_experts = kExperts});
    WARP_ASSERT_OK(manifest);
    record_bytes_ = manifest->banks[0].record_bytes;
  }

  // A daemon on fastpath_ (and grpc_, for Stats) whose cache holds `slots` records.
  void StartDaemon(uint32_t slots, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--model", model_.string(), "--listen",
                                     fastpath_, "--listen",      grpc_};
    if (slots > 0) {
      args.push_back("--budget");
      args.push_back(absl::StrCat(slots * record_bytes_, "B"));
    }
    args.insert(args.end(), extra.begin(), extra.end());
    auto daemon = warp::testing::Daemon::Start(args);
    WARP_ASSERT_OK(daemon);
    daemon_ = std::move(*daemon);
  }

  std::unique_ptr<UdsExpertSource> Client() {
    auto client = UdsExpertSource::Connect(
        {.address = fastpath_, .retry_deadline = std::chrono::seconds(10)});
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(*client) : nullptr;
  }

  absl::StatusOr<ExpertRecord> ReadOne(ExpertSource& source, const ExpertKey& key) {
    return source.ReadAll(std::span(&key, 1)).at(0);
  }

  uint64_t Counter(const std::string& name) {
    auto client = GrpcExpertSource::Connect({.address = grpc_});
    if (!client.ok()) return ~uint64_t{0};
    absl::StatusOr<v1::StatsReply> stats = (*client)->Stats();
    if (!stats.ok() || !stats->counters().contains("expertd.store." + name)) return ~uint64_t{0};
    return stats->counters().at("expertd.store." + name);
  }

  // Polls a counter until it equals `want` (the daemon notices a closed
  // connection on its own thread); false after 5 s.
  bool CounterBecomes(const std::string& name, uint64_t want) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (Counter(name) != want) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }

  std::string BankBytes(const ExpertKey& key) {
    auto bank = ReadFileToString(model_ / BankFileName(key.layer));
    EXPECT_TRUE(bank.ok());
    return bank->substr(key.expert * record_bytes_, record_bytes_);
  }

  // A raw connection that has sent `bytes` (no Hello).
  ScopedFd RawConnection(std::string_view bytes) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string path = fastpath_.substr(9);
    std::memcpy(addr.sun_path, path.data(), path.size());
    ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    EXPECT_EQ(::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::send(fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
    return fd;
  }

  // True if the daemon closes `fd` within 5 s: EOF, or a reset when it closed
  // with bytes of ours unread (a Unix socket then resets the peer).
  static bool ClosedByPeer(const ScopedFd& fd) {
    timeval timeout{.tv_sec = 5, .tv_usec = 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    char byte;
    const ssize_t n = ::recv(fd.get(), &byte, 1, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

  warp::testing::TempDir dir_;
  fs::path model_ = dir_ / "m.warp";
  std::string fastpath_ = "fastpath:" + (dir_ / "f.sock").string();
  std::string grpc_ = "unix:" + (dir_ / "g.sock").string();
  uint64_t record_bytes_ = 0;
  std::unique_ptr<warp::testing::Daemon> daemon_;
};

TEST_F(UdsTest, LeasedSlotIsNotEvictedWhileTheClientHoldsTheRecord) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(/*slots=*/2));
  std::unique_ptr<UdsExpertSource> client = Client();
  ASSERT_NE(client, nullptr);
  const ExpertKey held_key{1, 0};
  absl::StatusOr<ExpertRecord> held = ReadOne(*client, held_key);
  WARP_ASSERT_OK(held);
  const std::byte* held_at = held->bytes().data();
  const std::string before = AsString(held->bytes());
  ASSERT_EQ(before, BankBytes(held_key));
  for (uint32_t layer = 1; layer <= 2; ++layer) {
    for (uint32_t expert = 0; expert < kExperts; ++expert) {
      const ExpertKey key{layer, expert};
      if (key == held_key) continue;
      absl::StatusOr<ExpertRecord> other = ReadOne(*client, key);
      WARP_ASSERT_OK(other);
      EXPECT_EQ(AsString(other->bytes()), BankBytes(key));
    }
  }
  // The others took turns in the one unleased slot, ours stayed put. A read
  // that comes before the previous record's lease is back finds no free slot
  // and is staged instead (a CI run saw 11 evictions): the two count together.
  EXPECT_GE(Counter("cache_evictions") + Counter("staged_reads"), 13u);
  EXPECT_EQ(AsString(held->bytes()), before);
  absl::StatusOr<ExpertRecord> again = ReadOne(*client, held_key);
  WARP_ASSERT_OK(again);
  EXPECT_EQ(again->bytes().data(), held_at) << "still the same slot";
}

TEST_F(UdsTest, ZeroCopyTwoReadsOfACachedKeyShareOneAddress) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(/*slots=*/4));
  std::unique_ptr<UdsExpertSource> client = Client();
  ASSERT_NE(client, nullptr);
  const std::vector<ExpertKey> keys = {{2, 5}, {2, 5}, {1, 1}};
  std::vector<absl::StatusOr<ExpertRecord>> first = client->ReadAll(keys);
  absl::StatusOr<ExpertRecord> second = ReadOne(*client, keys[0]);
  for (const auto& record : first) WARP_ASSERT_OK(record);
  WARP_ASSERT_OK(second);
  EXPECT_EQ(first[0]->bytes().data(), first[1]->bytes().data());
  EXPECT_EQ(first[0]->bytes().data(), second->bytes().data());
  // Another key lies in the same mapping, a whole number of slots away.
  const auto distance = std::abs(first[2]->bytes().data() - first[0]->bytes().data());
  EXPECT_EQ(distance % record_bytes_, 0) << distance;
  EXPECT_EQ(AsString(second->bytes()), BankBytes(keys[0]));
  EXPECT_EQ(Counter("cache_pinned_bytes"), 2 * record_bytes_) << "two keys leased";
  first.clear();
  second = absl::CancelledError("dropped");
  EXPECT_TRUE(CounterBecomes("cache_pinned_bytes", 0)) << "releases reach the daemon";
}

TEST_F(UdsTest, AClientThatDisconnectsReleasesItsLeases) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(/*slots=*/2));
  {
    auto connection =
        FastPathConnection::Open(fastpath_.substr(9), 0, std::chrono::seconds(5), nullptr);
    WARP_ASSERT_OK(connection);
    const std::vector<ExpertKey> keys = {{1, 2}, {2, 3}};
    int records = 0;
    WARP_ASSERT_OK(
        (*connection)->Read(keys, Priority::kDemand, [&](const FastPathConnection::Reply& reply) {
          for (const v1::FastPathRecord& record : reply.header.records()) {
            EXPECT_EQ(record.location(), v1::RECORD_LOCATION_ARENA);
            EXPECT_NE(record.lease_id(), 0u);
            ++records;
          }
        }));
    EXPECT_EQ(records, 2);
    EXPECT_EQ(Counter("cache_pinned_bytes"), 2 * record_bytes_);
    // Leaves without a Release, as a client that crashed would.
  }
  EXPECT_TRUE(CounterBecomes("cache_pinned_bytes", 0));
  // Both slots are usable again: new keys are cached (and leased) in them.
  std::unique_ptr<UdsExpertSource> client = Client();
  ASSERT_NE(client, nullptr);
  std::vector<absl::StatusOr<ExpertRecord>> records = client->ReadAll({{{1, 4}, {1, 5}}});
  for (const auto& record : records) WARP_ASSERT_OK(record);
  EXPECT_EQ(Counter("cache_pinned_bytes"), 2 * record_bytes_);
}

TEST_F(UdsTest, BadMagicClosesThatConnectionOnly) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(/*slots=*/4));
  std::unique_ptr<UdsExpertSource> client = Client();
  ASSERT_NE(client, nullptr);
  WARP_ASSERT_OK(ReadOne(*client, {1, 1}));
  ScopedFd bad =
      RawConnection(std::string("NOPE\x04\x00\x00\x00"
                                "abcd",
                                12));
  EXPECT_TRUE(ClosedByPeer(bad));
  // The connection already open, and new ones, are served as before.
  absl::StatusOr<ExpertRecord> record = ReadOne(*client, {2, 2});
  WARP_ASSERT_OK(record);
  EXPECT_EQ(AsString(record->bytes()), BankBytes({2, 2}));
  std::unique_ptr<UdsExpertSource> fresh = Client();
  ASSERT_NE(fresh, nullptr);
  WARP_EXPECT_OK(ReadOne(*fresh, {1, 3}));
}

TEST_F(UdsTest, OversizedHeaderClosesThatConnection) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(/*slots=*/4));
  std::string preamble = "WXFP";
  const uint32_t too_long = kMaxFastPathHeaderBytes + 1;
  for (int i = 0; i < 4; ++i) preamble.push_back(static_cast<char>((too_long >> (8 * i)) & 0xff));
  ScopedFd bad = RawConnection(preamble);
  EXPECT_TRUE(ClosedByPeer(bad));
  std::unique_ptr<UdsExpertSource> client = Client();
  ASSERT_NE(client, nullptr);
  WARP_EXPECT_OK(ReadOne(*client, {1, 1}));
}

TEST_F(UdsTest, ARequestBeforeHelloClosesTheConnection) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(/*slots=*/4));
  v1::FastPathRequest request;
  v1::ExpertKey* key = request.mutable_read()->add_keys();
  key->set_layer(1);
  ScopedFd bad = RawConnection(EncodeFastPathFrame(request));
  EXPECT_TRUE(ClosedByPeer(bad));
}

TEST_F(UdsTest, WithoutACacheRecordsComeInTheReplyPayload) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(/*slots=*/0, {"--staging-slots", "0"}));
  auto connection =
      FastPathConnection::Open(fastpath_.substr(9), 0, std::chrono::seconds(5), nullptr);
  WARP_ASSERT_OK(connection);
  EXPECT_EQ((*connection)->hello().arena_bytes(), 0u);
  EXPECT_EQ((*connection)->mapping(), nullptr);
  EXPECT_TRUE((*connection)->hello().stream_records());
  const std::vector<ExpertKey> keys = {{1, 0}, {2, 7}};
  std::vector<FastPathConnection::Reply> replies;
  WARP_ASSERT_OK(
      (*connection)->Read(keys, Priority::kDemand, [&](const FastPathConnection::Reply& reply) {
        replies.push_back(reply);
      }));
  // Streamed: one reply per record as it was read, each key once, the last says so.
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_TRUE(replies[0].header.more());
  EXPECT_FALSE(replies[1].header.more());
  EXPECT_NE(replies[0].header.key_indices(0), replies[1].header.key_indices(0));
  for (const FastPathConnection::Reply& reply : replies) {
    ASSERT_EQ(reply.header.records_size(), 1);
    ASSERT_EQ(reply.header.key_indices_size(), 1);
    const v1::FastPathRecord& record = reply.header.records(0);
    EXPECT_EQ(record.location(), v1::RECORD_LOCATION_PAYLOAD);
    EXPECT_EQ(record.offset(), 0u);
    EXPECT_EQ(reply.header.payload_bytes(), record_bytes_);
    EXPECT_EQ(AsString(reply.payload->span().subspan(0, record.record_bytes())),
              BankBytes(keys.at(reply.header.key_indices(0))));
  }
  std::unique_ptr<UdsExpertSource> client = Client();
  ASSERT_NE(client, nullptr);
  absl::StatusOr<ExpertRecord> record = ReadOne(*client, {1, 6});
  WARP_ASSERT_OK(record);
  EXPECT_EQ(AsString(record->bytes()), BankBytes({1, 6}));
}

// A daemon without a cache reads records into staging slots of its shared
// memory and leases them like cached ones: no copy through the socket. With
// every staging slot leased, the next record comes as a copy.
TEST_F(UdsTest, WithoutACacheRecordsAreLeasedFromStagingSlots) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(/*slots=*/0, {"--staging-slots", "2"}));
  auto connection =
      FastPathConnection::Open(fastpath_.substr(9), 0, std::chrono::seconds(5), nullptr);
  WARP_ASSERT_OK(connection);
  EXPECT_EQ((*connection)->hello().arena_bytes(), 2 * record_bytes_);
  EXPECT_EQ((*connection)->hello().description().cache_bytes(), 0u);
  ASSERT_NE((*connection)->mapping(), nullptr);
  const std::vector<ExpertKey> keys = {{1, 0}, {2, 7}, {1, 3}};
  std::map<v1::RecordLocation, int> locations;
  std::vector<uint64_t> leases;
  WARP_ASSERT_OK(
      (*connection)->Read(keys, Priority::kDemand, [&](const FastPathConnection::Reply& reply) {
        const v1::FastPathRecord& record = reply.header.records(0);
        const ExpertKey& key = keys.at(reply.header.key_indices(0));
        ++locations[record.location()];
        std::span<const std::byte> bytes;
        if (record.location() == v1::RECORD_LOCATION_ARENA) {
          leases.push_back(record.lease_id());
          bytes = (*connection)->mapping()->span().subspan(record.offset(), record.record_bytes());
        } else {
          bytes = reply.payload->span().subspan(record.offset(), record.record_bytes());
        }
        EXPECT_EQ(AsString(bytes), BankBytes(key));
      }));
  EXPECT_EQ(locations[v1::RECORD_LOCATION_ARENA], 2);
  EXPECT_EQ(locations[v1::RECORD_LOCATION_PAYLOAD], 1) << "both staging slots were leased";
  EXPECT_EQ(Counter("staging_in_use"), 2u);
  EXPECT_EQ(Counter("staging_full"), 1u);
  for (uint64_t lease : leases) (*connection)->Release(lease);
  EXPECT_TRUE(CounterBecomes("staging_in_use", 0)) << "releases give the slots back";
  // The client source reads them in place too, right bytes after the churn.
  std::unique_ptr<UdsExpertSource> client = Client();
  ASSERT_NE(client, nullptr);
  for (uint32_t e = 0; e < kExperts; ++e) {
    absl::StatusOr<ExpertRecord> record = ReadOne(*client, {2, e});
    WARP_ASSERT_OK(record);
    EXPECT_EQ(AsString(record->bytes()), BankBytes({2, e}));
  }
}

// A daemon that checks every record's CRC32C says so, and its clients do not
// check again; one run with --no-verify leaves the check to them.
TEST_F(UdsTest, TheClientChecksTheCrcOnlyWhereTheDaemonDoesNot) {
  const ExpertKey bad{1, 4};
  {
    std::fstream bank(model_ / BankFileName(bad.layer),
                      std::ios::in | std::ios::out | std::ios::binary);
    bank.seekp(static_cast<std::streamoff>(bad.expert * record_bytes_ + 100));
    bank.put('\x5a');  // inside the payload; the footer still names the record
  }
  for (const bool daemon_verifies : {true, false}) {
    SCOPED_TRACE(daemon_verifies ? "daemon checks" : "daemon runs --no-verify");
    daemon_.reset();
    ASSERT_NO_FATAL_FAILURE(
        StartDaemon(/*slots=*/2, daemon_verifies ? std::vector<std::string>{}
                                                 : std::vector<std::string>{"--no-verify"}));
    auto connection =
        FastPathConnection::Open(fastpath_.substr(9), 0, std::chrono::seconds(5), nullptr);
    WARP_ASSERT_OK(connection);
    EXPECT_EQ((*connection)->hello().records_verified(), daemon_verifies);
    std::unique_ptr<UdsExpertSource> client = Client();
    ASSERT_NE(client, nullptr);
    EXPECT_THAT(ReadOne(*client, bad),
                StatusIs(absl::StatusCode::kDataLoss, HasSubstr("checksum mismatch")));
    absl::StatusOr<ExpertRecord> good = ReadOne(*client, {1, 5});
    WARP_ASSERT_OK(good);
    EXPECT_EQ(AsString(good->bytes()), BankBytes({1, 5}));
  }
}

// A client that does not ask for streamed replies (an older one) gets one
// reply per Read, its records in request order, as before.
TEST_F(UdsTest, AClientThatDoesNotAskForStreamingGetsOneReply) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(/*slots=*/0, {"--staging-slots", "0"}));
  v1::FastPathRequest hello;
  hello.mutable_hello()->set_protocol_version(kFastPathProtocolVersion);
  v1::FastPathRequest read;
  read.mutable_read()->set_request_id(5);
  for (const ExpertKey& key : {ExpertKey{2, 7}, ExpertKey{1, 0}}) {
    v1::ExpertKey* out = read.mutable_read()->add_keys();
    out->set_layer(key.layer);
    out->set_expert(key.expert);
  }
  ScopedFd fd = RawConnection(EncodeFastPathFrame(hello) + EncodeFastPathFrame(read));
  absl::StatusOr<ReceivedFastPathHeader> hello_reply = RecvFastPathHeader(fd.get());
  WARP_ASSERT_OK(hello_reply);
  v1::FastPathReply parsed;
  ASSERT_TRUE(parsed.ParseFromString(hello_reply->header));
  EXPECT_FALSE(parsed.hello().stream_records());
  absl::StatusOr<ReceivedFastPathHeader> read_reply = RecvFastPathHeader(fd.get());
  WARP_ASSERT_OK(read_reply);
  ASSERT_TRUE(parsed.ParseFromString(read_reply->header));
  const v1::FastPathReadReply& reply = parsed.read();
  EXPECT_EQ(reply.request_id(), 5u);
  ASSERT_EQ(reply.records_size(), 2);
  EXPECT_EQ(reply.key_indices_size(), 0);
  EXPECT_FALSE(reply.more());
  ASSERT_EQ(reply.payload_bytes(), 2 * record_bytes_);
  std::string payload(reply.payload_bytes(), '\0');
  WARP_ASSERT_OK(RecvFastPathPayload(fd.get(), std::as_writable_bytes(std::span(payload))));
  EXPECT_EQ(payload.substr(reply.records(0).offset(), record_bytes_), BankBytes({2, 7}));
  EXPECT_EQ(payload.substr(reply.records(1).offset(), record_bytes_), BankBytes({1, 0}));
}

TEST_F(UdsTest, RecordsOfTheOldMappingStayValidAcrossADaemonRestart) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(/*slots=*/4));
  std::unique_ptr<UdsExpertSource> client = Client();
  ASSERT_NE(client, nullptr);
  absl::StatusOr<ExpertRecord> held = ReadOne(*client, {2, 1});
  WARP_ASSERT_OK(held);
  EXPECT_EQ(daemon_->Stop(SIGKILL), 128 + SIGKILL);
  ASSERT_NO_FATAL_FAILURE(StartDaemon(/*slots=*/4));
  absl::StatusOr<ExpertRecord> fresh = ReadOne(*client, {2, 1});
  WARP_ASSERT_OK(fresh);
  EXPECT_NE(fresh->bytes().data(), held->bytes().data()) << "a new daemon, a new mapping";
  EXPECT_EQ(AsString(held->bytes()), BankBytes({2, 1}));
  EXPECT_EQ(AsString(fresh->bytes()), BankBytes({2, 1}));
}

TEST_F(UdsTest, SigtermWithAClientHoldingLeasesDrainsAndExitsZero) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(/*slots=*/4));
  std::unique_ptr<UdsExpertSource> client = Client();
  ASSERT_NE(client, nullptr);
  absl::StatusOr<ExpertRecord> held = ReadOne(*client, {1, 7});
  WARP_ASSERT_OK(held);
  EXPECT_EQ(daemon_->Stop(SIGTERM), 0);
  EXPECT_FALSE(fs::exists(fs::symlink_status(fastpath_.substr(9))));
  // The daemon is gone; the bytes it shared stay readable until the record goes.
  EXPECT_EQ(AsString(held->bytes()), BankBytes({1, 7}));
}

TEST_F(UdsTest, TooManyKeysFailsTheWholeRequest) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(/*slots=*/4, {"--max-keys", "2"}));
  std::unique_ptr<UdsExpertSource> client = Client();
  ASSERT_NE(client, nullptr);
  std::vector<absl::StatusOr<ExpertRecord>> records = client->ReadAll({{{1, 0}, {1, 1}, {1, 2}}});
  for (const auto& record : records) {
    EXPECT_THAT(record, StatusIs(absl::StatusCode::kInvalidArgument,
                                 HasSubstr("3 keys exceed the limit of 2")));
  }
}

TEST_F(UdsTest, HelloWithAnotherModelsFingerprintIsRefused) {
  ASSERT_NO_FATAL_FAILURE(StartDaemon(/*slots=*/4));
  auto connection =
      FastPathConnection::Open(fastpath_.substr(9), 0xfeedull, std::chrono::seconds(5), nullptr);
  EXPECT_THAT(connection,
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("model fingerprint")));
}

}  // namespace
}  // namespace warp
