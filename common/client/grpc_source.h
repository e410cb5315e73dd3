#pragma once

// GrpcExpertSource: the ExpertSource of one remote expertd, over gRPC on TCP
// (TLS with a token, or plain on loopback) or a Unix socket. Records arrive in <= 1 MiB chunks, are
// reassembled and verified here (footer + CRC32C) before anyone sees them. If the daemon goes away
// mid-batch, the keys not yet received are attempted again (common/client/retry.h) until the
// daemon is back, which is seen within about 0.5 s of it listening again, or until it has been
// unreachable for the retry deadline; then those keys fail with an error naming its address.
//
// It is also an ExpertComputer: Compute sends a pass's rows to the daemon's
// Compute RPC (split by its max_compute_rows), attempted again whole as reads
// are while the daemon is away.
//
// Thread-safe. Owns its reader threads; each Compute runs on a thread of its own.

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/client/read_job_queue.h"
#include "common/client/retry.h"
#include "common/compute/expert_computer.h"
#include "common/io/buffer_pool.h"
#include "common/store/expert_source.h"
#include "common/wire/lan_auth.h"
#include "grpcpp/impl/rpc_method.h"
#include "warp/v1/expert_service.grpc.pb.h"

namespace warp {

class GrpcExpertSource : public ExpertSource, public ExpertComputer {
 public:
  struct Options {
    // "unix:PATH", "tcp:HOST:PORT" (plain: a daemon run with --insecure) or
    // "tls:HOST:PORT" (a daemon with --tls-cert; `tls` says what to present).
    std::string address;
    TlsClientFiles tls;
    // How long a daemon that went away, or that Connect() finds not yet
    // listening, is waited for; unset: DefaultRetryDeadline(address).
    std::optional<std::chrono::milliseconds> retry_deadline;
    std::chrono::milliseconds connect_timeout{5000};   // one Describe at Connect()
    std::chrono::milliseconds attempt_timeout{60000};  // one streaming Read
    size_t reader_threads = 2;                         // batches read concurrently
  };

  // Connects and reads the daemon's Describe. Errors name the address. A
  // refused TLS handshake or token fails at once; a daemon not listening yet
  // ("Connection refused", "No such file") is waited for up to the retry
  // deadline, saying so once.
  static absl::StatusOr<std::unique_ptr<GrpcExpertSource>> Connect(const Options& options);
  ~GrpcExpertSource() override;

  std::shared_ptr<ReadBatch> Read(std::span<const ExpertKey> keys, Priority priority) override;
  std::shared_ptr<ReadBatch> ReadOnce(std::span<const ExpertKey> keys, Priority priority) override;
  void Prefetch(std::span<const ExpertKey> keys, Priority priority) override;
  // Sent by a thread of its own (the CancelSpeculative RPC), not queued
  // behind the reads it is meant to cancel; returns at once. Calls made while
  // one is in flight are coalesced into the newest. Failures are ignored.
  void CancelSpeculative(uint32_t through_layer) override;

  // FailedPrecondition if the daemon has no Compute RPC (an older one).
  std::future<absl::StatusOr<ComputedExperts>> Compute(const ComputePass& pass) override;

  const v1::DescribeReply& description() const { return description_; }
  // The id its hints and cancels carry: a cancel withdraws only this client's hints.
  ClientId client_id() const { return client_; }
  absl::StatusOr<v1::StatsReply> Stats() const;
  // The daemon's counters (a Stats RPC); empty if it cannot be reached.
  std::map<std::string, uint64_t> Counters() const override;

 private:
  using Job = ReadJobQueue::Job;

  GrpcExpertSource(const Options& options, std::shared_ptr<grpc::Channel> channel);
  // Between attempts: connects the channel at once (whatever its own backoff)
  // and returns as soon as it is connected, or after `pause`.
  void WaitForDaemon(std::chrono::milliseconds pause);
  void RunJob(const Job& job);
  void SendPrefetch(const Job& job);
  // The cancel thread: sends the newest pending CancelSpeculative until stopped.
  void CancelLoop();
  // One attempt: streams what it can; marks received keys in `done`.
  absl::Status Attempt(const Job& job, std::vector<bool>& done);
  absl::StatusOr<ComputedExperts> ComputeNow(const ComputePass& pass);
  // One attempt of one request: each of its experts' rows whole in `outputs`.
  absl::Status ComputeAttempt(const v1::ComputeRequest& request,
                              std::vector<std::vector<float>>& outputs,
                              std::vector<Served>& served);

  Options options_;
  const ClientId client_;  // sent with its hints and cancels (PrefetchRequest.client)
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ExpertStore::Stub> stub_;
  const grpc::internal::RpcMethod read_method_;  // Read, registered as the stub would
  v1::DescribeReply description_;
  RetryWindow retry_;
  // Receive buffers, reused: a fresh record buffer costs its zero fill and page
  // faults. 16 idle: a layer's records (top-8 in K2) twice over. With 4, half
  // of each K2 layer's records came in fresh buffers: 40% of the reading
  // client's CPU zeroed pages (docs/EFFICIENCY.md, records over gRPC).
  std::shared_ptr<BufferPool> buffers_ = BufferPool::Create(16);
  // Not gRPC's callback API: with Debian's gRPC 1.51 its completion-queue
  // thread aborted ("ref_counted.h:183 assertion failed: prior > 0" in
  // grpc_cq_internal_unref) when a channel reconnected after a daemon restart.
  absl::Mutex cancel_mu_;
  std::optional<uint32_t> pending_cancel_ ABSL_GUARDED_BY(cancel_mu_);
  bool stopping_ ABSL_GUARDED_BY(cancel_mu_) = false;
  std::thread cancel_thread_;
  std::unique_ptr<ReadJobQueue> jobs_;  // last: its threads use everything above
};

// The gRPC target of an expertd --listen address.
std::string GrpcTarget(const std::string& address);

}  // namespace warp
