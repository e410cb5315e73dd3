#include "common/client/uds_source.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/client/client_id.h"
#include "common/client/received_record.h"
#include "common/client/retry.h"
#include "common/format/bank_format.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/wire/proto_convert.h"

namespace warp {
namespace {

constexpr char kScheme[] = "fastpath:";

}  // namespace

absl::StatusOr<std::unique_ptr<UdsExpertSource>> UdsExpertSource::Connect(const Options& options) {
  if (!absl::StartsWith(options.address, kScheme) || options.address.size() == 9) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.address, ": expected a fast-path address fastpath:PATH"));
  }
  auto source = std::unique_ptr<UdsExpertSource>(new UdsExpertSource(options));
  absl::StatusOr<std::shared_ptr<FastPathConnection>> connection;
  // Waits for a daemon that is still starting, like gRPC's Connect.
  WARP_RETURN_IF_ERROR(source->retry_.Run([&] {
    connection = FastPathConnection::Open(source->path(), 0, options.io_timeout, nullptr);
    return connection.status();
  }));
  source->fingerprint_ = (*connection)->hello().model_fingerprint();
  source->description_ = (*connection)->hello().description();
  absl::MutexLock lock(&source->mu_);
  source->mapping_ = (*connection)->mapping();
  source->last_used_ = *connection;
  source->idle_.push_back(std::move(*connection));
  return source;
}

UdsExpertSource::UdsExpertSource(const Options& options)
    : options_(options),
      client_(RandomClientId()),
      retry_({.address = options.address,
              .deadline = options.retry_deadline.value_or(DefaultRetryDeadline(options.address))}),
      jobs_(std::make_unique<ReadJobQueue>(options.reader_threads,
                                           [this](const Job& job) { RunJob(job); })) {}

UdsExpertSource::~UdsExpertSource() { jobs_.reset(); }  // finish queued jobs first

std::string UdsExpertSource::path() const { return options_.address.substr(sizeof(kScheme) - 1); }

std::shared_ptr<ReadBatch> UdsExpertSource::Read(std::span<const ExpertKey> keys,
                                                 Priority priority) {
  auto batch = std::make_shared<ReadBatch>(keys.size());
  jobs_->Push({.keys = {keys.begin(), keys.end()}, .priority = priority, .batch = batch});
  return batch;
}

void UdsExpertSource::Prefetch(std::span<const ExpertKey> keys, Priority priority) {
  std::shared_ptr<FastPathConnection> connection;
  {
    absl::MutexLock lock(&mu_);
    connection = last_used_.lock();
  }
  if (connection != nullptr && !connection->broken()) connection->Prefetch(keys, priority, client_);
}

void UdsExpertSource::CancelSpeculative(uint32_t through_layer) {
  std::shared_ptr<FastPathConnection> connection;
  {
    absl::MutexLock lock(&mu_);
    connection = last_used_.lock();
  }
  if (connection != nullptr && !connection->broken()) {
    connection->CancelSpeculative(through_layer, client_);
  }
}

absl::StatusOr<std::shared_ptr<FastPathConnection>> UdsExpertSource::TakeConnection() {
  std::shared_ptr<const ArenaMapping> mapping;
  {
    absl::MutexLock lock(&mu_);
    while (!idle_.empty()) {
      std::shared_ptr<FastPathConnection> connection = std::move(idle_.back());
      idle_.pop_back();
      if (!connection->broken()) return connection;
    }
    mapping = mapping_;
  }
  WARP_ASSIGN_OR_RETURN(
      std::shared_ptr<FastPathConnection> connection,
      FastPathConnection::Open(path(), fingerprint_, options_.io_timeout, std::move(mapping)));
  absl::MutexLock lock(&mu_);
  mapping_ = connection->mapping();  // a restarted daemon has a new memfd
  return connection;
}

void UdsExpertSource::ReturnConnection(std::shared_ptr<FastPathConnection> connection) {
  absl::MutexLock lock(&mu_);
  last_used_ = connection;
  if (!connection->broken()) idle_.push_back(std::move(connection));
}

void UdsExpertSource::RunJob(const Job& job) {
  std::vector<bool> done(job.keys.size(), false);
  const absl::Status failure =
      retry_.Run([&] { return Attempt(job, done); },
                 [&] {
                   absl::MutexLock lock(&mu_);
                   idle_.clear();  // connections opened before the failure are likely dead too
                 });
  if (failure.ok()) return;
  for (size_t i = 0; i < job.keys.size(); ++i) {
    if (!done[i]) job.batch->Complete(i, failure);
  }
}

