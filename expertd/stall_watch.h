#pragma once

// StallWatch: cancels gRPC calls whose client stopped taking reply bytes. A
// streaming Read blocks its server thread in Write while the client's HTTP/2
// window is shut; a client that never opens it (a zero window) would hold the
// thread, and the leases of its records, forever. A call marks each Write;
// a watcher thread cancels (ServerContext::TryCancel) any call whose Write
// has been pending longer than the timeout, which makes the Write fail.
//
// Thread-safe. Owns the watcher thread (joined by the destructor).

#include <chrono>
#include <cstdint>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/server_context.h"

namespace warp::expertd {

class StallWatch {
 public:
  explicit StallWatch(std::chrono::milliseconds timeout);
  ~StallWatch();

  // One call's Writes, watched while the Tracked object lives.
  class Tracked {
   public:
    Tracked(StallWatch& watch, grpc::ServerContext* context);
    ~Tracked();
    void WriteStarted();
    void WriteDone();

   private:
    StallWatch& watch_;
    grpc::ServerContext* const context_;
  };

  uint64_t cancelled() const;  // calls cancelled so far

 private:
  using Clock = std::chrono::steady_clock;
  void Watch();

  const std::chrono::milliseconds timeout_;
  mutable absl::Mutex mu_;
  // A call -> when its pending Write began (time_point{} while none is pending).
  absl::flat_hash_map<grpc::ServerContext*, Clock::time_point> calls_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t cancelled_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread watcher_;
};

}  // namespace warp::expertd
