#include "common/client/fastpath_connection.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "common/wire/fastpath_frame.h"
#include "common/wire/proto_convert.h"

namespace warp {
namespace {

absl::StatusOr<ScopedFd> ConnectUnix(const std::string& path, std::chrono::milliseconds timeout) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": Unix socket path too long"));
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoToStatus(errno, "socket");
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    return absl::UnavailableError(absl::StrCat("connect: ", std::strerror(errno)));
  }
  timeval tv{.tv_sec = timeout.count() / 1000, .tv_usec = (timeout.count() % 1000) * 1000};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  return fd;
}

void SetKeys(std::span<const ExpertKey> keys,
             google::protobuf::RepeatedPtrField<v1::ExpertKey>* out) {
  for (const ExpertKey& key : keys) {
    v1::ExpertKey* proto = out->Add();
    proto->set_layer(key.layer);
    proto->set_expert(key.expert);
  }
}

}  // namespace

absl::StatusOr<std::shared_ptr<const ArenaMapping>> ArenaMapping::Map(const ScopedFd& fd,
                                                                      uint64_t bytes) {
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoToStatus(errno, "fstat of the cache memfd");
  if (static_cast<uint64_t>(st.st_size) < bytes) {
    return absl::FailedPreconditionError(
        absl::StrCat("the cache memfd has ", st.st_size, " bytes, the daemon said ", bytes));
  }
  const int seals = ::fcntl(fd.get(), F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
    return absl::FailedPreconditionError("the cache memfd is not sealed against shrinking");
  }
  void* base = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (base == MAP_FAILED) return ErrnoToStatus(errno, "mmap of the cache memfd");
  return std::shared_ptr<const ArenaMapping>(
      new ArenaMapping(static_cast<const std::byte*>(base), bytes, st.st_dev, st.st_ino));
}

ArenaMapping::~ArenaMapping() { ::munmap(const_cast<std::byte*>(base_), bytes_); }

