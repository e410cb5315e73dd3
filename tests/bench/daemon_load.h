#pragma once

// Many clients against one expertd, for the load benchmark
// (tests/bench/daemon_load.sh) and its short version in the unit tests: each
// client is its own connection (UdsExpertSource for fastpath:, else
// GrpcExpertSource) reading random records in a loop; the daemon's RSS,
// descriptors and threads are read from /proc before, during and after.
//
// Thread-compatible: RunLoad starts and joins its own threads.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/store/expert_source.h"
#include "common/wire/lan_auth.h"

namespace warp::bench {

struct ProcessFigures {
  uint64_t rss_bytes = 0;
  uint64_t fds = 0;
  uint64_t threads = 0;
};

// Of process `pid`, from /proc; zeros if it cannot be read.
ProcessFigures ReadProcessFigures(pid_t pid);

struct LoadOptions {
  std::string address;  // fastpath:PATH, unix:PATH, tls:HOST:PORT or tcp:HOST:PORT
  TlsClientFiles tls;   // for tls:
  size_t clients = 64;
  std::chrono::milliseconds duration{10'000};
  size_t keys_per_read = 1;
  std::vector<ExpertKey> keys;  // read at random
  pid_t daemon_pid = 0;         // sampled at the peak (0: not sampled)
};

struct LoadResult {
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t errors = 0;
  std::string first_error;
  size_t connected = 0;  // clients that connected
  double seconds = 0;
  ProcessFigures peak;  // the daemon's, with every client connected
};

LoadResult RunLoad(const LoadOptions& options);

}  // namespace warp::bench
