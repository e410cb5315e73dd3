#pragma once

// EngineWorker: the one thread that runs the model for the server. Requests
// queue in arrival order and run in the session's sequences (serve
// --parallel N: N at once; a request goes to the free sequence that holds
// most of its prompt). Each step is one batched pass (Session::ForwardBatch)
// over every running request: a prompt chunk of those prefilling (what
// their sequence's PromptCache does not hold: a follow-up turn or a shared
// system prompt prefills only its new tokens; --prefill-chunk tokens a step,
// default all of them) and one token of those decoding — so tokens of
// different conversations that route to the same expert share one read, a
// new prompt does not stall the replies running, and each request gets the
// bits it would get alone. Callbacks run on this thread between steps. A
// cancelled request stops before its next token.
//
// Thread-safe: Submit, Stats and the accessors from any thread.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "computed/constrain/token_constraint.h"
#include "computed/engine/forward_stats.h"
#include "computed/engine/sampler.h"
#include "computed/run/prompt_cache.h"
#include "computed/run/session.h"
#include "computed/serve/latency_histogram.h"

namespace warp::computed::serve {

enum class FinishReason { kStop, kLength, kCancelled };

// What one request cost the engine (the chat page's stats line, the usage).
struct GenerationFigures {
  uint32_t prompt_tokens = 0;
  uint32_t reused_tokens = 0;  // of the prompt, already in the KV cache
  uint32_t completion_tokens = 0;
  double queue_seconds = 0, prefill_seconds = 0, decode_seconds = 0;
  // The engine's counters over this request: its prefill, and every decode
  // step it took part in, whole (a batched step's reads serve all its requests).
  ForwardStats forward;
  uint32_t most_batched = 1;  // the most requests that shared one of its steps
};

struct GenerationJob {
  std::vector<int32_t> prompt;
  uint32_t max_tokens = 1;
  SamplerOptions sampling;
  std::set<int32_t> stop_ids;  // end the reply; never passed to on_token
  // The grammar the reply must match (reply_grammar.h), or null: a token it
  // refuses is never sampled.
  std::shared_ptr<constrain::TokenConstraint> constraint;
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
  size_t queued = 0;       // waiting, not running
  size_t running = 0;      // prefilling or decoding, at most `sequences`
  uint32_t sequences = 1;  // --parallel
  uint64_t steps = 0;      // batched passes, and the requests they stepped (prefilling or decoding)
  uint64_t step_requests = 0;
  uint32_t kv_position = 0, context = 0;  // summed over the sequences
  ForwardStats forward;
  LookaheadStats lookahead;
  std::map<std::string, uint64_t> source_counters;
  // Per request that produced a token: queue and prefill until its first
  // token; each later token's share of the decode; the wait for a sequence.
  LatencyHistogram time_to_first_token, time_per_output_token, queue_wait;
  uint64_t governor_shrinks = 0, governor_grows = 0;  // the memory governor's cache resizes
  // The prompt cache on disk's counters (serve --prompt-cache-dir), else none.
  std::optional<DiskPromptCacheStats> prompt_cache;
  // The routes counted so far (serve --learn), as of the last request's end.
  std::shared_ptr<const UsageTable> usage;
};

class EngineWorker {
 public:
  // Runs up to session->sequences() requests at once; up to `max_queued`
  // more wait, and more still are refused (Unavailable).
  // `disk` (may be null; it must outlive the worker): the prompt cache on
  // disk each sequence loads prefixes from and saves to, at the end of each
  // prompt chunk, of each prompt and of each reply.
  EngineWorker(std::unique_ptr<Session> session, size_t max_queued,
               DiskPromptCache* disk = nullptr);
  // Shutdown, then joins.
  ~EngineWorker();

  // Ends queued jobs (on_done Unavailable) and cancels the running ones
  // (each ends before its next token); later Submits are refused. Idempotent.
  void Shutdown();

  absl::Status Submit(GenerationJob job);
  EngineStats Stats() const;
  uint32_t context() const { return context_; }
  uint32_t trained_positions() const { return trained_positions_; }

  // Shuts down, waits for the worker thread, then writes usage.warp when
  // --learn; call once, after the server stopped.
  absl::Status Finish();

 private:
  struct Queued {
    GenerationJob job;
    std::chrono::steady_clock::time_point since;
  };
  // A request holding one sequence of the session, from its prefill to its end.
  struct Running {
    GenerationJob job;
    GenerationFigures figures;
    Sampler sampler;
    std::vector<int32_t> pending;  // prompt tokens not yet in the KV cache: prefilling
    std::vector<float> logits;     // of the last position stepped: the next token's
    std::chrono::steady_clock::time_point prefill_start, decode_start;
  };
  struct Slot {
    Slot(Session& session, uint32_t sequence, DiskPromptCache* disk)
        : cache(session, sequence, disk) {}
    PromptCache cache;
    std::optional<Running> running;
    uint64_t last_used = 0;  // the step it last finished a request at: free slots go LRU
  };

  void Loop();
  // The free slot that holds most of `prompt` (least recently used among
  // equals), or null when every slot runs a request.
  Slot* PickSlot(const std::vector<int32_t>& prompt);
  bool AnyRunning() const;
  // Makes the job running in `slot`: keeps what the slot's KV cache holds of
  // its prompt, the rest pending; or ends the job.
  void Start(Queued queued, Slot& slot);
  // One batched pass: the next prompt chunk of each request prefilling; for
  // each decoding one, samples its next token, ends it if that finishes it,
  // else steps the token.
  void Step();
  // The chunk `slot` adds to this step (a decoding one's token in `sampled`),
  // or none when its request ended.
  std::optional<Transformer::SequenceChunk> NextChunk(Slot& slot, int32_t& sampled);
  // Ends the slot's request: counters, the KV cache's record, on_done.
  void End(Slot& slot, const absl::Status& status, FinishReason reason);
  void PublishEngineStats();  // under mutex_

  const std::unique_ptr<Session> session_;  // only the worker thread touches it
  DiskPromptCache* const disk_;             // may be null; thread-safe
  std::vector<Slot> slots_;                 // [sequence]; only the worker thread touches them
  uint64_t steps_ = 0;                      // the worker's iterations
  const size_t max_queued_;
  const uint32_t context_;
  const uint32_t trained_positions_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Queued> queue_;  // guarded by mutex_
  bool stopping_ = false;     // guarded by mutex_
  // guarded by mutex_: the running jobs' cancel flags, by sequence (null: free)
  std::vector<std::shared_ptr<std::atomic<bool>>> running_cancel_;
  EngineStats stats_;  // guarded by mutex_ (engine figures copied after each step)
  std::thread thread_;
};

}  // namespace warp::computed::serve
