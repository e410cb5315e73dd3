#include "common/client/grpc_source.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/client/client_id.h"
#include "common/client/received_record.h"
#include "common/client/retry.h"
#include "common/crc32c.h"
#include "common/format/bank_format.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/wire/proto_convert.h"
#include "common/wire/read_chunk_wire.h"
#include "grpcpp/grpcpp.h"

namespace warp {

namespace {

bool NeverRetry(const absl::Status&) { return false; }

// Which failures are attempted again: those a daemon coming back clears, or
// none for a read or pass that a replica can serve instead.
using RetryablePredicate = bool (*)(const absl::Status&);
RetryablePredicate RetryRule(bool once) { return once ? NeverRetry : Retryable; }

// A daemon that is not listening yet (starting, restarting): worth waiting
// for. Anything else (a TLS handshake refused, a plain client talking to a
// TLS port, a token refused) will not change by waiting.
bool NotListeningYet(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE &&
         (absl::StrContains(status.error_message(), "Connection refused") ||
          absl::StrContains(status.error_message(), "No such file or directory"));
}

// What to check, for a connection refused beyond "not listening".
std::string ConnectHint(const std::string& address, const grpc::Status& status) {
  if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED) return "";  // it says why
  if (absl::StartsWith(address, "tls:")) {
    return " (check --tls-ca, --tls-cert/--tls-key if the daemon asks for a client certificate, "
           "and that the daemon serves TLS there)";
  }
  if (absl::StartsWith(address, "tcp:")) {
    return " (a daemon with --tls-cert is addressed as tls:HOST:PORT)";
  }
  return "";
}

}  // namespace

std::string GrpcTarget(const std::string& address) {
  if (absl::StartsWith(address, "tcp:") || absl::StartsWith(address, "tls:")) {
    return address.substr(4);
  }
  return address;
}

absl::StatusOr<std::unique_ptr<GrpcExpertSource>> GrpcExpertSource::Connect(
    const Options& options) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 4 << 20);
  // Reconnect quickly after a daemon restart instead of gRPC's 1 s-and-up
  // backoff: a daemon that is back is connected to within 500 ms.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  // A connection of its own: with gRPC's process-wide pool, a plain client
  // shared the connection of any other to the same address, and one made just
  // after a daemon died was told that connection's "Broken pipe" instead of
  // "Connection refused" (so it did not wait for the daemon).
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (absl::StartsWith(options.address, "tls:")) {
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> tls =
        TlsChannelCredentials(options.tls);
    if (!tls.ok()) return Annotate(tls.status(), "expertd at " + options.address);
    credentials = *std::move(tls);
  }
  auto channel = grpc::CreateCustomChannel(GrpcTarget(options.address), credentials, args);
  auto source = std::unique_ptr<GrpcExpertSource>(new GrpcExpertSource(options, channel));
  grpc::Status status;
  const absl::Status waited = source->retry_.Run(
      [&] {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + options.connect_timeout);
        status = source->stub_->Describe(&context, v1::DescribeRequest(), &source->description_);
        return status.ok() ? absl::OkStatus() : FromGrpc(status);
      },
      nullptr, [&](const absl::Status&) { return NotListeningYet(status); });
  if (waited.ok()) return source;
  if (NotListeningYet(status)) return waited;  // "... unreachable after waiting N s ..."
  const std::string hint = ConnectHint(options.address, status);
  if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
    return absl::UnauthenticatedError(
        absl::StrCat("expertd at ", options.address, ": ", status.error_message(), hint));
  }
  return absl::UnavailableError(absl::StrCat("expertd at ", options.address,
                                             " is unreachable: ", status.error_message(), hint));
}

GrpcExpertSource::GrpcExpertSource(const Options& options, std::shared_ptr<grpc::Channel> channel)
    : options_(options),
      client_(RandomClientId()),
      channel_(std::move(channel)),
      stub_(v1::ExpertStore::NewStub(channel_)),
      read_method_(kReadMethod, grpc::internal::RpcMethod::SERVER_STREAMING, channel_),
      retry_({.address = options.address,
              .deadline = options.retry_deadline.value_or(DefaultRetryDeadline(options.address)),
              .wait = [this](std::chrono::milliseconds pause) { WaitForDaemon(pause); }}),
      cancel_thread_([this] { CancelLoop(); }),
      jobs_(std::make_unique<ReadJobQueue>(options.reader_threads,
                                           [this](const Job& job) { RunJob(job); })) {}

GrpcExpertSource::~GrpcExpertSource() {
  jobs_.reset();  // finish queued jobs first
  {
    absl::MutexLock lock(&cancel_mu_);
    stopping_ = true;
  }
  cancel_thread_.join();
}

