#pragma once

// EngineWorker: the one thread that runs the model for the server. Requests
// queue in arrival order; each is brought up to its prompt through a
// PromptCache (a follow-up turn or a shared system prompt prefills only its
// new tokens) and decoded token by token, its callbacks run on this thread
// between forward steps. A cancelled request stops before its next token.
//
// Thread-safe: Submit, Stats and the accessors from any thread.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "computed/engine/forward_stats.h"
#include "computed/engine/sampler.h"
#include "computed/run/prompt_cache.h"
#include "computed/run/session.h"

namespace warp::computed::serve {

enum class FinishReason { kStop, kLength, kCancelled };

// What one request cost the engine (the chat page's stats line, the usage).
struct GenerationFigures {
  uint32_t prompt_tokens = 0;
  uint32_t reused_tokens = 0;  // of the prompt, already in the KV cache
  uint32_t completion_tokens = 0;
  double queue_seconds = 0, prefill_seconds = 0, decode_seconds = 0;
  ForwardStats forward;  // the engine's counters over this request
};

struct GenerationJob {
  std::vector<int32_t> prompt;
  uint32_t max_tokens = 1;
  SamplerOptions sampling;
  std::set<int32_t> stop_ids;  // end the reply; never passed to on_token
  // Set from any thread (a client gone): the job ends before its next token.
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  // Run on the worker thread. on_prefilled once the prompt is in the KV cache;
  // on_token for each kept token, returning false to end the reply (a stop
  // string); on_done exactly once, last, with the outcome.
  std::function<void(const GenerationFigures&)> on_prefilled;
  std::function<bool(int32_t)> on_token;
  std::function<void(const absl::Status&, FinishReason, const GenerationFigures&)> on_done;
};

// The server's counters since it started (GET /metrics).
struct EngineStats {
  uint64_t requests = 0, failed_requests = 0, cancelled_requests = 0;
  uint64_t prompt_tokens = 0, reused_prompt_tokens = 0, completion_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;
  double last_decode_tokens_per_second = 0;
  size_t queued = 0;  // waiting, not running
  bool busy = false;  // a request is running
  uint32_t kv_position = 0, context = 0;
  ForwardStats forward;
  LookaheadStats lookahead;
  std::map<std::string, uint64_t> source_counters;
};

class EngineWorker {
 public:
  // Up to `max_queued` requests wait; more are refused (Unavailable).
  EngineWorker(std::unique_ptr<Session> session, size_t max_queued);
  // Shutdown, then joins.
  ~EngineWorker();

  // Ends queued jobs (on_done Unavailable) and cancels the running one (it
  // ends before its next token); later Submits are refused. Idempotent.
  void Shutdown();

  absl::Status Submit(GenerationJob job);
  EngineStats Stats() const;
  uint32_t context() const { return context_; }
  uint32_t trained_positions() const { return trained_positions_; }

  // Writes usage.warp when --learn; call once, after the server stopped.
  absl::Status Finish();

 private:
  void Loop();
  void Run(GenerationJob& job, double queue_seconds);

  const std::unique_ptr<Session> session_;  // only the worker thread touches it
  PromptCache cache_;
  const size_t max_queued_;
  const uint32_t context_;
  const uint32_t trained_positions_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  struct Queued {
    GenerationJob job;
    std::chrono::steady_clock::time_point since;
  };
  std::deque<Queued> queue_;                           // guarded by mutex_
  bool stopping_ = false;                              // guarded by mutex_
  std::shared_ptr<std::atomic<bool>> running_cancel_;  // guarded by mutex_: the running job's
  EngineStats stats_;  // guarded by mutex_ (engine figures copied after each job)
  std::thread thread_;
};

}  // namespace warp::computed::serve
