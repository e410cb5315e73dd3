#pragma once

// UdsServer: expertd's Unix-socket fast path (proto/warp/v1/fastpath.proto)
// on one socket path. An accept thread hands each client connection to a
// thread of its own (a UdsConnection); both are owned here and joined at
// Shutdown. Does not own the RequestHandler (nor its ExpertStore), which must
// outlive it. Bounded: past max_connections, or past half of them from
// one process (SO_PEERCRED), or when the connection would take one of the
// process's last kReservedDescriptors file descriptors (kept for gRPC), a
// client gets a Hello reply of RESOURCE_EXHAUSTED and is closed; out of file
// descriptors all the same, the accept loop sheds the waiting client, backs
// off and logs once per 10 s, and recovers as connections close.
//
// Thread-safe.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/io/file.h"
#include "expertd/request_handler.h"
#include "expertd/uds_connection.h"

namespace warp::expertd {

class UdsServer {
 public:
  static constexpr int kReservedDescriptors = 16;

  struct Options {
    std::string path;              // the socket file; a stale one is replaced
    uint32_t socket_mode = 0660;   // permission bits of the socket file
    size_t max_connections = 256;  // open at once (a client may hold several)
    UdsConnection::Limits connection;
  };

  // Binds, listens and starts accepting. Errors name the path.
  static absl::StatusOr<std::unique_ptr<UdsServer>> Start(const RequestHandler& handler,
                                                          const Options& options);
  ~UdsServer();  // Shutdown()

  // Stops accepting, lets every connection answer the request it is serving,
  // closes them (releasing their leases) and removes the socket file. Idempotent.
  void Shutdown();

 private:
  struct Client {
    std::unique_ptr<UdsConnection> connection;
    std::thread thread;
    std::atomic<bool> done{false};  // Serve returned: the thread can be joined
    pid_t peer = 0;                 // the client's process (0: unknown)
  };

  UdsServer(const RequestHandler& handler, const Options& options, ScopedFd listener, ScopedFd wake,
            ScopedFd reaps);
  void AcceptLoop();
  // Accepts one client; false when the accept loop should back off (no
  // file descriptor left, or another failure that would repeat at once).
  bool Accept();
  // Tells a client refused why ("expertd fastpath:PATH " + why), and closes it.
  void Refuse(ScopedFd socket, const std::string& why);
  // A warning at most once per 10 s, counting the ones not logged.
  void LogRateLimited(const std::string& what);
  void ReapDone() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const RequestHandler& handler_;
  const Options options_;
  ScopedFd listener_;
  ScopedFd wake_;   // an eventfd: written by Shutdown to end the accept loop
  ScopedFd reaps_;  // an eventfd: written by each connection thread as it ends
  // Accept-thread state: a descriptor kept free to accept (and close) a client
  // when the process has no other, and the rate limit of its warnings.
  ScopedFd spare_;
  std::chrono::steady_clock::time_point last_log_{};
  uint64_t unlogged_ = 0;
  mutable absl::Mutex mu_;
  std::list<Client> clients_ ABSL_GUARDED_BY(mu_);
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  std::thread accept_thread_;
};

}  // namespace warp::expertd