bool ArenaMapping::SameFile(const ScopedFd& fd) const {
  struct stat st;
  return ::fstat(fd.get(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_;
}

absl::StatusOr<std::shared_ptr<FastPathConnection>> FastPathConnection::Open(
    const std::string& path, uint64_t fingerprint, std::chrono::milliseconds io_timeout,
    std::shared_ptr<const ArenaMapping> current) {
  WARP_ASSIGN_OR_RETURN(ScopedFd socket, ConnectUnix(path, io_timeout));
  std::shared_ptr<FastPathConnection> connection(new FastPathConnection(std::move(socket)));
  WARP_RETURN_IF_ERROR(connection->Hello(fingerprint, std::move(current)));
  return connection;
}

absl::Status FastPathConnection::Hello(uint64_t fingerprint,
                                       std::shared_ptr<const ArenaMapping> current) {
  v1::FastPathRequest request;
  request.mutable_hello()->set_protocol_version(kFastPathProtocolVersion);
  request.mutable_hello()->set_model_fingerprint(fingerprint);
  request.mutable_hello()->set_stream_records(true);
  const absl::Status sent = Send(request);
  // A daemon past its connection limit answers before reading our Hello and
  // closes: the send may fail, but its refusal is still there to be read.
  absl::StatusOr<ReceivedFastPathHeader> received = RecvFastPathHeader(socket_.get());
  if (!received.ok()) return sent.ok() ? received.status() : sent;
  v1::FastPathReply reply;
  if (!reply.ParseFromString(received->header) || !reply.has_hello()) {
    return absl::DataLossError("malformed Hello reply");
  }
  hello_ = std::move(*reply.mutable_hello());
  WARP_RETURN_IF_ERROR(FromProto(hello_.status()));
  WARP_RETURN_IF_ERROR(sent);
  if (hello_.arena_bytes() == 0) return absl::OkStatus();
  if (!received->fd.valid()) return absl::DataLossError("Hello reply without the cache memfd");
  if (current != nullptr && current->span().size() == hello_.arena_bytes() &&
      current->SameFile(received->fd)) {
    mapping_ = std::move(current);
    return absl::OkStatus();
  }
  WARP_ASSIGN_OR_RETURN(mapping_, ArenaMapping::Map(received->fd, hello_.arena_bytes()));
  return absl::OkStatus();
}

bool FastPathConnection::broken() const {
  absl::MutexLock lock(&mu_);
  return broken_;
}

absl::Status FastPathConnection::Send(const v1::FastPathRequest& request) {
  const std::string frame = EncodeFastPathFrame(request);
  absl::Status status;
  {
    absl::MutexLock lock(&send_mu_);
    status = SendFastPathFrame(socket_.get(), frame);
  }
  if (!status.ok()) {
    absl::MutexLock lock(&mu_);
    broken_ = true;
  }
  return status;
}

absl::Status FastPathConnection::Read(std::span<const ExpertKey> keys, Priority priority,
                                      const OnReply& on_reply) {
  const uint64_t request_id = next_request_id_++;
  v1::FastPathRequest request;
  v1::FastPathRead* read = request.mutable_read();
  read->set_request_id(request_id);
  read->set_priority(ToProto(priority));
  SetKeys(keys, read->mutable_keys());
  WARP_RETURN_IF_ERROR(Send(request));
  std::vector<bool> received(keys.size(), false);
  while (true) {
    absl::StatusOr<Reply> reply = ReceiveReply(request_id, received);
    if (!reply.ok()) {
      absl::MutexLock lock(&mu_);
      broken_ = true;
      return reply.status();
    }
    const bool last = !reply->header.more();
    on_reply(*reply);
    if (last) return absl::OkStatus();
  }
}

absl::StatusOr<FastPathConnection::Reply> FastPathConnection::ReceiveReply(
    uint64_t request_id, std::vector<bool>& answered) {
  const size_t num_keys = answered.size();
  WARP_ASSIGN_OR_RETURN(ReceivedFastPathHeader received, RecvFastPathHeader(socket_.get()));
  v1::FastPathReply reply;
  if (!reply.ParseFromString(received.header) || !reply.has_read()) {
    return absl::DataLossError("malformed Read reply");
  }
  Reply out{.header = std::move(*reply.mutable_read())};
  if (out.header.request_id() != request_id) {
    return absl::DataLossError(
        absl::StrCat("reply to request ", out.header.request_id(), ", expected ", request_id));
  }
  const bool refused = out.header.has_status() && out.header.status().code() != 0;
  const auto num_records = static_cast<size_t>(out.header.records_size());
  if (refused) {
    if (num_records > 0 || out.header.more()) {
      return absl::DataLossError("a refused Read's reply with records or more to come");
    }
  } else if (!hello_.stream_records()) {
    if (num_records != num_keys || out.header.more() || out.header.key_indices_size() > 0) {
      return absl::DataLossError(
          absl::StrCat("reply with ", num_records, " records for ", num_keys, " keys"));
    }
    for (size_t i = 0; i < num_keys; ++i) out.header.add_key_indices(static_cast<uint32_t>(i));
  } else if (static_cast<size_t>(out.header.key_indices_size()) != num_records) {
    return absl::DataLossError(absl::StrCat("streamed reply with ", num_records, " records and ",
                                            out.header.key_indices_size(), " key positions"));
  }
  if (!refused) {
    for (uint32_t index : out.header.key_indices()) {
      if (index >= num_keys || answered[index]) {
        return absl::DataLossError(absl::StrCat("reply for request position ", index, " of ",
                                                num_keys, ", out of range or answered twice"));
      }
      answered[index] = true;
    }
    if (!out.header.more() &&
        std::find(answered.begin(), answered.end(), false) != answered.end()) {
      return absl::DataLossError("the last reply to a Read left keys without a record");
    }
  }
  // At most every record inline; bounds what a bad peer makes us allocate.
  const uint64_t payload_bytes = out.header.payload_bytes();
  if (payload_bytes > num_records * hello_.slot_bytes()) {
    return absl::DataLossError(
        absl::StrCat("reply payload of ", payload_bytes, " bytes for ", num_records, " records"));
  }
  if (payload_bytes > 0) {
    std::shared_ptr<AlignedBuffer> payload = payloads_->Get(payload_bytes);
    WARP_RETURN_IF_ERROR(RecvFastPathPayload(socket_.get(), payload->span().first(payload_bytes)));
    out.payload = std::move(payload);
  }
  return out;
}

void FastPathConnection::Release(uint64_t lease_id) {
  {
    absl::MutexLock lock(&mu_);
    if (broken_) return;
    pending_releases_.push_back(lease_id);
    if (releasing_) return;  // the thread sending now picks it up
    releasing_ = true;
  }
  while (true) {
    v1::FastPathRequest request;
    {
      absl::MutexLock lock(&mu_);
      if (pending_releases_.empty() || broken_) {
        releasing_ = false;
        pending_releases_.clear();
        return;
      }
      for (uint64_t id : pending_releases_) request.mutable_release()->add_lease_ids(id);
      pending_releases_.clear();
    }
    Send(request).IgnoreError();  // a failure marks the connection broken
  }
}

void FastPathConnection::Prefetch(std::span<const ExpertKey> keys, Priority priority,
                                  ClientId client) {
  v1::FastPathRequest request;
  request.mutable_prefetch()->set_priority(ToProto(priority));
  request.mutable_prefetch()->set_client(client);
  SetKeys(keys, request.mutable_prefetch()->mutable_keys());
  Send(request).IgnoreError();
}

void FastPathConnection::CancelSpeculative(uint32_t through_layer, ClientId client) {
  if (!hello_.cancel_speculative()) return;  // an older daemon would close the connection
  v1::FastPathRequest request;
  request.mutable_cancel_speculative()->set_through_layer(through_layer);
  request.mutable_cancel_speculative()->set_client(client);
  Send(request).IgnoreError();
}

}  // namespace warp
