// The Compute RPC on a real daemon process: a layer's experts computed where
// their records live, over rows a client sends, give the bits the client's
// own ExpertMath gives on the same records, over a Unix socket and over TLS
// on TCP, split into requests of the daemon's row limit, with 8-bit
// activations; and every malformed request is refused naming its field,
// with the daemon still serving afterwards.

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/client/fanout_source.h"
#include "common/client/grpc_source.h"
#include "common/compute/expert_math.h"
#include "common/compute/thread_pool.h"
#include "common/format/container.h"
#include "common/store/expert_store.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/daemon.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_certificates.h"
#include "tests/testing/tiny_container.h"

namespace warp {
namespace {

using ::testing::HasSubstr;
using ::warp::testing::Daemon;
using ::warp::testing::StatusIs;

constexpr uint64_t kWidth = 32;  // the tiny container's experts: [8, 32] gate/up, [32, 8] down
constexpr uint32_t kNumRows = 5;

class ComputeRpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WARP_ASSERT_OK(warp::testing::WriteTinyContainer(Model(), {.num_experts = 6}));
    for (uint32_t i = 0; i < kNumRows * kWidth; ++i) {
      rows_.push_back(static_cast<float>((i * 37) % 23) / 11.0f - 1.0f);
    }
  }

  std::string Model() const { return (dir_.path() / "m.warp").string(); }

