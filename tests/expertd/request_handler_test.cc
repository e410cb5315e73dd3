// The request rules expertd applies, through each transport in turn: an
// in-process ExpertStore (its pread hooked to record what reaches the disk)
// behind one RequestHandler, served by the gRPC service on a Unix socket and
// by the fast path, both in this process.

#include "expertd/request_handler.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/client/fastpath_connection.h"
#include "common/client/grpc_source.h"
#include "common/client/uds_source.h"
#include "common/format/container.h"
#include "common/io/file.h"
#include "expertd/grpc_service.h"
#include "expertd/uds_server.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tiny_container.h"

namespace warp {

static void PrintTo(const ExpertKey& key, std::ostream* os) {
  *os << "{layer " << key.layer << ", expert " << key.expert << "}";
}

namespace expertd {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

constexpr uint32_t kMaxKeys = 2;

v1::ExpertKey ProtoKey(uint32_t layer, uint32_t expert) {
  v1::ExpertKey key;
  key.set_layer(layer);
  key.set_expert(expert);
  return key;
}

class RequestHandlerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto manifest = warp::testing::WriteTinyContainer(model_, {.num_layers = 2, .num_experts = 8});
    WARP_ASSERT_OK(manifest);
    record_bytes_ = manifest->banks[0].record_bytes;
    auto container = Container::Open(model_);
    WARP_ASSERT_OK(container);
    ExpertStore::Options options{.cache_bytes = 16 * record_bytes_, .io_threads = 1};
    options.banks.pread = [this](int fd, std::span<std::byte> out, uint64_t offset,
                                 std::string_view path, const ReadRank& /*rank*/,
                                 const OnLanded& /*on_landed*/) {
      return Pread(fd, out, offset, path);
    };
    auto store = ExpertStore::Open(std::move(*container), std::move(options));
    WARP_ASSERT_OK(store);
    store_ = std::move(*store);
    handler_ = std::make_unique<RequestHandler>(*store_, kMaxKeys);

    compute_ = std::make_unique<ComputeHandler>(*store_, ComputeHandler::Options{});
    service_ = std::make_unique<ExpertServiceImpl>(*handler_, *compute_, std::chrono::seconds(10));
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + (dir_ / "g.sock").string(),
                             grpc::InsecureServerCredentials());
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = v1::ExpertStore::NewStub(
        grpc::CreateChannel(grpc_address(), grpc::InsecureChannelCredentials()));

    auto fastpath = UdsServer::Start(*handler_, {.path = (dir_ / "f.sock").string()});
    WARP_ASSERT_OK(fastpath);
    fastpath_ = std::move(*fastpath);
  }

  void TearDown() override {
    if (!release_read_.HasBeenNotified()) release_read_.Notify();
    if (fastpath_) fastpath_->Shutdown();
    if (server_) server_->Shutdown();
  }

  std::string grpc_address() const { return "unix:" + (dir_ / "g.sock").string(); }
  std::string fastpath_path() const { return (dir_ / "f.sock").string(); }

  // The next read to reach the disk waits for release_read_.
  void BlockNextRead() {
    absl::MutexLock lock(&mu_);
    block_next_read_ = true;
  }

  std::vector<ExpertKey> reads() {
    absl::MutexLock lock(&mu_);
    return reads_;
  }

  uint64_t Counter(const std::string& name) const {
    return store_->Counters().at("expertd.store." + name);
  }

  // Waits (up to 10 s) for a counter that a one-way request moves.
  bool AwaitCounter(const std::string& name, uint64_t value) const {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (Counter(name) != value) {
      if (absl::Now() > deadline) return false;
      absl::SleepFor(absl::Milliseconds(2));
    }
    return true;
  }

  std::shared_ptr<FastPathConnection> OpenFastPath() {
    auto connection =
        FastPathConnection::Open(fastpath_path(), 0, std::chrono::seconds(5), nullptr);
    EXPECT_TRUE(connection.ok()) << connection.status();
    return connection.ok() ? *connection : nullptr;
  }

  // LOOKAHEAD hints of `experts` of `layer` in `client`'s name (a synchronous RPC).
  void GrpcHint(ClientId client, uint32_t layer, const std::vector<uint32_t>& experts) {
    v1::PrefetchRequest request;
    for (uint32_t expert : experts) *request.add_keys() = ProtoKey(layer, expert);
    request.set_priority(v1::PRIORITY_LOOKAHEAD);
    request.set_client(client);
    grpc::ClientContext context;
    v1::PrefetchReply reply;
    ASSERT_TRUE(stub_->Prefetch(&context, request, &reply).ok());
  }

  // `client` cancels its hints of layers <= through_layer: how many reads it dropped.
  uint32_t GrpcCancel(ClientId client, uint32_t through_layer) {
    v1::CancelSpeculativeRequest request;
    request.set_through_layer(through_layer);
    request.set_client(client);
    grpc::ClientContext context;
    v1::CancelSpeculativeReply reply;
    EXPECT_TRUE(stub_->CancelSpeculative(&context, request, &reply).ok());
    return reply.cancelled();
  }

  // A LOOKAHEAD read over gRPC: served after every lookahead read queued before it.
  void GrpcLookaheadRead(uint32_t layer, uint32_t expert) {
    v1::ReadRequest request;
    *request.add_keys() = ProtoKey(layer, expert);
    request.set_priority(v1::PRIORITY_LOOKAHEAD);
    grpc::ClientContext context;
    auto reader = stub_->Read(&context, request);
    v1::ReadChunk chunk;
    while (reader->Read(&chunk)) {
    }
    ASSERT_TRUE(reader->Finish().ok());
  }

  warp::testing::TempDir dir_;
  fs::path model_ = dir_ / "m.warp";
  uint64_t record_bytes_ = 0;
  absl::Notification read_blocked_;
  absl::Notification release_read_;

 private:
  absl::Status Pread(int fd, std::span<std::byte> out, uint64_t offset, std::string_view path) {
    const size_t name_at = path.rfind("experts-L");
    const ExpertKey key{static_cast<uint32_t>(std::stoul(std::string(path.substr(name_at + 9)))),
                        static_cast<uint32_t>(offset / record_bytes_)};
    bool block = false;
    {
      absl::MutexLock lock(&mu_);
      reads_.push_back(key);
      block = std::exchange(block_next_read_, false);
    }
    if (block) {
      read_blocked_.Notify();
      release_read_.WaitForNotification();
    }
    return PreadFull(fd, out, offset, path);
  }

  absl::Mutex mu_;
  std::vector<ExpertKey> reads_ ABSL_GUARDED_BY(mu_);
  bool block_next_read_ ABSL_GUARDED_BY(mu_) = false;

 protected:
  std::unique_ptr<ExpertStore> store_;
  std::unique_ptr<RequestHandler> handler_;
  std::unique_ptr<ComputeHandler> compute_;
  std::unique_ptr<ExpertServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::ExpertStore::Stub> stub_;
  std::unique_ptr<UdsServer> fastpath_;  // last: its connections use the handler
};

