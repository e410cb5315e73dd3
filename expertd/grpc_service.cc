#include "expertd/grpc_service.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/format/bank_format.h"
#include "common/wire/proto_convert.h"

namespace warp::expertd {
namespace {

// Writes one record (or its per-key failure) as ReadChunks of at most 1 MiB.
bool SendRecord(uint32_t index, const absl::StatusOr<ExpertRecord>& record,
                grpc::ServerWriter<v1::ReadChunk>* writer) {
  v1::ReadChunk chunk;
  chunk.set_index(index);
  if (!record.ok()) {
    *chunk.mutable_status() = ToProto(record.status());
    chunk.set_last(true);
    return writer->Write(chunk);
  }
  std::span<const std::byte> bytes = record->bytes();
  chunk.set_record_bytes(bytes.size());
  for (uint64_t offset = 0; offset < bytes.size(); offset += kMaxChunkBytes) {
    const uint64_t n = std::min<uint64_t>(kMaxChunkBytes, bytes.size() - offset);
    chunk.set_offset(offset);
    chunk.set_data(reinterpret_cast<const char*>(bytes.data() + offset), n);
    const bool last = offset + n == bytes.size();
    chunk.set_last(last);
    if (last) chunk.set_crc32c(DecodeFooter(bytes).payload_crc32c);
    if (!writer->Write(chunk)) return false;
  }
  return true;
}

}  // namespace

grpc::Status ExpertServiceImpl::Describe(grpc::ServerContext*, const v1::DescribeRequest*,
                                         v1::DescribeReply* reply) {
  const Container& container = store_.container();
  const Manifest& manifest = container.manifest();
  reply->set_model_fingerprint(manifest.fingerprint);
  reply->set_architecture(manifest.architecture);
  reply->set_shard_index(container.shard().first);
  reply->set_num_shards(container.shard().second);
  reply->set_cache_bytes(store_.cache_bytes());
  for (const BankEntry& bank : manifest.banks) {
    v1::BankInfo* info = reply->add_banks();
    info->set_layer(bank.layer);
    info->set_num_experts(bank.num_experts);
    info->set_record_bytes(bank.record_bytes);
    for (uint32_t expert : container.HeldExperts(bank)) info->add_experts(expert);
  }
  return grpc::Status::OK;
}

grpc::Status ExpertServiceImpl::Read(grpc::ServerContext* context, const v1::ReadRequest* request,
                                     grpc::ServerWriter<v1::ReadChunk>* writer) {
  const uint64_t fingerprint = store_.container().manifest().fingerprint;
  if (request->model_fingerprint() != 0 && request->model_fingerprint() != fingerprint) {
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat("model fingerprint ", FingerprintHex(request->model_fingerprint()),
                     " differs from this daemon's ", FingerprintHex(fingerprint)));
  }
  if (static_cast<uint32_t>(request->keys_size()) > max_keys_) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat(request->keys_size(), " keys exceed the limit of ", max_keys_,
                                     " per request"));
  }
  std::vector<ExpertKey> keys;
  for (const v1::ExpertKey& key : request->keys()) keys.push_back({key.layer(), key.expert()});
  // Send each record as soon as it and every record before it have landed:
  // request order is kept, and sending overlaps the reads still in flight.
  std::shared_ptr<ReadBatch> batch = store_.Read(keys, FromProto(request->priority()));
  std::vector<std::optional<absl::StatusOr<ExpertRecord>>> landed(keys.size());
  size_t next_to_send = 0;
  while (next_to_send < keys.size()) {
    auto next = batch->Next();
    landed[next->first] = std::move(next->second);
    for (; next_to_send < keys.size() && landed[next_to_send]; ++next_to_send) {
      if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
      if (!SendRecord(static_cast<uint32_t>(next_to_send), *landed[next_to_send], writer)) {
        return grpc::Status(grpc::StatusCode::CANCELLED, "client gone");
      }
      landed[next_to_send].reset();  // drop the lease as soon as it is sent
    }
  }
  return grpc::Status::OK;
}

grpc::Status ExpertServiceImpl::Prefetch(grpc::ServerContext*, const v1::PrefetchRequest* request,
                                         v1::PrefetchReply* reply) {
  std::vector<ExpertKey> keys;
  for (const v1::ExpertKey& key : request->keys()) {
    if (store_.container().RecordOffset(key.layer(), key.expert())) {
      keys.push_back({key.layer(), key.expert()});
    }
  }
  const Priority priority =
      request->priority() == v1::PRIORITY_CERTAIN ? Priority::kCertain : Priority::kLookahead;
  store_.Prefetch(keys, priority);
  reply->set_accepted(static_cast<uint32_t>(keys.size()));
  return grpc::Status::OK;
}

grpc::Status ExpertServiceImpl::CancelSpeculative(grpc::ServerContext*,
                                                  const v1::CancelSpeculativeRequest* request,
                                                  v1::CancelSpeculativeReply* reply) {
  reply->set_cancelled(static_cast<uint32_t>(store_.CancelLookahead(request->through_layer())));
  return grpc::Status::OK;
}

grpc::Status ExpertServiceImpl::Stats(grpc::ServerContext*, const v1::StatsRequest*,
                                      v1::StatsReply* reply) {
  for (const auto& [name, value] : store_.Counters()) (*reply->mutable_counters())[name] = value;
  return grpc::Status::OK;
}

grpc::Status ExpertServiceImpl::Health(grpc::ServerContext*, const v1::HealthRequest*,
                                       v1::HealthReply* reply) {
  reply->set_serving(true);
  return grpc::Status::OK;
}

}  // namespace warp::expertd
