#pragma once

// ExpertServiceImpl: the warp.v1.ExpertStore gRPC service, framing only:
// every request is decided by the RequestHandler (limits, fingerprint, keys,
// hint priorities, Describe), shared with the fast path, and every Compute by
// the ComputeHandler. Records are
// streamed in request order, chunked to at most 1 MiB; a per-key failure is
// reported in-band and the batch goes on.
//
// Thread-safe. Each Read issues all its fetches at once and streams each
// record as soon as it and those before it have landed, on the gRPC thread
// (the synchronous server; see docs/LEARNED.md). Read's handler is gRPC's
// split streaming over OutgoingReadChunk: each chunk's bytes go from the
// record's cache slot to gRPC without a copy (common/wire/read_chunk_wire.h);
// the wire is the generated one's.

#include <chrono>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/wire/read_chunk_wire.h"
#include "expertd/compute_handler.h"
#include "expertd/request_handler.h"
#include "expertd/stall_watch.h"
#include "warp/v1/expert_service.grpc.pb.h"

namespace warp::expertd {

// Largest ReadChunk.data: gRPC's default 4 MiB message limit is never near.
inline constexpr uint64_t kMaxChunkBytes = 1 << 20;

class ExpertServiceImpl final : public v1::ExpertStore::Service {
 public:
  // REQUIRES: `handler` and `compute` outlive the service. A Read or Compute
  // whose client takes no reply bytes for `stall_timeout` is cancelled
  // (StallWatch).
  ExpertServiceImpl(const RequestHandler& handler, ComputeHandler& compute,
                    std::chrono::milliseconds stall_timeout);

  grpc::Status Describe(grpc::ServerContext* context, const v1::DescribeRequest* request,
                        v1::DescribeReply* reply) override;
  using ReadStream = grpc::ServerSplitStreamer<v1::ReadRequest, OutgoingReadChunk>;
  // warp.v1.ExpertStore/Read: one ReadRequest in, its records out.
  grpc::Status ReadRecords(grpc::ServerContext* context, ReadStream* stream);
  grpc::Status Compute(grpc::ServerContext* context, const v1::ComputeRequest* request,
                       grpc::ServerWriter<v1::ComputeChunk>* writer) override;
  grpc::Status Prefetch(grpc::ServerContext* context, const v1::PrefetchRequest* request,
                        v1::PrefetchReply* reply) override;
  grpc::Status CancelSpeculative(grpc::ServerContext* context,
                                 const v1::CancelSpeculativeRequest* request,
                                 v1::CancelSpeculativeReply* reply) override;
  grpc::Status Stats(grpc::ServerContext* context, const v1::StatsRequest* request,
                     v1::StatsReply* reply) override;
  grpc::Status Health(grpc::ServerContext* context, const v1::HealthRequest* request,
                      v1::HealthReply* reply) override;

  // The first half of a drain: from now on every new call is refused
  // UNAVAILABLE "expertd is shutting down" (clients retry it, so a restarted
  // daemon serves them); returns once the calls already in a handler have
  // returned (true) or at `deadline` (false). Then grpc::Server::Shutdown
  // need not wait for anything but may close idle connections at once: its
  // own wait would last until every client closes its channel.
  bool StopAndWaitIdle(absl::Time deadline);

 private:
  // Counts a call while it is in its handler; admitted() is false once
  // StopAndWaitIdle has begun.
  class InFlight {
   public:
    explicit InFlight(ExpertServiceImpl& service);
    ~InFlight();
    bool admitted() const { return admitted_; }

   private:
    ExpertServiceImpl& service_;
    bool admitted_;
  };

  const RequestHandler& handler_;
  ComputeHandler& compute_;
  StallWatch stalls_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace warp::expertd