  std::unique_ptr<Daemon> StartDaemon(std::vector<std::string> extra) {
    std::vector<std::string> args = {"--model", Model()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto daemon = Daemon::Start(args);
    EXPECT_TRUE(daemon.ok()) << daemon.status();
    return daemon.ok() ? std::move(*daemon) : nullptr;
  }

  std::unique_ptr<GrpcExpertSource> Connect(const std::string& address, TlsClientFiles tls = {}) {
    auto client = GrpcExpertSource::Connect({.address = address, .tls = tls});
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(*client) : nullptr;
  }

  // The experts of layer 1 each pass below computes: rows increasing, some shared.
  std::vector<ExpertRowsTask> Tasks() const {
    return {{.expert = 4, .rows = rows_of_4_},
            {.expert = 0, .rows = rows_of_0_},
            {.expert = 5, .rows = rows_of_5_}};
  }

  ComputePass Pass(std::span<const ExpertRowsTask> tasks, bool q8 = false) const {
    return {.layer = 1,
            .width = kWidth,
            .rows = rows_,
            .experts = tasks,
            .math = {.activation = ExpertActivation::kSwiGlu},
            .q8_activations = q8};
  }

  // What this process computes for `pass` from the container's own records.
  std::vector<std::vector<float>> Local(const ComputePass& pass) {
    auto container = Container::Open(Model());
    EXPECT_TRUE(container.ok()) << container.status();
    std::shared_ptr<const Container> shared = std::move(*container);
    auto store = ExpertStore::Open(shared, ExpertStore::EmbeddedOptions());
    EXPECT_TRUE(store.ok()) << store.status();
    ThreadPool pool(1);
    ComputeContext compute(pool, Arithmetic{.q8_activations = pass.q8_activations});
    auto math = ExpertMath::Create(pass.math, shared->manifest().banks.front(), shared->codebooks(),
                                   compute);
    EXPECT_TRUE(math.ok()) << math.status();
    std::vector<std::vector<float>> outputs;
    for (const ExpertRowsTask& task : pass.experts) {
      auto records = (*store)->ReadAll(std::vector<ExpertKey>{{pass.layer, task.expert}});
      EXPECT_TRUE(records[0].ok()) << records[0].status();
      std::vector<float> xs;
      for (uint32_t row : task.rows) {
        xs.insert(xs.end(), pass.rows.begin() + row * kWidth,
                  pass.rows.begin() + (row + 1) * kWidth);
      }
      std::vector<float>& out = outputs.emplace_back(task.rows.size() * kWidth);
      (*math)->Run(*records[0], xs, static_cast<uint32_t>(task.rows.size()), out);
    }
    return outputs;
  }

  // `computer` computes `tasks` with the bits this process gets.
  void ExpectComputesAsHere(ExpertComputer& computer, const std::vector<ExpertRowsTask>& tasks,
                            bool q8 = false) {
    const ComputePass pass = Pass(tasks, q8);
    absl::StatusOr<ComputedExperts> computed = computer.Compute(pass).get();
    ASSERT_TRUE(computed.ok()) << computed.status();
    ExpectSameBits(computed->outputs, Local(pass));
    EXPECT_EQ(computed->served.size(), tasks.size());
  }

  static void ExpectSameBits(const std::vector<std::vector<float>>& got,
                             const std::vector<std::vector<float>>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].size(), want[i].size()) << "expert " << i;
      EXPECT_EQ(std::memcmp(got[i].data(), want[i].data(), got[i].size() * sizeof(float)), 0)
          << "expert " << i;
    }
  }

  // A raw request of layer 1 over the first `rows` rows, for the refusals.
  v1::ComputeRequest Request(uint32_t rows = 2) const {
    v1::ComputeRequest request;
    request.set_layer(1);
    request.set_width(kWidth);
    request.set_num_rows(rows);
    request.set_rows(reinterpret_cast<const char*>(rows_.data()), rows * kWidth * sizeof(float));
    v1::ExpertRows* expert = request.add_experts();
    expert->set_expert(2);
    expert->add_rows(0);
    return request;
  }

  // Sends `request` as it is; the call's status.
  static grpc::Status Send(const std::string& address, const v1::ComputeRequest& request) {
    auto stub = v1::ExpertStore::NewStub(
        grpc::CreateChannel(GrpcTarget(address), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    auto reader = stub->Compute(&context, request);
    v1::ComputeChunk chunk;
    while (reader->Read(&chunk)) {
    }
    return reader->Finish();
  }

  warp::testing::TempDir dir_;
  std::vector<float> rows_;
  const std::vector<uint32_t> rows_of_4_ = {0, 1, 3}, rows_of_0_ = {2}, rows_of_5_ = {1, 2, 3, 4};
};

TEST_F(ComputeRpcTest, GivesTheClientsBitsOverEveryGrpcTransport) {
  auto certs = warp::testing::MakeTestCertificates(dir_.path());
  WARP_ASSERT_OK(certs);
  auto daemon = StartDaemon({"--listen", "unix:" + (dir_.path() / "d").string(), "--listen",
                             "tcp:127.0.0.1:0", "--tls-cert", certs->server_cert, "--tls-key",
                             certs->server_key, "--token-file", certs->token, "--budget", "1M"});
  ASSERT_NE(daemon, nullptr);
  for (const bool q8 : {false, true}) {
    for (const std::string& address :
         {daemon->addresses().at(0), "tls:" + daemon->addresses().at(1).substr(4)}) {
      SCOPED_TRACE(address);
      auto client = Connect(address, {.ca = certs->ca, .token_file = certs->token});
      ASSERT_NE(client, nullptr);
      EXPECT_EQ(client->description().max_compute_rows(), 256u);
      ExpectComputesAsHere(*client, Tasks(), q8);
    }
  }
  auto client = Connect(daemon->addresses().at(0));
  ASSERT_NE(client, nullptr);
  const std::map<std::string, uint64_t> counters = client->Counters();
  EXPECT_EQ(counters.at("expertd.compute.requests"), 4u);
  EXPECT_EQ(counters.at("expertd.compute.expert_rows"), 4u * (3 + 1 + 4));
  // And plain TCP on loopback (--insecure), the last transport gRPC has.
  auto plain = StartDaemon({"--listen", "tcp:127.0.0.1:0", "--insecure"});
  ASSERT_NE(plain, nullptr);
  auto tcp = Connect(plain->addresses().at(0));
  ASSERT_NE(tcp, nullptr);
  ExpectComputesAsHere(*tcp, Tasks(), /*q8=*/true);
}

TEST_F(ComputeRpcTest, APassOverTheRowLimitIsSplitAndGivesTheSameBits) {
  auto daemon = StartDaemon({"--listen", "unix:" + (dir_.path() / "d").string(),
                             "--max-compute-rows", "2", "--compute-threads", "2"});
  ASSERT_NE(daemon, nullptr);
  auto client = Connect(daemon->addresses().at(0));
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->description().max_compute_rows(), 2u);
  EXPECT_EQ(client->description().compute_threads(), 2u);
  ExpectComputesAsHere(*client, Tasks());
  // 5 rows in requests of at most 2: three requests.
  EXPECT_EQ(client->Counters().at("expertd.compute.requests"), 3u);
}

