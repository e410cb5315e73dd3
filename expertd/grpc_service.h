#pragma once

// ExpertServiceImpl: the warp.v1.ExpertStore gRPC service over one
// ExpertStore. Records are streamed in request order, chunked to at most
// 1 MiB; a per-key failure is reported in-band and the batch goes on.
//
// Thread-safe. Each Read issues all its fetches at once and streams each
// record as soon as it and those before it have landed, on the gRPC thread
// (the synchronous server; see docs/LEARNED.md).

#include <cstdint>

#include "common/store/expert_store.h"
#include "warp/v1/expert_service.grpc.pb.h"

namespace warp::expertd {

// Largest ReadChunk.data: gRPC's default 4 MiB message limit is never near.
inline constexpr uint64_t kMaxChunkBytes = 1 << 20;

class ExpertServiceImpl final : public v1::ExpertStore::Service {
 public:
  ExpertServiceImpl(ExpertStore& store, uint32_t max_keys_per_request)
      : store_(store), max_keys_(max_keys_per_request) {}

  grpc::Status Describe(grpc::ServerContext* context, const v1::DescribeRequest* request,
                        v1::DescribeReply* reply) override;
  grpc::Status Read(grpc::ServerContext* context, const v1::ReadRequest* request,
                    grpc::ServerWriter<v1::ReadChunk>* writer) override;
  grpc::Status Prefetch(grpc::ServerContext* context, const v1::PrefetchRequest* request,
                        v1::PrefetchReply* reply) override;
  grpc::Status CancelSpeculative(grpc::ServerContext* context,
                                 const v1::CancelSpeculativeRequest* request,
                                 v1::CancelSpeculativeReply* reply) override;
  grpc::Status Stats(grpc::ServerContext* context, const v1::StatsRequest* request,
                     v1::StatsReply* reply) override;
  grpc::Status Health(grpc::ServerContext* context, const v1::HealthRequest* request,
                      v1::HealthReply* reply) override;

 private:
  ExpertStore& store_;
  uint32_t max_keys_;
};

}  // namespace warp::expertd
