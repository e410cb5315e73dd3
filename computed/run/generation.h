#pragma once

// The decode loop `run` and `chat` share: sample, stop on an end-of-text id,
// a token budget or an interrupt, and hand each kept token to the caller as
// soon as it is known (so output streams).

#include <atomic>
#include <cstdint>
#include <functional>
#include <set>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "computed/engine/sampler.h"
#include "computed/run/session.h"

namespace warp::computed {

struct GenerationLimits {
  uint32_t max_tokens = 32;
  std::set<int32_t> stop_ids;                      // sampled but neither kept nor fed back
  const std::atomic<bool>* interrupted = nullptr;  // checked before each token
  bool feed_last = false;  // also step the last kept token (chat: the next turn needs it)
};

struct Generated {
  std::vector<int32_t> ids;  // kept tokens
  bool stopped = false;      // a stop id ended it
  bool interrupted = false;
};

// Generates from the logits of the last prompt position. Every kept token is
// passed to `on_token` before the next forward step starts. With feed_last,
// or when a stop id or an interrupt ends it, the KV cache holds prompt + ids;
// otherwise all of them but the last.
absl::StatusOr<Generated> Generate(Session& session, Sampler& sampler,
                                   std::span<const float> last_logits,
                                   const GenerationLimits& limits,
                                   const std::function<absl::Status(int32_t)>& on_token);

}  // namespace warp::computed