TEST_F(RequestHandlerTest, ATooLongHintListIsCappedTheSameOverGrpc) {
  v1::PrefetchRequest request;
  for (uint32_t expert = 0; expert < 5; ++expert) *request.add_keys() = ProtoKey(1, expert);
  request.set_priority(v1::PRIORITY_LOOKAHEAD);
  grpc::ClientContext context;
  v1::PrefetchReply reply;
  ASSERT_TRUE(stub_->Prefetch(&context, request, &reply).ok());
  EXPECT_EQ(reply.accepted(), kMaxKeys);
  ASSERT_NO_FATAL_FAILURE(GrpcLookaheadRead(1, 7));  // queued after the hints
  EXPECT_THAT(reads(), ElementsAre(ExpertKey{1, 0}, ExpertKey{1, 1}, ExpertKey{1, 7}));
}

TEST_F(RequestHandlerTest, ATooLongHintListIsCappedTheSameOverTheFastPath) {
  std::shared_ptr<FastPathConnection> connection = OpenFastPath();
  ASSERT_NE(connection, nullptr);
  std::vector<ExpertKey> hints;
  for (uint32_t expert = 0; expert < 5; ++expert) hints.push_back({1, expert});
  connection->Prefetch(hints, Priority::kLookahead);
  const std::vector<ExpertKey> sentinel = {{1, 7}};  // served after the hint, queued after it
  WARP_ASSERT_OK(
      connection->Read(sentinel, Priority::kLookahead, [](const FastPathConnection::Reply&) {}));
  EXPECT_THAT(reads(), ElementsAre(ExpertKey{1, 0}, ExpertKey{1, 1}, ExpertKey{1, 7}));
}

TEST_F(RequestHandlerTest, HintsOfKeysNotHeldAreDroppedNotCounted) {
  RequestHandler::ProtoKeys keys;
  *keys.Add() = ProtoKey(1, 99);
  *keys.Add() = ProtoKey(7, 0);
  *keys.Add() = ProtoKey(2, 3);
  EXPECT_EQ(handler_->Prefetch(keys, v1::PRIORITY_CERTAIN, kLocalClient), 1u);
}