std::shared_ptr<ReadBatch> GrpcExpertSource::Read(std::span<const ExpertKey> keys,
                                                  Priority priority) {
  auto batch = std::make_shared<ReadBatch>(keys.size());
  jobs_->Push({.keys = {keys.begin(), keys.end()}, .priority = priority, .batch = batch});
  return batch;
}

std::shared_ptr<ReadBatch> GrpcExpertSource::ReadOnce(std::span<const ExpertKey> keys,
                                                      Priority priority) {
  auto batch = std::make_shared<ReadBatch>(keys.size());
  jobs_->Push(
      {.keys = {keys.begin(), keys.end()}, .priority = priority, .batch = batch, .once = true});
  return batch;
}

void GrpcExpertSource::Prefetch(std::span<const ExpertKey> keys, Priority priority) {
  // Queued for a reader thread: a hint must never hold up the compute thread,
  // least of all while the daemon is down.
  jobs_->Push({.keys = {keys.begin(), keys.end()}, .priority = priority, .batch = nullptr});
}

void GrpcExpertSource::CancelSpeculative(uint32_t through_layer) {
  absl::MutexLock lock(&cancel_mu_);
  pending_cancel_ = through_layer;
}

void GrpcExpertSource::CancelLoop() {
  while (true) {
    uint32_t through_layer;
    {
      absl::MutexLock lock(&cancel_mu_);
      cancel_mu_.Await(absl::Condition(
          +[](GrpcExpertSource* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->cancel_mu_) {
            return self->stopping_ || self->pending_cancel_.has_value();
          },
          this));
      if (stopping_) return;
      through_layer = *pending_cancel_;
      pending_cancel_.reset();
    }
    v1::CancelSpeculativeRequest request;
    request.set_through_layer(through_layer);
    request.set_client(client_);
    grpc::ClientContext context;
    context.set_wait_for_ready(false);  // a hint: never waits for a daemon that is down
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
    v1::CancelSpeculativeReply reply;
    stub_->CancelSpeculative(&context, request, &reply);  // failures are ignored
  }
}

