#include "expertd/grpc_service.h"

#include <algorithm>
#include <optional>

#include "common/format/bank_format.h"
#include "grpcpp/support/method_handler.h"
#include "common/wire/proto_convert.h"

namespace warp::expertd {
namespace {

// Writes one record (or its per-key failure) as ReadChunks of at most 1 MiB,
// each chunk's bytes sent from the record's slot (the slices hold its lease).
bool SendRecord(const RequestHandler& handler, uint32_t index,
                const absl::StatusOr<ExpertRecord>& record,
                ExpertServiceImpl::ReadStream* writer, StallWatch::Tracked& call) {
  const auto write = [&](const OutgoingReadChunk& chunk) {
    call.WriteStarted();
    const bool sent = writer->Write(chunk);
    call.WriteDone();
    return sent;
  };
  OutgoingReadChunk chunk;
  chunk.head.set_index(index);
  if (!record.ok()) {
    *chunk.head.mutable_status() = ToProto(handler.ForClient(record.status()));
    chunk.head.set_last(true);
    return write(chunk);
  }
  std::span<const std::byte> bytes = record->bytes();
  chunk.keeper = record->owner;
  chunk.head.set_record_bytes(bytes.size());
  chunk.head.set_served(ToProto(record->served));
  for (uint64_t offset = 0; offset < bytes.size(); offset += kMaxChunkBytes) {
    const uint64_t n = std::min<uint64_t>(kMaxChunkBytes, bytes.size() - offset);
    chunk.head.set_offset(offset);
    chunk.data = bytes.subspan(offset, n);
    const bool last = offset + n == bytes.size();
    chunk.head.set_last(last);
    if (last) chunk.head.set_crc32c(DecodeFooter(bytes).payload_crc32c);
    if (!write(chunk)) return false;
  }
  return true;
}

grpc::Status ShuttingDown() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, "expertd is shutting down");
}

}  // namespace

ExpertServiceImpl::ExpertServiceImpl(const RequestHandler& handler, ComputeHandler& compute,
                                     std::chrono::milliseconds stall_timeout)
    : handler_(handler), compute_(compute), stalls_(stall_timeout) {
  // The generated handler would copy each chunk twice; split streaming is the
  // same server-streaming method on the wire (one request, then replies).
  constexpr int kReadMethodIndex = 1;  // Read's place among warp.v1.ExpertStore's rpcs
  MarkMethodStreamed(kReadMethodIndex,
                     new grpc::internal::SplitServerStreamingHandler<v1::ReadRequest,
                                                                     OutgoingReadChunk>(
                         [this](grpc::ServerContext* context, ReadStream* stream) {
                           return ReadRecords(context, stream);
                         }));
}

ExpertServiceImpl::InFlight::InFlight(ExpertServiceImpl& service) : service_(service) {
  absl::MutexLock lock(&service_.mu_);
  admitted_ = !service_.stopping_;
  service_.in_flight_ += admitted_;
}

ExpertServiceImpl::InFlight::~InFlight() {
  if (!admitted_) return;
  absl::MutexLock lock(&service_.mu_);
  --service_.in_flight_;
}

bool ExpertServiceImpl::StopAndWaitIdle(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_ == 0; };
  return mu_.AwaitWithDeadline(absl::Condition(&idle), deadline);
}

grpc::Status ExpertServiceImpl::Describe(grpc::ServerContext*, const v1::DescribeRequest*,
                                         v1::DescribeReply* reply) {
  const InFlight call(*this);
  if (!call.admitted()) return ShuttingDown();
  handler_.Describe(reply);
  reply->set_max_compute_rows(compute_.max_rows());
  reply->set_compute_threads(compute_.threads());
  reply->set_math_fingerprint(compute_.math_fingerprint());
  return grpc::Status::OK;
}

