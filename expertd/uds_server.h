#pragma once

// UdsServer: expertd's Unix-socket fast path (proto/warp/v1/fastpath.proto)
// on one socket path. An accept thread hands each client connection to a
// thread of its own (a UdsConnection); both are owned here and joined at
// Shutdown. Does not own the RequestHandler (nor its ExpertStore), which must
// outlive it.
//
// Thread-safe.

#include <atomic>
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
  struct Options {
    std::string path;             // the socket file; a stale one is replaced
    uint32_t socket_mode = 0660;  // permission bits of the socket file
  };

  // Binds, listens and starts accepting. Errors name the path.
  static absl::StatusOr<std::unique_ptr<UdsServer>> Start(const RequestHandler& handler,
                                                          const Options& options);
  ~UdsServer();  // Shutdown()

  // Stops accepting, lets every connection answer the request it is serving,
  // closes them (releasing their leases) and removes the socket file. Idempotent.
  void Shutdown();

  size_t num_connections() const;  // open now

 private:
  struct Client {
    std::unique_ptr<UdsConnection> connection;
    std::thread thread;
    std::atomic<bool> done{false};  // Serve returned: the thread can be joined
  };

  UdsServer(const RequestHandler& handler, const Options& options, ScopedFd listener,
            ScopedFd wake);
  void AcceptLoop();
  void Accept();
  void ReapDone() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const RequestHandler& handler_;
  const Options options_;
  ScopedFd listener_;
  ScopedFd wake_;  // an eventfd: written by Shutdown to end the accept loop
  mutable absl::Mutex mu_;
  std::list<Client> clients_ ABSL_GUARDED_BY(mu_);
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  std::thread accept_thread_;
};

}  // namespace warp::expertd