TEST_F(RequestHandlerTest, TooManyKeysFailTheReadAsAWholeOnBothTransports) {
  v1::ReadRequest request;
  for (uint32_t expert = 0; expert < 3; ++expert) *request.add_keys() = ProtoKey(1, expert);
  grpc::ClientContext context;
  auto reader = stub_->Read(&context, request);
  v1::ReadChunk chunk;
  EXPECT_FALSE(reader->Read(&chunk));
  const grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("3 keys exceed the limit of 2 per request"));

  std::shared_ptr<FastPathConnection> connection = OpenFastPath();
  ASSERT_NE(connection, nullptr);
  std::vector<FastPathConnection::Reply> replies;
  WARP_ASSERT_OK(
      connection->Read(std::vector<ExpertKey>{{1, 0}, {1, 1}, {1, 2}}, Priority::kDemand,
                       [&](const FastPathConnection::Reply& reply) { replies.push_back(reply); }));
  ASSERT_EQ(replies.size(), 1u);  // a refusal is one reply, even to a client that streams
  EXPECT_EQ(replies[0].header.status().code(),
            static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(replies[0].header.status().message(), status.error_message());
  EXPECT_TRUE(reads().empty());
}

TEST_F(RequestHandlerTest, CancelSpeculativeReachesTheStoreOverBothTransports) {
  BlockNextRead();
  std::shared_ptr<ReadBatch> first =
      store_->Read(std::vector<ExpertKey>{{1, 0}}, Priority::kDemand);
  read_blocked_.WaitForNotification();

  // gRPC: the client's hints queued by the synchronous Prefetch RPC in its
  // name, cancelled by the client.
  auto grpc_client = GrpcExpertSource::Connect({.address = grpc_address()});
  WARP_ASSERT_OK(grpc_client);
  ASSERT_NO_FATAL_FAILURE(GrpcHint((*grpc_client)->client_id(), 1, {2, 3}));
  (*grpc_client)->CancelSpeculative(1);
  ASSERT_TRUE(AwaitCounter("lookahead_cancelled", 2));

  // Fast path: hint and cancel travel on one connection, in order.
  auto uds_client = UdsExpertSource::Connect({.address = "fastpath:" + fastpath_path()});
  WARP_ASSERT_OK(uds_client);
  (*uds_client)->Prefetch(std::vector<ExpertKey>{{2, 2}, {2, 3}}, Priority::kLookahead);
  (*uds_client)->CancelSpeculative(2);
  ASSERT_TRUE(AwaitCounter("lookahead_cancelled", 4));

  release_read_.Notify();
  WARP_ASSERT_OK(first->WaitAll().at(0));
  ASSERT_NO_FATAL_FAILURE(GrpcLookaheadRead(2, 7));  // everything queued before it is done
  EXPECT_THAT(reads(), ElementsAre(ExpertKey{1, 0}, ExpertKey{2, 7}));
}

// A daemon shared by several clients: one's cancel withdraws its own hints,
// and a queued read goes only when no client hints it any more.
TEST_F(RequestHandlerTest, ACancelWithdrawsOnlyItsOwnClientsHints) {
  BlockNextRead();
  std::shared_ptr<ReadBatch> first =
      store_->Read(std::vector<ExpertKey>{{1, 0}}, Priority::kDemand);
  read_blocked_.WaitForNotification();

  // gRPC: the client ids the requests carry.
  ASSERT_NO_FATAL_FAILURE(GrpcHint(111, 1, {2, 3}));
  ASSERT_NO_FATAL_FAILURE(GrpcHint(222, 1, {3, 4}));
  EXPECT_EQ(GrpcCancel(111, 1), 1u);  // {1, 2}; {1, 3} is still 222's
  EXPECT_EQ(GrpcCancel(333, 1), 0u);  // a client that hinted nothing drops nothing
  EXPECT_EQ(GrpcCancel(222, 1), 2u);

  // Fast path: the client id travels with the hint, not the connection. Client
  // 5 hints on one connection and cancels on another (a source's pool of
  // connections); client 6 hints on a third.
  std::shared_ptr<FastPathConnection> hints = OpenFastPath(), cancels = OpenFastPath(),
                                      other = OpenFastPath();
  ASSERT_TRUE(hints && cancels && other);
  hints->Prefetch(std::vector<ExpertKey>{{2, 2}, {2, 3}}, Priority::kLookahead, 5);
  ASSERT_TRUE(AwaitCounter("queue_depth", 2));
  other->Prefetch(std::vector<ExpertKey>{{2, 3}, {2, 4}}, Priority::kLookahead, 6);
  ASSERT_TRUE(AwaitCounter("queue_depth", 3));
  cancels->CancelSpeculative(2, 5);
  ASSERT_TRUE(AwaitCounter("lookahead_cancelled", 4));  // {2, 2}: client 6 still hints {2, 3}

  release_read_.Notify();
  WARP_ASSERT_OK(first->WaitAll().at(0));
  ASSERT_NO_FATAL_FAILURE(GrpcLookaheadRead(2, 7));  // everything queued before it is done
  EXPECT_THAT(reads(),
              ElementsAre(ExpertKey{1, 0}, ExpertKey{2, 3}, ExpertKey{2, 4}, ExpertKey{2, 7}));
  EXPECT_EQ(Counter("lookahead_cancelled"), 4u);
}

}  // namespace
}  // namespace expertd
}  // namespace warp
