// Where a run's experts are computed (--expert-compute, issue 47), as
// OpenExpertSource decides it against real gRPC daemons: a daemon whose math
// fingerprint (its libm's bits for the experts' activations) is this
// machine's may compute; one whose differs is refused, named, under
// `daemons` and still serves records. (`auto` on this machine reads records
// whatever the fingerprint, so it cannot tell the two apart here.)

#include <memory>
#include <string>

#include "common/compute/math_fingerprint.h"
#include "common/format/container.h"
#include "common/store/expert_store.h"
#include "computed/run/sources.h"
#include "expertd/compute_handler.h"
#include "expertd/grpc_service.h"
#include "expertd/request_handler.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tiny_container.h"

namespace warp::computed {
namespace {

using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

// An expertd's gRPC service in this process, stating `math_fingerprint`.
class InProcessDaemon {
 public:
  InProcessDaemon(std::shared_ptr<const Container> model, const std::string& socket,
                  uint64_t math_fingerprint) {
    auto store = ExpertStore::Open(std::move(model), {.io_threads = 1});
    EXPECT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    handler_ = std::make_unique<expertd::RequestHandler>(*store_, 256);
    compute_ = std::make_unique<expertd::ComputeHandler>(
        *store_, expertd::ComputeHandler::Options{.math_fingerprint = math_fingerprint});
    service_ = std::make_unique<expertd::ExpertServiceImpl>(*handler_, *compute_,
                                                            std::chrono::seconds(10));
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    EXPECT_NE(server_, nullptr);
  }
  ~InProcessDaemon() { server_->Shutdown(); }

 private:
  std::unique_ptr<ExpertStore> store_;
  std::unique_ptr<expertd::RequestHandler> handler_;
  std::unique_ptr<expertd::ComputeHandler> compute_;
  std::unique_ptr<expertd::ExpertServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
};

class ComputeModeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WARP_ASSERT_OK(warp::testing::WriteTinyContainer(dir_.path() / "m.warp"));
    auto container = Container::Open(dir_.path() / "m.warp");
    WARP_ASSERT_OK(container);
    model_ = std::move(*container);
  }

  absl::StatusOr<OpenedSource> Open(const std::string& socket, ExpertCompute mode) {
    SourceOptions options;
    options.stores = {"unix:" + socket};
    options.expert_compute = mode;
    return OpenExpertSource(model_, options);
  }

  warp::testing::TempDir dir_;
  std::shared_ptr<const Container> model_;
};

TEST_F(ComputeModeTest, ADaemonWithThisMachinesMathComputes) {
  const std::string socket = (dir_.path() / "same").string();
  InProcessDaemon daemon(model_, socket, MathFingerprint());
  absl::StatusOr<OpenedSource> opened = Open(socket, ExpertCompute::kDaemons);
  WARP_ASSERT_OK(opened);
  EXPECT_NE(opened->computer, nullptr);
  // auto: a daemon on this machine is read as records.
  opened = Open(socket, ExpertCompute::kAuto);
  WARP_ASSERT_OK(opened);
  EXPECT_EQ(opened->computer, nullptr);
}

TEST_F(ComputeModeTest, ADaemonWithOtherMathIsReadAsRecordsOrRefused) {
  const std::string socket = (dir_.path() / "other").string();
  InProcessDaemon daemon(model_, socket, MathFingerprint() ^ 1);
  EXPECT_THAT(Open(socket, ExpertCompute::kDaemons).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("math fingerprint")));
  absl::StatusOr<OpenedSource> opened = Open(socket, ExpertCompute::kRecords);
  WARP_ASSERT_OK(opened);
  EXPECT_EQ(opened->computer, nullptr);
}

TEST(MathFingerprintTest, IsTheSameEachTimeAndNotEmpty) {
  EXPECT_EQ(MathFingerprint(), MathFingerprint());
  EXPECT_NE(MathFingerprint(), 0u);
}

}  // namespace
}  // namespace warp::computed
