#pragma once

// UdsExpertSource: the ExpertSource of one expertd on this machine, over its
// Unix-socket fast path (proto/warp/v1/fastpath.proto). Records the daemon
// holds in shared memory (cached, or staged after a read the cache did not
// keep) are read in place: a record's bytes point into a read-only mapping of
// the daemon's memfd, verified here before anyone sees them (footer against
// the key and the model fingerprint; the payload's CRC32C only if the daemon
// did not check it (its Hello says), then at the key's first arrival as the
// embedded store checks what it reads; every time with verify_every_read),
// and its lease keeps the daemon from reusing the slot until the record is
// dropped. Other records arrive in the reply instead.
//
// If the daemon goes away, a batch is attempted again on a new connection
// (new Hello, new mapping) with a backoff of at most 0.5 s
// (common/client/retry.h), so a restarted daemon is used within about 0.5 s
// of listening again; records of the old mapping stay valid for their
// holders (it is unmapped with its last record). A daemon unreachable for
// the retry deadline fails the batch Unavailable "expertd at fastpath:PATH
// is unreachable after waiting N s ...".
//
// Thread-safe. Owns its reader threads; each reader uses one connection at a
// time, so batches of different readers are served concurrently.

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/client/fastpath_connection.h"
#include "common/client/read_job_queue.h"
#include "common/client/retry.h"
#include "common/store/expert_source.h"
#include "warp/v1/expert_service.pb.h"

namespace warp {

class UdsExpertSource : public ExpertSource {
 public:
  struct Options {
    std::string address;  // as expertd --listen: "fastpath:PATH"
    // How long a daemon that went away, or that Connect() finds not yet
    // listening, is waited for; unset: DefaultRetryDeadline(address) (30 s).
    std::optional<std::chrono::milliseconds> retry_deadline;
    std::chrono::milliseconds io_timeout{60000};  // one Read's reply
    size_t reader_threads = 2;                    // batches read concurrently
    // Check every record's CRC32C, even where the daemon checked it when it
    // read the record: the CRC of each 24 MB record costs the client a core
    // for 2-6 ms (docs/EFFICIENCY.md "Fast-path misses in shared memory").
    bool verify_every_read = false;
  };

  // Connects (says Hello, maps the cache). Errors name the address. A daemon
  // not listening yet is waited for up to the retry deadline, saying so once.
  static absl::StatusOr<std::unique_ptr<UdsExpertSource>> Connect(const Options& options);
  // Finishes the batches already queued. Records still held stay valid (they
  // hold their connection and mapping).
  ~UdsExpertSource() override;

  std::shared_ptr<ReadBatch> Read(std::span<const ExpertKey> keys, Priority priority) override;
  void Prefetch(std::span<const ExpertKey> keys, Priority priority) override;
  // Sent on the connection last used (FastPathCancelSpeculative) with this
  // source's client id, as its hints are: the daemon withdraws this client's
  // hints whichever connection carried them. A no-op with a daemon that does
  // not understand it.
  void CancelSpeculative(uint32_t through_layer) override;

  // What the daemon holds, from its Hello reply (as gRPC Describe says).
  const v1::DescribeReply& description() const { return description_; }

 private:
  using Job = ReadJobQueue::Job;

  explicit UdsExpertSource(const Options& options);
  void RunJob(const Job& job);
  // One attempt at the keys not yet `done`; marks those it completes.
  absl::Status Attempt(const Job& job, std::vector<bool>& done);
  // A record of `reply` entry `i`, checked; owns its lease or payload.
  absl::StatusOr<ExpertRecord> MakeRecord(const std::shared_ptr<FastPathConnection>& connection,
                                          const FastPathConnection::Reply& reply, int i,
                                          const ExpertKey& key);
  // An idle connection, else a new one.
  absl::StatusOr<std::shared_ptr<FastPathConnection>> TakeConnection();
  void ReturnConnection(std::shared_ptr<FastPathConnection> connection);
  std::string path() const;

  Options options_;
  const ClientId client_;     // sent with its hints and cancels (client_id.h)
  uint64_t fingerprint_ = 0;  // set by Connect, then constant
  v1::DescribeReply description_;
  RetryWindow retry_;
  absl::Mutex mu_;
  std::vector<std::shared_ptr<FastPathConnection>> idle_ ABSL_GUARDED_BY(mu_);
  // The newest mapping of the daemon's cache, reused by its new connections.
  std::shared_ptr<const ArenaMapping> mapping_ ABSL_GUARDED_BY(mu_);
  // The connection used last: Prefetch hints go there, even while it is busy.
  std::weak_ptr<FastPathConnection> last_used_ ABSL_GUARDED_BY(mu_);
  // Keys whose CRC32C passed here once, from a daemon that does not check
  // (their bytes are the same in every reply).
  absl::flat_hash_set<ExpertKey> verified_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<ReadJobQueue> jobs_;  // last: its threads use everything above
};

}  // namespace warp
