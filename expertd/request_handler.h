#pragma once

// RequestHandler: what expertd does with a request, whichever transport
// carried it (the gRPC service, the Unix-socket fast path). The transports
// only frame: they decode a message, call here and encode the answer. Limits
// (keys per request, hints), the fingerprint check, key conversion, hint
// priorities and Describe live here once, so both transports apply the same
// rules.
//
// Thread-safe (the ExpertStore is; the handler itself holds no state).

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "common/store/engram_store.h"
#include "common/store/expert_store.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "warp/v1/expert.pb.h"
#include "warp/v1/expert_service.pb.h"

namespace warp::expertd {

class RequestHandler {
 public:
  using ProtoKeys = google::protobuf::RepeatedPtrField<v1::ExpertKey>;

  // REQUIRES: `store` (and `engram`, the engram tables' records, if the
  // model has any) outlive the handler; max_keys_per_request > 0.
  // `disk_read_bytes_per_second`: the daemon's disk as measured at start (0: not).
  RequestHandler(ExpertStore& store, uint32_t max_keys_per_request, EngramStore* engram = nullptr,
                 uint64_t disk_read_bytes_per_second = 0)
      : store_(store),
        max_keys_(max_keys_per_request),
        engram_(engram),
        disk_read_bytes_per_second_(disk_read_bytes_per_second) {}

  ExpertStore& store() const { return store_; }
  uint32_t max_keys_per_request() const { return max_keys_; }

  // FailedPrecondition unless `fingerprint` is 0 (any) or the daemon's.
  absl::Status CheckFingerprint(uint64_t fingerprint) const;

  // Issues the reads of `keys` (order kept): experts' from the store, engram
  // records' (layer >= kEngramKeyBase) from the engram store. InvalidArgument,
  // reading nothing, if there are more than max_keys_per_request.
  absl::StatusOr<std::shared_ptr<ReadBatch>> Read(const ProtoKeys& keys,
                                                  v1::Priority priority) const;

  // Hints: queues reads of the first max_keys_per_request held keys and drops
  // the rest (keys past the limit and keys this daemon does not hold) — a
  // hint is never refused as a whole. Priority CERTAIN stays CERTAIN, any
  // other is LOOKAHEAD. Returns how many keys it passed to the store. The
  // hints are `client`'s.
  uint32_t Prefetch(const ProtoKeys& keys, v1::Priority priority, ClientId client) const;

  // Withdraws `client`'s lookahead hints of layers <= through_layer, dropping
  // the queued reads no client hints any more; returns how many.
  uint32_t CancelSpeculative(uint32_t through_layer, ClientId client) const;

  // A record's failure as a client sees it: the layer and expert, with the
  // daemon's directories taken out of it (bank files by their names in the
  // container). The whole message goes to the daemon's log.
  absl::Status ForClient(const absl::Status& status) const;

  void Describe(v1::DescribeReply* reply) const;
  void Stats(v1::StatsReply* reply) const;

 private:
  ExpertStore& store_;
  const uint32_t max_keys_;
  EngramStore* const engram_;
  const uint64_t disk_read_bytes_per_second_;
};

}  // namespace warp::expertd