void GrpcExpertSource::SendPrefetch(const Job& job) {
  v1::PrefetchRequest request;
  request.set_priority(ToProto(job.priority));
  request.set_client(client_);
  for (const ExpertKey& key : job.keys) {
    v1::ExpertKey* proto = request.add_keys();
    proto->set_layer(key.layer);
    proto->set_expert(key.expert);
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
  v1::PrefetchReply reply;
  stub_->Prefetch(&context, request, &reply);  // a hint: failures are ignored
}

std::map<std::string, uint64_t> GrpcExpertSource::Counters() const {
  absl::StatusOr<v1::StatsReply> stats = Stats();
  if (!stats.ok()) return {};
  return {stats->counters().begin(), stats->counters().end()};
}

absl::StatusOr<v1::StatsReply> GrpcExpertSource::Stats() const {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::StatsReply reply;
  const grpc::Status status = stub_->Stats(&context, v1::StatsRequest(), &reply);
  if (!status.ok()) return FromGrpc(status);
  return reply;
}

void GrpcExpertSource::WaitForDaemon(std::chrono::milliseconds pause) {
  // The channel's reconnect backoff (capped at 500 ms in Connect) decides
  // when a daemon that is back is connected to. Not ChannelResetConnectionBackoff:
  // called from several reader threads while an attempt was in flight, Debian's
  // gRPC 1.51 failed "ref_counted.h:183 assertion failed: prior > 0" (CI, once).
  if (channel_->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY) {
    // Connected, yet the call failed (a daemon shutting down, a failing disk):
    // nothing to wait for but the pause.
    std::this_thread::sleep_for(pause);
    return;
  }
  channel_->WaitForConnected(std::chrono::system_clock::now() + pause);
}

void GrpcExpertSource::RunJob(const Job& job) {
  if (job.batch == nullptr) return SendPrefetch(job);
  std::vector<bool> done(job.keys.size(), false);
  const absl::Status failure =
      retry_.Run([&] { return Attempt(job, done); }, nullptr, RetryRule(job.once));
  if (failure.ok()) return;
  for (size_t i = 0; i < job.keys.size(); ++i) {
    if (!done[i]) job.batch->Complete(i, failure);
  }
}

absl::Status GrpcExpertSource::Attempt(const Job& job, std::vector<bool>& done) {
  v1::ReadRequest request;
  request.set_model_fingerprint(description_.model_fingerprint());
  request.set_priority(ToProto(job.priority));
  std::vector<size_t> index_of;  // request position -> batch index
  for (size_t i = 0; i < job.keys.size(); ++i) {
    if (done[i]) continue;
    v1::ExpertKey* key = request.add_keys();
    key->set_layer(job.keys[i].layer);
    key->set_expert(job.keys[i].expert);
    index_of.push_back(i);
  }
  grpc::ClientContext context;
  // Fail fast while the daemon is down; RunJob's backoff decides how long to wait for it.
  context.set_wait_for_ready(false);
  context.set_deadline(std::chrono::system_clock::now() + options_.attempt_timeout);
  // The generated stub's Read, over IncomingReadChunk: each chunk's bytes are
  // copied once, from gRPC's buffer into the record's.
  std::unique_ptr<grpc::ClientReader<IncomingReadChunk>> reader(
      grpc::internal::ClientReaderFactory<IncomingReadChunk>::Create(channel_.get(), read_method_,
                                                                     &context, request));
  IncomingReadChunk received;
  const v1::ReadChunk& chunk = received.head;
  std::shared_ptr<AlignedBuffer> buffer;
  Served served = Served::kUnknown;  // of the record being received
  ReceivedDigest digest;             // of the record being received
  while (reader->Read(&received)) {
    if (!received.decoded.ok()) {
      return absl::DataLossError(absl::StrCat(received.decoded.message(), " (from expertd at ",
                                              options_.address, ")"));
    }
    if (chunk.index() >= index_of.size()) {
      return absl::DataLossError(
          absl::StrCat("chunk for request index ", chunk.index(), " of ", index_of.size()));
    }
    const size_t i = index_of[chunk.index()];
    const ExpertKey& key = job.keys[i];
    if (chunk.has_status() && chunk.status().code() != 0) {
      done[i] = true;
      job.batch->Complete(i, FromProto(chunk.status()));
      continue;
    }
    if (chunk.offset() == 0) {
      buffer = buffers_->Get(chunk.record_bytes());
      served = FromProto(chunk.served());
      digest = ReceivedDigest();
    }
    const size_t data_bytes = received.data_bytes();
    if (buffer == nullptr || chunk.offset() > buffer->size() ||
        data_bytes > buffer->size() - chunk.offset()) {
      return absl::DataLossError(absl::StrCat("expert ", key.expert, " of layer ", key.layer,
                                              ": chunk outside the record"));
    }
    if (chunk.last()) {
      received.CopyDataTo(buffer->data() + chunk.offset());
    } else {  // the payload's end is in the footer, not known before the last chunk
      received.CopyDataTo(buffer->data() + chunk.offset(), [&](std::span<const std::byte> copied) {
        digest.Copied(copied.data() - buffer->data(), copied);
      });
      continue;
    }
    const uint64_t record_bytes = chunk.record_bytes();
    absl::Status status = CheckReceived(buffer->span().first(record_bytes), key,
                                        description_.model_fingerprint(), digest);
    done[i] = true;
    if (!status.ok()) {
      job.batch->Complete(
          i, absl::Status(status.code(), absl::StrCat(status.message(), " (from expertd at ",
                                                      options_.address, ")")));
    } else {
      std::span<const std::byte> data = buffer->span().first(record_bytes);
      job.batch->Complete(i, ExpertRecord{.key = key,
                                          .owner = std::move(buffer),
                                          .data = data,
                                          .record_bytes = record_bytes,
                                          .served = served});
    }
    buffer.reset();
  }
  const grpc::Status status = reader->Finish();
  if (!status.ok()) return FromGrpc(status);
  for (size_t i = 0; i < done.size(); ++i) {
    if (!done[i]) return absl::UnavailableError("stream ended before every record arrived");
  }
  return absl::OkStatus();
}

std::future<absl::StatusOr<ComputedExperts>> GrpcExpertSource::Compute(const ComputePass& pass) {
  return std::async(std::launch::async, [this, pass] { return ComputeNow(pass); });
}

absl::StatusOr<ComputedExperts> GrpcExpertSource::ComputeNow(const ComputePass& pass) {
  const uint32_t max_rows = description_.max_compute_rows();
  if (max_rows == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "expertd at ", options_.address, " has no Compute RPC (an older daemon): read records"));
  }
  ComputedExperts computed;
  computed.outputs.resize(pass.experts.size());
  computed.served.assign(pass.experts.size(), Served::kUnknown);
  for (size_t i = 0; i < pass.experts.size(); ++i) {
    computed.outputs[i].reserve(pass.experts[i].rows.size() * pass.width);
  }
  const uint64_t num_rows = pass.rows.size() / pass.width;
  const v1::ExpertMath math = ToProto(pass.math, pass.q8_activations);
  // Requests of at most max_rows consecutive rows; an expert's rows are
  // increasing, so its outputs are appended in its rows' order.
  for (uint64_t begin = 0; begin < num_rows; begin += max_rows) {
    const uint64_t end = std::min<uint64_t>(num_rows, begin + max_rows);
    v1::ComputeRequest request;
    request.set_model_fingerprint(description_.model_fingerprint());
    request.set_layer(pass.layer);
    request.set_width(static_cast<uint32_t>(pass.width));
    request.set_num_rows(static_cast<uint32_t>(end - begin));
    request.set_rows(reinterpret_cast<const char*>(pass.rows.data() + begin * pass.width),
                     (end - begin) * pass.width * sizeof(float));
    *request.mutable_math() = math;
    std::vector<size_t> pass_index;  // request expert -> pass expert
    for (size_t i = 0; i < pass.experts.size(); ++i) {
      const std::span<const uint32_t> rows = pass.experts[i].rows;
      auto first = std::lower_bound(rows.begin(), rows.end(), begin);
      if (first == rows.end() || *first >= end) continue;
      v1::ExpertRows* expert = request.add_experts();
      expert->set_expert(pass.experts[i].expert);
      for (auto row = first; row != rows.end() && *row < end; ++row) {
        expert->add_rows(static_cast<uint32_t>(*row - begin));
      }
      pass_index.push_back(i);
    }
    if (pass_index.empty()) continue;
    std::vector<std::vector<float>> outputs;
    std::vector<Served> served;
    WARP_RETURN_IF_ERROR(retry_.Run([&] { return ComputeAttempt(request, outputs, served); },
                                    nullptr, RetryRule(pass.once)));
    for (size_t j = 0; j < pass_index.size(); ++j) {
      std::vector<float>& whole = computed.outputs[pass_index[j]];
      whole.insert(whole.end(), outputs[j].begin(), outputs[j].end());
      computed.served[pass_index[j]] = served[j];
    }
  }
  return computed;
}

