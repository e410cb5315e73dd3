#pragma once

// Taking over a Unix socket path safely: a socket file left by a dead daemon
// is removed so bind can succeed; one with a live daemon behind it is refused,
// never stolen.

#include <string>

#include "absl/status/status.h"

namespace warp::expertd {

// OK if `path` is free (or held only by a stale socket file, now removed);
// FailedPrecondition if a process accepts connections on it.
absl::Status ClaimSocketPath(const std::string& path);

}  // namespace warp::expertd
