#pragma once

// SessionState: what a warp_session is — a run/ Session of the model plus
// the bookkeeping the C API's prefill/generate calls need between them: the
// ids in the KV cache, the last logits to sample from, a token generated but
// not yet run through the model, the cancel flag and the figures of warp_stats.
//
// Thread-compatible, except Cancel, which any thread may call at any time.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "computed/api/model_state.h"
#include "computed/api/warp.h"
#include "computed/engine/sampler.h"
#include "computed/run/disk_prompt_cache.h"
#include "computed/run/session.h"

namespace warp::api {

struct GenerateRequest {
  uint32_t max_tokens = 32;
  computed::SamplerOptions sampling;
  bool ignore_eos = false;
};

struct GenerateOutcome {
  uint32_t num_tokens = 0;
  warp_stop_reason stop_reason = WARP_STOP_LENGTH;
};

// Gets each kept token and the text it completed (WARP_NO_TOKEN: the text
// held back at the end); returns true to stop the generation.
using TokenSink = std::function<bool(int32_t token, const std::string& text)>;

class SessionState {
 public:
  static absl::StatusOr<std::unique_ptr<SessionState>> Open(
      std::shared_ptr<const ModelState> model);

  absl::Status Prefill(std::span<const int32_t> ids);
  absl::StatusOr<GenerateOutcome> Generate(const GenerateRequest& request, const TokenSink& sink);
  absl::Status Reset();
  void Cancel() { cancelled_.store(true); }

  warp_stats Stats() const;
  std::string StatsLine() const { return session_->StatsLine(); }

 private:
  SessionState(std::shared_ptr<const ModelState> model, std::unique_ptr<computed::Session> session)
      : model_(std::move(model)), session_(std::move(session)) {}

  // An empty context's prefill: the longest prefix of `ids` the disk cache
  // holds, loaded (history_ then holds it); the ids still to run.
  std::span<const int32_t> LoadFromDisk(std::span<const int32_t> ids);
  // What the KV cache holds, to the disk cache (none: nothing).
  void SaveToDisk();

  // Refuses to go on after an engine error left the KV cache unknown.
  absl::Status CheckUsable() const;
  // Runs unfed_ + `ids` (the last position's logits into logits_);
  // `count` adds them to the prefill figures.
  absl::Status Feed(std::span<const int32_t> ids, bool count = true);
  // Logits of the last position when a generation ended after running its
  // last token (Generate keeps none): that token is run again, which gives
  // the same logits (chunking never changes them). FailedPrecondition when
  // the context is empty.
  absl::Status RestoreLogits();
  // Generate's loop and what the KV cache holds after it.
  absl::StatusOr<GenerateOutcome> Decode(const GenerateRequest& request, uint32_t max_tokens,
                                         const TokenSink& sink);

  std::shared_ptr<const ModelState> model_;  // kept alive: the tokenizer and stop ids
  std::unique_ptr<computed::Session> session_;
  std::shared_ptr<computed::DiskPromptCache> disk_;  // the model's (prompt_cache_dir); may be null
  std::vector<int32_t> history_;  // the ids in the KV cache: position() of them
  std::vector<float> logits_;     // [vocab] of the last position run; empty: none kept
  std::vector<int32_t> unfed_;    // generated, not yet in the KV cache (at most one)
  absl::Status broken_;           // an engine error mid-run: only Reset clears it
  std::atomic<bool> cancelled_{false};
  uint64_t prefill_tokens_ = 0, decode_tokens_ = 0, disk_tokens_ = 0;
  double prefill_seconds_ = 0, decode_seconds_ = 0;
};

}  // namespace warp::api
