#pragma once

// GrpcExpertSource: the ExpertSource of one remote expertd, over gRPC on TCP
// (TLS with a token, or plain on loopback) or a Unix socket. Records arrive in <= 1 MiB chunks, are
// reassembled and verified here (footer + CRC32C) before anyone sees them. If the daemon goes away
// mid-batch, the keys not yet received are retried with backoff, so a restarted daemon is picked
// up; a daemon gone for good fails those keys with an error naming its address.
//
// Thread-safe. Owns its reader threads.

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/client/read_job_queue.h"
#include "common/io/buffer_pool.h"
#include "common/store/expert_source.h"
#include "common/wire/lan_auth.h"
#include "warp/v1/expert_service.grpc.pb.h"

namespace warp {

class GrpcExpertSource : public ExpertSource {
 public:
  struct Options {
    // "unix:PATH", "tcp:HOST:PORT" (plain: a daemon run with --insecure) or
    // "tls:HOST:PORT" (a daemon with --tls-cert; `tls` says what to present).
    std::string address;
    TlsClientFiles tls;
    // Attempts per batch before its remaining keys fail; with the backoff
    // doubling from 100 ms, 6 attempts wait about 6 s for a daemon to restart.
    int max_attempts = 6;
    std::chrono::milliseconds backoff{100};
    std::chrono::milliseconds connect_timeout{5000};   // for Connect()'s Describe
    std::chrono::milliseconds attempt_timeout{60000};  // one streaming Read
    size_t reader_threads = 2;                         // batches read concurrently
  };

  // Connects and reads the daemon's Describe. Errors name the address. A
  // refused TLS handshake or token fails at once, not after the connect
  // timeout; a daemon not listening yet is waited for up to that timeout.
  static absl::StatusOr<std::unique_ptr<GrpcExpertSource>> Connect(const Options& options);
  ~GrpcExpertSource() override;

  std::shared_ptr<ReadBatch> Read(std::span<const ExpertKey> keys, Priority priority) override;
  void Prefetch(std::span<const ExpertKey> keys, Priority priority) override;
  // Sent at once (the CancelSpeculative RPC, on gRPC's callback API), not
  // queued behind the reads it is meant to cancel; failures are ignored.
  void CancelSpeculative(uint32_t through_layer) override;

  const v1::DescribeReply& description() const { return description_; }
  absl::StatusOr<v1::StatsReply> Stats() const;
  // The daemon's counters (a Stats RPC); empty if it cannot be reached.
  std::map<std::string, uint64_t> Counters() const override;

 private:
  using Job = ReadJobQueue::Job;

  GrpcExpertSource(const Options& options, std::shared_ptr<grpc::Channel> channel);
  void RunJob(const Job& job);
  void SendPrefetch(const Job& job);
  // One attempt: streams what it can; marks received keys in `done`.
  absl::Status Attempt(const Job& job, std::vector<bool>& done);

  Options options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ExpertStore::Stub> stub_;
  v1::DescribeReply description_;
  // Receive buffers, reused: a fresh record buffer costs its zero fill and page faults.
  std::shared_ptr<BufferPool> buffers_ = BufferPool::Create(4);
  std::unique_ptr<ReadJobQueue> jobs_;  // last: its threads use everything above
};

// The gRPC target of an expertd --listen address.
std::string GrpcTarget(const std::string& address);

}  // namespace warp
