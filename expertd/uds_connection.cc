#include "expertd/uds_connection.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/format/bank_format.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/wire/fastpath_frame.h"
#include "common/wire/proto_convert.h"

namespace warp::expertd {

UdsConnection::UdsConnection(ScopedFd socket, const RequestHandler& handler, const Limits& limits)
    : socket_(std::move(socket)), handler_(handler), limits_(limits) {
  // Once a frame has begun, each receive waits at most this long.
  const auto stall = std::chrono::duration_cast<std::chrono::microseconds>(limits_.stall_timeout);
  const timeval timeout{.tv_sec = static_cast<time_t>(stall.count() / 1'000'000),
                        .tv_usec = static_cast<suseconds_t>(stall.count() % 1'000'000)};
  ::setsockopt(socket_.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
}

UdsConnection::~UdsConnection() = default;

void UdsConnection::StopReading() { ::shutdown(socket_.get(), SHUT_RD); }

bool UdsConnection::AwaitRequest() {
  while (true) {
    pollfd fd{socket_.get(), POLLIN, 0};
    // A client holding leases is using the records in place: never cut it off for quiet.
    const int timeout_ms = leases_.empty() ? static_cast<int>(limits_.idle_timeout.count()) : -1;
    const int ready = ::poll(&fd, 1, timeout_ms);
    if (ready > 0) return true;  // a byte, EOF or an error: the receive says which
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      Logger("expertd.uds")
          .info("closing a fast-path connection idle for {} s with no lease",
                limits_.idle_timeout.count() / 1000);
    }
    return false;
  }
}

void UdsConnection::Serve() {
  while (AwaitRequest()) {
    absl::StatusOr<ReceivedFastPathHeader> frame = RecvFastPathHeader(socket_.get());
    absl::Status status = frame.status();
    if (status.ok()) {
      v1::FastPathRequest request;
      status = request.ParseFromString(frame->header)
                   ? Handle(request)
                   : absl::InvalidArgumentError("a frame header that is no FastPathRequest");
    }
    if (!status.ok()) {
      // A closed connection is the normal end; anything else is the client's fault or a
      // send that failed: either way the stream cannot go on.
      if (status.code() == absl::StatusCode::kDeadlineExceeded) {
        status = absl::DeadlineExceededError(absl::StrCat("a frame begun but not finished within ",
                                                          limits_.stall_timeout.count(), " ms"));
      }
      if (status.code() != absl::StatusCode::kUnavailable) {
        Logger("expertd.uds")
            .warn("closing a fast-path connection: {}", std::string(status.message()));
      }
      break;
    }
  }
  leases_.clear();
  // The client sees EOF now; the descriptor itself is closed when the UdsServer
  // reaps this connection (StopReading may still be using it until then).
  ::shutdown(socket_.get(), SHUT_RDWR);
}

absl::Status UdsConnection::Handle(const v1::FastPathRequest& request) {
  if (!said_hello_ && !request.has_hello()) {
    return absl::FailedPreconditionError("a request before Hello");
  }
  switch (request.kind_case()) {
    case v1::FastPathRequest::kHello:
      return Hello(request.hello());
    case v1::FastPathRequest::kRead:
      return Read(request.read());
    case v1::FastPathRequest::kRelease:
      for (uint64_t id : request.release().lease_ids()) leases_.erase(id);
      return absl::OkStatus();
    case v1::FastPathRequest::kPrefetch:
      handler_.Prefetch(request.prefetch().keys(), request.prefetch().priority(),
                        request.prefetch().client());
      return absl::OkStatus();
    case v1::FastPathRequest::kCancelSpeculative:
      handler_.CancelSpeculative(request.cancel_speculative().through_layer(),
                                 request.cancel_speculative().client());
      return absl::OkStatus();
    case v1::FastPathRequest::KIND_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("a FastPathRequest of no known kind");
}

absl::Status UdsConnection::Hello(const v1::FastPathHello& hello) {
  const ExpertStore& store = handler_.store();
  v1::FastPathReply reply;
  v1::FastPathHelloReply* out = reply.mutable_hello();
  absl::Status refusal;
  if (said_hello_) {
    refusal = absl::FailedPreconditionError("a second Hello");
  } else if (hello.protocol_version() != kFastPathProtocolVersion) {
    refusal = absl::FailedPreconditionError(
        absl::StrCat("fast-path protocol version ", hello.protocol_version(),
                     " is not supported; this daemon speaks ", kFastPathProtocolVersion));
  } else {
    refusal = handler_.CheckFingerprint(hello.model_fingerprint());
  }
  *out->mutable_status() = ToProto(refusal);
  out->set_model_fingerprint(store.container().manifest().fingerprint);
  if (refusal.ok()) {
    out->set_arena_bytes(store.arena_bytes());
    out->set_slot_bytes(store.slot_bytes());
    out->set_max_keys_per_request(handler_.max_keys_per_request());
    out->set_cancel_speculative(true);
    out->set_records_verified(store.verifies_records());
    stream_records_ = hello.stream_records();
    out->set_stream_records(stream_records_);
    handler_.Describe(out->mutable_description());
  }
  const int memfd = refusal.ok() && store.arena_bytes() > 0 ? store.arena_fd() : -1;
  WARP_RETURN_IF_ERROR(SendFastPathFrame(socket_.get(), EncodeFastPathFrame(reply), {}, memfd));
  said_hello_ = true;
  return refusal;
}

absl::Status UdsConnection::Read(const v1::FastPathRead& read) {
  v1::FastPathReply reply;
  v1::FastPathReadReply* out = reply.mutable_read();
  out->set_request_id(read.request_id());
  absl::StatusOr<std::shared_ptr<ReadBatch>> batch = handler_.Read(read.keys(), read.priority());
  if (!batch.ok()) {
    *out->mutable_status() = ToProto(batch.status());
    return SendFastPathFrame(socket_.get(), EncodeFastPathFrame(reply));
  }
  if (stream_records_ && (*batch)->size() > 0) {
    // One reply per record as it lands: the next record is read while this one is sent.
    for (size_t left = (*batch)->size(); left > 0; --left) {
      std::optional<std::pair<size_t, absl::StatusOr<ExpertRecord>>> next = (*batch)->Next();
      if (!next) return absl::InternalError("a read batch ended early");
      v1::FastPathReply part;
      v1::FastPathReadReply* header = part.mutable_read();
      header->set_request_id(read.request_id());
      header->add_key_indices(static_cast<uint32_t>(next->first));
      header->set_more(left > 1);
      std::vector<std::span<const std::byte>> payload;
      uint64_t payload_bytes = 0;
      AddRecord(next->second, *header->add_records(), payload, payload_bytes);
      header->set_payload_bytes(payload_bytes);
      WARP_RETURN_IF_ERROR(SendFastPathFrame(socket_.get(), EncodeFastPathFrame(part), payload));
    }
    return absl::OkStatus();
  }
  // Held until the reply is sent: the payload points into the uncached ones.
  std::vector<absl::StatusOr<ExpertRecord>> records = (*batch)->WaitAll();
  std::vector<std::span<const std::byte>> payload;
  uint64_t payload_bytes = 0;
  for (absl::StatusOr<ExpertRecord>& record : records) {
    AddRecord(record, *out->add_records(), payload, payload_bytes);
  }
  out->set_payload_bytes(payload_bytes);
  return SendFastPathFrame(socket_.get(), EncodeFastPathFrame(reply), payload);
}

void UdsConnection::AddRecord(absl::StatusOr<ExpertRecord>& record, v1::FastPathRecord& entry,
                              std::vector<std::span<const std::byte>>& payload,
                              uint64_t& payload_bytes) {
  if (!record.ok()) {
    *entry.mutable_status() = ToProto(handler_.ForClient(record.status()));
    return;
  }
  std::span<const std::byte> bytes = record->bytes();
  entry.set_record_bytes(bytes.size());
  entry.set_crc32c(DecodeFooter(bytes).payload_crc32c);
  entry.set_served(ToProto(record->served));
  std::optional<uint64_t> offset = handler_.store().ArenaOffset(*record);
  if (offset && leases_.size() < limits_.max_leases) {
    entry.set_location(v1::RECORD_LOCATION_ARENA);
    entry.set_offset(*offset);
    entry.set_lease_id(next_lease_id_);
    leases_.emplace(next_lease_id_++, *std::move(record));
  } else {
    // The caller holds `record` until the reply is sent: the payload points into it.
    entry.set_location(v1::RECORD_LOCATION_PAYLOAD);
    entry.set_offset(payload_bytes);
    payload.push_back(bytes);
    payload_bytes += bytes.size();
  }
}

}  // namespace warp::expertd