TEST_F(ComputeRpcTest, TwoShardDaemonsEachComputeTheirOwnExperts) {
  std::vector<std::unique_ptr<Daemon>> daemons;
  std::vector<FanoutExpertSource::Member> members;
  for (int i = 0; i < 2; ++i) {
    daemons.push_back(StartDaemon({"--listen", "unix:" + (dir_.path() / std::to_string(i)).string(),
                                   "--shard", std::to_string(i) + "/2"}));
    ASSERT_NE(daemons.back(), nullptr);
    auto client = Connect(daemons.back()->addresses().at(0));
    ASSERT_NE(client, nullptr);
    std::vector<ExpertKey> held;
    for (const v1::BankInfo& bank : client->description().banks()) {
      for (uint32_t expert : bank.experts()) held.push_back({bank.layer(), expert});
    }
    ExpertComputer* computer = client.get();
    members.push_back({.name = daemons.back()->addresses().at(0),
                       .source = std::move(client),
                       .held = held,
                       .computer = computer});
  }
  const std::vector<ExpertKey> held_by_1 = members[1].held;
  auto fanout = FanoutExpertSource::Create(std::move(members));
  WARP_ASSERT_OK(fanout);
  ExpectComputesAsHere(**fanout, Tasks());  // experts 4 and 0 on shard 0, 5 on shard 1

  // A member that cannot compute fails a pass needing it, and a key held by
  // nobody fails the pass, each named.
  std::vector<FanoutExpertSource::Member> halves;
  halves.push_back({.name = "records-only",
                    .source = Connect(daemons[1]->addresses().at(0)),
                    .held = held_by_1});
  auto half = FanoutExpertSource::Create(std::move(halves));
  WARP_ASSERT_OK(half);
  const std::vector<ExpertRowsTask> of_shard_1 = {{.expert = 5, .rows = rows_of_5_}};
  EXPECT_THAT((*half)->Compute(Pass(of_shard_1)).get().status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("records-only cannot compute experts (layer 1)")));
  const std::vector<ExpertRowsTask> of_shard_0 = {{.expert = 4, .rows = rows_of_4_}};
  EXPECT_THAT((*half)->Compute(Pass(of_shard_0)).get().status(),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("expert 4 of layer 1: held by no shard")));
}

