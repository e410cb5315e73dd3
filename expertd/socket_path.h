#pragma once

// Taking over a listen address safely. A Unix socket file left by a dead
// daemon is removed so bind can succeed; one with a live daemon behind it is
// refused, never stolen. A TCP port gRPC could not bind is probed to say why.

#include <string>

#include "absl/status/status.h"

namespace warp::expertd {

// OK if `path` is free (or held only by a stale socket file, now removed);
// FailedPrecondition if a process accepts connections on it.
absl::Status ClaimSocketPath(const std::string& path);

// Why gRPC could not listen on `host_port` ("HOST:PORT"), found by binding a
// socket there as gRPC does (SO_REUSEADDR, no SO_REUSEPORT): "the port is in
// use ...", "no permission ..."; OK if the bind succeeds now (the caller keeps
// its own message).
absl::Status ProbeTcpListen(const std::string& host_port);

}  // namespace warp::expertd
