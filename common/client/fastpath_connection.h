#pragma once

// FastPathConnection: one client connection to an expertd's Unix-socket fast
// path (proto/warp/v1/fastpath.proto): the socket after a successful Hello,
// and the read-only mapping of the daemon's cache memfd, shared by every
// connection to the same daemon process. Records read in place point into
// that mapping; their leases hold the connection (so the daemon keeps their
// slots) and the connection holds the mapping (so it outlives them).
//
// Thread-safe: Read() by one thread at a time (the reader that took the
// connection); Release() and Prefetch() from any thread.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/io/aligned_buffer.h"
#include "common/io/buffer_pool.h"
#include "common/io/file.h"
#include "common/store/expert_source.h"
#include "warp/v1/fastpath.pb.h"

namespace warp {

// A read-only MAP_SHARED mapping of a daemon's cache memfd; unmapped when the
// last connection and record using it are gone.
class ArenaMapping {
 public:
  // Maps `bytes` of `fd`. FailedPrecondition if the file is shorter or not
  // sealed against shrinking (either could fault the client later).
  static absl::StatusOr<std::shared_ptr<const ArenaMapping>> Map(const ScopedFd& fd,
                                                                 uint64_t bytes);
  ~ArenaMapping();
  ArenaMapping(const ArenaMapping&) = delete;
  ArenaMapping& operator=(const ArenaMapping&) = delete;

  std::span<const std::byte> span() const { return {base_, bytes_}; }
  // True if `fd` is the file this maps (the daemon passed the same memfd again).
  bool SameFile(const ScopedFd& fd) const;

 private:
  ArenaMapping(const std::byte* base, uint64_t bytes, dev_t dev, ino_t ino)
      : base_(base), bytes_(bytes), dev_(dev), ino_(ino) {}

  const std::byte* base_;
  uint64_t bytes_;
  dev_t dev_;
  ino_t ino_;
};

class FastPathConnection {
 public:
  // One reply to a Read: all its records, or, from a daemon that streams,
  // some of them.
  struct Reply {
    // Validated: key_indices (filled in here for a daemon that does not
    // stream) gives each record's position in the request, each position once.
    v1::FastPathReadReply header;
    std::shared_ptr<const AlignedBuffer> payload;  // payload_bytes long (null if 0)
  };
  using OnReply = std::function<void(const Reply& reply)>;

  // Connects to the socket at `path` and says Hello, expecting `fingerprint`
  // (0: any). Reuses `current` if the daemon passes the memfd it maps.
  // Unavailable if nothing listens; FailedPrecondition if the daemon refuses.
  static absl::StatusOr<std::shared_ptr<FastPathConnection>> Open(
      const std::string& path, uint64_t fingerprint, std::chrono::milliseconds io_timeout,
      std::shared_ptr<const ArenaMapping> current);
  ~FastPathConnection() = default;
  FastPathConnection(const FastPathConnection&) = delete;
  FastPathConnection& operator=(const FastPathConnection&) = delete;

  // Sends one Read and passes each of its replies to `on_reply` as it
  // arrives, until every key has its record (a daemon that streams sends one
  // reply per record, as each is read) or the daemon refuses the Read (one
  // reply with a status). Any error leaves the connection broken(); the
  // caller drops it and opens another.
  absl::Status Read(std::span<const ExpertKey> keys, Priority priority, const OnReply& on_reply);

  // Ends a lease, best effort (a broken connection's leases died with it).
  // Releases from concurrent threads are sent together.
  void Release(uint64_t lease_id);

  // A hint of `client`'s (client_id.h), best effort.
  void Prefetch(std::span<const ExpertKey> keys, Priority priority,
                ClientId client = kLocalClient);

  // Withdraws `client`'s hints, best effort; not sent unless
  // hello().cancel_speculative().
  void CancelSpeculative(uint32_t through_layer, ClientId client = kLocalClient);

  const v1::FastPathHelloReply& hello() const { return hello_; }
  // The daemon's cache; null if it has none (every record comes in payloads).
  const std::shared_ptr<const ArenaMapping>& mapping() const { return mapping_; }
  bool broken() const;

 private:
  explicit FastPathConnection(ScopedFd socket) : socket_(std::move(socket)) {}
  absl::Status Hello(uint64_t fingerprint, std::shared_ptr<const ArenaMapping> current);
  absl::Status Send(const v1::FastPathRequest& request);  // one whole frame
  // One reply; `answered` marks the request positions answered so far.
  absl::StatusOr<Reply> ReceiveReply(uint64_t request_id, std::vector<bool>& answered);

  ScopedFd socket_;
  // Payload buffers, reused: a fresh record buffer costs its zero fill and page faults.
  std::shared_ptr<BufferPool> payloads_ = BufferPool::Create(4);
  v1::FastPathHelloReply hello_;
  std::shared_ptr<const ArenaMapping> mapping_;
  uint64_t next_request_id_ = 1;  // used by the single Read caller only
  mutable absl::Mutex mu_;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<uint64_t> pending_releases_ ABSL_GUARDED_BY(mu_);
  bool releasing_ ABSL_GUARDED_BY(mu_) = false;   // a thread is sending releases
  absl::Mutex send_mu_ ABSL_ACQUIRED_AFTER(mu_);  // whole frames, one at a time
};

}  // namespace warp