absl::Status UdsExpertSource::Attempt(const Job& job, std::vector<bool>& done) {
  // Only the keys no earlier attempt received: a streamed Read may break halfway.
  std::vector<ExpertKey> keys;
  std::vector<size_t> index_of;  // request position -> the job's
  for (size_t i = 0; i < job.keys.size(); ++i) {
    if (done[i]) continue;
    keys.push_back(job.keys[i]);
    index_of.push_back(i);
  }
  if (keys.empty()) return absl::OkStatus();
  WARP_ASSIGN_OR_RETURN(std::shared_ptr<FastPathConnection> connection, TakeConnection());
  absl::Status refused;
  const absl::Status status =
      connection->Read(keys, job.priority, [&](const FastPathConnection::Reply& reply) {
        if (reply.header.has_status() && reply.header.status().code() != 0) {
          refused = FromProto(reply.header.status());
          return;
        }
        // Each record is the caller's as soon as it arrives.
        for (int r = 0; r < reply.header.records_size(); ++r) {
          const size_t i = index_of[reply.header.key_indices(r)];
          done[i] = true;
          job.batch->Complete(i, MakeRecord(connection, reply, r, job.keys[i]));
        }
      });
  if (!status.ok()) {
    // A reply that does not parse or fit is a broken stream: reconnect as for a dead daemon.
    return status.code() == absl::StatusCode::kDataLoss ? absl::UnavailableError(status.message())
                                                        : status;
  }
  ReturnConnection(connection);
  return refused;
}

absl::StatusOr<ExpertRecord> UdsExpertSource::MakeRecord(
    const std::shared_ptr<FastPathConnection>& connection, const FastPathConnection::Reply& reply,
    int i, const ExpertKey& key) {
  const v1::FastPathRecord& entry = reply.header.records(i);
  if (entry.has_status() && entry.status().code() != 0) return FromProto(entry.status());
  std::shared_ptr<const void> owner;
  std::span<const std::byte> region;
  if (entry.location() == v1::RECORD_LOCATION_ARENA) {
    // The lease is owned first, so every failure below releases it.
    const uint64_t lease_id = entry.lease_id();
    owner = std::shared_ptr<const void>(
        nullptr, [connection, lease_id](const void*) { connection->Release(lease_id); });
    if (connection->mapping() != nullptr) region = connection->mapping()->span();
  } else if (entry.location() == v1::RECORD_LOCATION_PAYLOAD && reply.payload != nullptr) {
    owner = reply.payload;
    region = reply.payload->span().first(reply.header.payload_bytes());
  }
  absl::Status status;
  if (entry.offset() > region.size() || entry.record_bytes() > region.size() - entry.offset() ||
      entry.offset() % kBankAlignment != 0) {
    status = absl::DataLossError(absl::StrCat("expert ", key.expert, " of layer ", key.layer,
                                              ": record outside the shared cache or payload"));
  } else {
    std::span<const std::byte> data = region.subspan(entry.offset(), entry.record_bytes());
    // The daemon checked what it read (records_verified), and nothing else
    // writes its memfd or the socket: checking again only costs a core.
    bool check_crc = options_.verify_every_read || !connection->hello().records_verified();
    if (check_crc && !options_.verify_every_read) {
      absl::MutexLock lock(&mu_);
      check_crc = !verified_.contains(key);
    }
    status = CheckReceived(data, key, fingerprint_, check_crc);
    if (status.ok() && DecodeFooter(data).payload_crc32c != entry.crc32c()) {
      status = absl::DataLossError(absl::StrCat("expert ", key.expert, " of layer ", key.layer,
                                                ": crc32c differs from the reply's"));
    }
    if (status.ok()) {
      if (check_crc) {
        absl::MutexLock lock(&mu_);
        verified_.insert(key);
      }
      return ExpertRecord{.key = key,
                          .owner = std::move(owner),
                          .data = data,
                          .record_bytes = entry.record_bytes(),
                          .served = FromProto(entry.served())};
    }
  }
  return absl::Status(status.code(),
                      absl::StrCat(status.message(), " (from expertd at ", options_.address, ")"));
}

}  // namespace warp
