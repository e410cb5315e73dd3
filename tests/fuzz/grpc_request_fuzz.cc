// gRPC request handling without the network: the first input byte picks the
// RPC, the rest is its request message as gRPC would hand the bytes to the
// service. Describe, Prefetch, CancelSpeculative, Stats and Health go through
// ExpertServiceImpl itself; Read and Compute, whose replies are streams,
// through the RequestHandler and ComputeHandler calls the service makes
// (fingerprint, keys or rows, each record, output or failure as the client
// would see it).

#include <cstddef>
#include <cstdint>
#include <optional>

#include "common/format/bank_format.h"
#include "common/format/container.h"
#include "common/store/expert_store.h"
#include "expertd/compute_handler.h"
#include "expertd/grpc_service.h"
#include "expertd/request_handler.h"
#include "tests/fuzz/fuzz_support.h"
#include "warp/v1/expert_service.pb.h"

namespace {

using namespace warp;

struct Daemon {
  std::unique_ptr<ExpertStore> store;
  std::unique_ptr<expertd::RequestHandler> handler;
  std::unique_ptr<expertd::ComputeHandler> compute;
  std::unique_ptr<expertd::ExpertServiceImpl> service;
};

Daemon& TheDaemon() {
  static Daemon* daemon = [] {
    auto container = Container::Open(fuzz::TinyContainer("grpc.warp"));
    if (!container.ok()) std::abort();
    auto store =
        ExpertStore::Open(std::move(*container), {.cache_bytes = 4 * 4096, .io_threads = 1});
    if (!store.ok()) std::abort();
    auto* d = new Daemon{.store = std::move(*store)};
    d->handler = std::make_unique<expertd::RequestHandler>(*d->store, 256);
    d->compute = std::make_unique<expertd::ComputeHandler>(
        *d->store, expertd::ComputeHandler::Options{.threads = 1, .max_rows = 8});
    d->service = std::make_unique<expertd::ExpertServiceImpl>(*d->handler, *d->compute,
                                                              std::chrono::seconds(10));
    return d;
  }();
  return *daemon;
}

void Read(const expertd::RequestHandler& handler, const v1::ReadRequest& request) {
  if (!handler.CheckFingerprint(request.model_fingerprint()).ok()) return;
  absl::StatusOr<std::shared_ptr<ReadBatch>> batch =
      handler.Read(request.keys(), request.priority());
  if (!batch.ok()) return;
  for (size_t i = 0; i < (*batch)->size(); ++i) {
    auto next = (*batch)->Next();
    if (!next->second.ok()) {
      (void)handler.ForClient(next->second.status());
    } else {
      (void)DecodeFooter(next->second->bytes()).payload_crc32c;
    }
  }
}

void Compute(const Daemon& daemon, const v1::ComputeRequest& request) {
  if (!daemon.handler->CheckFingerprint(request.model_fingerprint()).ok()) return;
  const absl::Status status =
      daemon.compute->Compute(request, [](uint32_t, std::span<const float>, Served) {
        return true;
      });
  (void)daemon.handler->ForClient(status);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Init();
  if (size == 0) return 0;
  Daemon& daemon = TheDaemon();
  const uint8_t rpc = data[0] % 7;
  const void* message = data + 1;
  const int message_bytes = static_cast<int>(size - 1);
  switch (rpc) {
    case 0: {
      v1::ReadRequest request;
      if (request.ParseFromArray(message, message_bytes)) Read(*daemon.handler, request);
      break;
    }
    case 1: {
      v1::PrefetchRequest request;
      v1::PrefetchReply reply;
      if (request.ParseFromArray(message, message_bytes)) {
        (void)daemon.service->Prefetch(nullptr, &request, &reply);
      }
      break;
    }
    case 2: {
      v1::CancelSpeculativeRequest request;
      v1::CancelSpeculativeReply reply;
      if (request.ParseFromArray(message, message_bytes)) {
        (void)daemon.service->CancelSpeculative(nullptr, &request, &reply);
      }
      break;
    }
    case 3: {
      v1::DescribeRequest request;
      v1::DescribeReply reply;
      if (request.ParseFromArray(message, message_bytes)) {
        (void)daemon.service->Describe(nullptr, &request, &reply);
      }
      break;
    }
    case 4: {
      v1::StatsRequest request;
      v1::StatsReply reply;
      if (request.ParseFromArray(message, message_bytes)) {
        (void)daemon.service->Stats(nullptr, &request, &reply);
      }
      break;
    }
    case 6: {
      v1::ComputeRequest request;
      if (request.ParseFromArray(message, message_bytes)) Compute(daemon, request);
      break;
    }
    default: {
      v1::HealthRequest request;
      v1::HealthReply reply;
      if (request.ParseFromArray(message, message_bytes)) {
        (void)daemon.service->Health(nullptr, &request, &reply);
      }
      break;
    }
  }
  return 0;
}