absl::Status GrpcExpertSource::ComputeAttempt(const v1::ComputeRequest& request,
                                              std::vector<std::vector<float>>& outputs,
                                              std::vector<Served>& served) {
  const uint64_t width = request.width(), row_bytes = width * sizeof(float);
  outputs.assign(request.experts_size(), {});
  served.assign(request.experts_size(), Served::kUnknown);
  std::vector<uint64_t> rows_in(request.experts_size(), 0);
  for (int j = 0; j < request.experts_size(); ++j) {
    outputs[j].resize(request.experts(j).rows_size() * width);
  }
  grpc::ClientContext context;
  context.set_wait_for_ready(false);  // the retry window decides how long to wait
  context.set_deadline(std::chrono::system_clock::now() + options_.attempt_timeout);
  std::unique_ptr<grpc::ClientReader<v1::ComputeChunk>> reader = stub_->Compute(&context, request);
  v1::ComputeChunk chunk;
  const auto bad_reply = [&](const std::string& what) {
    return absl::DataLossError(absl::StrCat("expertd at ", options_.address, ": compute reply for ",
                                            "layer ", request.layer(), ": ", what));
  };
  while (reader->Read(&chunk)) {
    if (chunk.index() >= static_cast<uint32_t>(request.experts_size())) {
      return bad_reply(
          absl::StrCat("expert index ", chunk.index(), " of ", request.experts_size()));
    }
    const uint64_t m = request.experts(chunk.index()).rows_size();
    const uint64_t rows = chunk.output().size() / row_bytes;
    if (chunk.output().size() % row_bytes != 0 || chunk.first_row() + rows > m) {
      return bad_reply(absl::StrCat("expert ", request.experts(chunk.index()).expert(),
                                    ": rows from ", chunk.first_row(), ", ",
                                    chunk.output().size(), " bytes, of ", m));
    }
    std::memcpy(outputs[chunk.index()].data() + chunk.first_row() * width, chunk.output().data(),
                chunk.output().size());
    if (chunk.first_row() == 0) served[chunk.index()] = FromProto(chunk.served());
    rows_in[chunk.index()] += rows;
  }
  const grpc::Status status = reader->Finish();
  if (!status.ok()) return FromGrpc(status);
  for (int j = 0; j < request.experts_size(); ++j) {
    if (rows_in[j] != static_cast<uint64_t>(request.experts(j).rows_size())) {
      return bad_reply(absl::StrCat("expert ", request.experts(j).expert(), ": ", rows_in[j],
                                    " rows of ", request.experts(j).rows_size()));
    }
  }
  return absl::OkStatus();
}

}  // namespace warp
