#pragma once

// Ctrl-C for interactive commands: while an InterruptScope lives, SIGINT sets
// a flag instead of killing the process, and interrupts a blocking read
// (no SA_RESTART), so a generation can stop at the next token.

#include <atomic>

namespace warp::computed {

// Thread-compatible; one at a time per process (it owns the SIGINT handler).
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  // Set by SIGINT; the owner clears it once it has acted on it.
  static std::atomic<bool>& flag();
};

}  // namespace warp::computed
