#pragma once

// A real `expertd serve` process for integration tests: started with fork +
// exec, ready once it has printed one "listening ADDRESS" line per --listen,
// stopped with SIGTERM (or killed) and reaped.
//
// Thread-compatible.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace warp::testing {

class Daemon {
 public:
  struct Options {
    uint64_t max_open_files = 0;  // RLIMIT_NOFILE of the daemon; 0: inherited
  };

  // `args` follow "expertd serve". Waits up to 10 s for readiness.
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(const std::vector<std::string>& args,
                                                       const Options& options);
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(const std::vector<std::string>& args) {
    return Start(args, Options{});
  }
  ~Daemon();

  // The bound addresses, as printed ("unix:PATH", "tcp:127.0.0.1:PORT").
  const std::vector<std::string>& addresses() const { return addresses_; }

  pid_t pid() const { return pid_; }

  // Sends `signal` and waits for the process; returns its exit status
  // (WEXITSTATUS, or 128 + signal if it was killed).
  int Stop(int signal);

 private:
  Daemon(pid_t pid, int out_fd) : pid_(pid), out_fd_(out_fd) {}

  pid_t pid_;
  int out_fd_;
  std::vector<std::string> addresses_;
};

}  // namespace warp::testing