TEST_F(ComputeRpcTest, BadRequestsAreRefusedNamingTheFieldAndTheDaemonGoesOn) {
  auto daemon = StartDaemon({"--listen", "unix:" + (dir_.path() / "d").string(),
                             "--max-compute-rows", "4", "--shard", "0/2"});
  ASSERT_NE(daemon, nullptr);
  const std::string address = daemon->addresses().at(0);
  const auto refused = [&](const v1::ComputeRequest& request, grpc::StatusCode code,
                           const std::string& says) {
    const grpc::Status status = Send(address, request);
    EXPECT_EQ(status.error_code(), code) << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(says));
  };
  v1::ComputeRequest request = Request();
  request.set_width(31);
  request.set_rows(request.rows().substr(0, 2 * 31 * sizeof(float)));
  refused(request, grpc::StatusCode::INVALID_ARGUMENT,
          "width 31: layer 1's experts take rows of 32 floats");
  request = Request();
  request.set_rows(request.rows() + "abcd");
  refused(request, grpc::StatusCode::INVALID_ARGUMENT,
          "rows: 260 bytes, not num_rows 2 x width 32");
  request = Request();
  request.mutable_experts(0)->set_expert(3);  // shard 1's
  refused(request, grpc::StatusCode::NOT_FOUND, "expert 3 of layer 1 is not held by this daemon");
  request = Request();
  request.mutable_experts(0)->set_expert(6);
  refused(request, grpc::StatusCode::INVALID_ARGUMENT, "expert 6: layer 1 has 6 routed experts");
  request = Request();
  request.set_layer(0);
  refused(request, grpc::StatusCode::INVALID_ARGUMENT, "layer 0 has no routed experts");
  request = Request();
  request.set_layer(1u << 20);
  refused(request, grpc::StatusCode::INVALID_ARGUMENT, "layer 1048576 has no routed experts");
  refused(Request(5), grpc::StatusCode::INVALID_ARGUMENT,
          "num_rows 5: from 1 to this daemon's max_compute_rows 4");
  request = Request();
  request.mutable_experts(0)->add_rows(2);
  refused(request, grpc::StatusCode::INVALID_ARGUMENT, "expert 2 of layer 1: row 2 of num_rows 2");
  request = Request();
  request.clear_experts();
  refused(request, grpc::StatusCode::INVALID_ARGUMENT, "experts: none");
  request = Request();
  request.mutable_experts(0)->clear_rows();
  refused(request, grpc::StatusCode::INVALID_ARGUMENT, "expert 2 of layer 1: no rows");
  request = Request();
  *request.add_experts() = request.experts(0);
  refused(request, grpc::StatusCode::INVALID_ARGUMENT, "expert 2 of layer 1 listed twice");
  request = Request();
  request.mutable_math()->set_activation(static_cast<v1::ExpertMath::Activation>(7));
  refused(request, grpc::StatusCode::INVALID_ARGUMENT, "math.activation 7 is unknown");
  request = Request();
  request.mutable_math()->set_activation(v1::ExpertMath::ACTIVATION_CLAMPED_SWIGLU);
  refused(request, grpc::StatusCode::INVALID_ARGUMENT, "records hold no gate_up_proj");
  request = Request();
  request.set_model_fingerprint(0x1111);
  refused(request, grpc::StatusCode::FAILED_PRECONDITION, "model fingerprint");

  // Still serving, and a good request still computes.
  auto client = Connect(address);
  ASSERT_NE(client, nullptr);
  ExpectComputesAsHere(*client, {{.expert = 4, .rows = rows_of_4_}});
  EXPECT_EQ(client->Counters().at("expertd.compute.refused"), 13u);
}

TEST_F(ComputeRpcTest, ACorruptRecordFailsTheCallNamingTheExpert) {
  auto daemon = StartDaemon({"--listen", "unix:" + (dir_.path() / "d").string()});
  ASSERT_NE(daemon, nullptr);
  auto container = Container::Open(Model());
  WARP_ASSERT_OK(container);
  const uint64_t record_bytes = (*container)->manifest().banks.front().record_bytes;
  WARP_ASSERT_OK(warp::testing::FlipBankByte(Model(), 1, 5 * record_bytes + 40));
  auto client = Connect(daemon->addresses().at(0));
  ASSERT_NE(client, nullptr);
  const std::vector<ExpertRowsTask> tasks = Tasks();
  absl::StatusOr<ComputedExperts> computed = client->Compute(Pass(tasks)).get();
  EXPECT_THAT(computed.status(), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("expert 5")));
  EXPECT_THAT(computed.status().message(), HasSubstr("layer 1"));
}

}  // namespace
}  // namespace warp