grpc::Status ExpertServiceImpl::ReadRecords(grpc::ServerContext* context, ReadStream* stream) {
  const InFlight call(*this);
  if (!call.admitted()) return ShuttingDown();
  v1::ReadRequest request;
  if (!stream->Read(&request)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "Read without a ReadRequest");
  }
  if (absl::Status status = handler_.CheckFingerprint(request.model_fingerprint()); !status.ok()) {
    return ToGrpc(status);
  }
  absl::StatusOr<std::shared_ptr<ReadBatch>> batch =
      handler_.Read(request.keys(), request.priority());
  if (!batch.ok()) return ToGrpc(batch.status());
  // Send each record as soon as it and every record before it have landed:
  // request order is kept, and sending overlaps the reads still in flight.
  const size_t num_keys = (*batch)->size();
  std::vector<std::optional<absl::StatusOr<ExpertRecord>>> landed(num_keys);
  StallWatch::Tracked tracked(stalls_, context);
  size_t next_to_send = 0;
  while (next_to_send < num_keys) {
    auto next = (*batch)->Next();
    landed[next->first] = std::move(next->second);
    for (; next_to_send < num_keys && landed[next_to_send]; ++next_to_send) {
      if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
      if (!SendRecord(handler_, static_cast<uint32_t>(next_to_send), *landed[next_to_send], stream,
                      tracked)) {
        return grpc::Status(grpc::StatusCode::CANCELLED, "client gone");
      }
      landed[next_to_send].reset();  // gRPC's slices hold the lease until they are written
    }
  }
  return grpc::Status::OK;
}

grpc::Status ExpertServiceImpl::Compute(grpc::ServerContext* context,
                                        const v1::ComputeRequest* request,
                                        grpc::ServerWriter<v1::ComputeChunk>* writer) {
  const InFlight call(*this);
  if (!call.admitted()) return ShuttingDown();
  if (absl::Status status = handler_.CheckFingerprint(request->model_fingerprint()); !status.ok()) {
    return ToGrpc(status);
  }
  StallWatch::Tracked tracked(stalls_, context);
  const uint64_t row_bytes = uint64_t{request->width()} * sizeof(float);
  const uint64_t rows_per_chunk =
      std::max<uint64_t>(1, kMaxChunkBytes / std::max<uint64_t>(1, row_bytes));
  const absl::Status status = compute_.Compute(
      *request, [&](uint32_t index, std::span<const float> output, Served served) {
        const uint64_t rows = output.size() * sizeof(float) / row_bytes;
        v1::ComputeChunk chunk;
        chunk.set_index(index);
        chunk.set_served(ToProto(served));
        for (uint64_t first = 0; first < rows; first += rows_per_chunk) {
          if (context->IsCancelled()) return false;
          const uint64_t n = std::min(rows_per_chunk, rows - first);
          chunk.set_first_row(static_cast<uint32_t>(first));
          chunk.set_output(reinterpret_cast<const char*>(output.data()) + first * row_bytes,
                           n * row_bytes);
          tracked.WriteStarted();
          const bool sent = writer->Write(chunk);
          tracked.WriteDone();
          if (!sent) return false;
        }
        return true;
      });
  return ToGrpc(handler_.ForClient(status));
}

grpc::Status ExpertServiceImpl::Prefetch(grpc::ServerContext*, const v1::PrefetchRequest* request,
                                         v1::PrefetchReply* reply) {
  const InFlight call(*this);
  if (!call.admitted()) return ShuttingDown();
  reply->set_accepted(handler_.Prefetch(request->keys(), request->priority(), request->client()));
  return grpc::Status::OK;
}

grpc::Status ExpertServiceImpl::CancelSpeculative(grpc::ServerContext*,
                                                  const v1::CancelSpeculativeRequest* request,
                                                  v1::CancelSpeculativeReply* reply) {
  const InFlight call(*this);
  if (!call.admitted()) return ShuttingDown();
  reply->set_cancelled(handler_.CancelSpeculative(request->through_layer(), request->client()));
  return grpc::Status::OK;
}

grpc::Status ExpertServiceImpl::Stats(grpc::ServerContext*, const v1::StatsRequest*,
                                      v1::StatsReply* reply) {
  const InFlight call(*this);
  if (!call.admitted()) return ShuttingDown();
  handler_.Stats(reply);
  for (const auto& [name, value] : compute_.Counters()) (*reply->mutable_counters())[name] = value;
  return grpc::Status::OK;
}

grpc::Status ExpertServiceImpl::Health(grpc::ServerContext*, const v1::HealthRequest*,
                                       v1::HealthReply* reply) {
  const InFlight call(*this);
  if (!call.admitted()) return ShuttingDown();
  reply->set_serving(true);
  return grpc::Status::OK;
}

}  // namespace warp::expertd
