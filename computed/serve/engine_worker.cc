#include "computed/serve/engine_worker.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "computed/run/generation.h"

namespace warp::computed::serve {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

EngineWorker::EngineWorker(std::unique_ptr<Session> session, size_t max_queued)
    : session_(std::move(session)),
      cache_(*session_),
      max_queued_(max_queued),
      context_(session_->max_positions()),
      trained_positions_(session_->trained_positions()) {
  stats_.context = context_;
  stats_.source_counters = session_->SourceCounters();
  thread_ = std::thread([this] { Loop(); });
}

EngineWorker::~EngineWorker() {
  Shutdown();
  thread_.join();
}

void EngineWorker::Shutdown() {
  std::deque<Queued> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    dropped.swap(queue_);
    if (running_cancel_) running_cancel_->store(true);  // ends before its next token
  }
  wake_.notify_all();
  for (Queued& queued : dropped) {
    queued.job.on_done(absl::UnavailableError("the server is shutting down"),
                       FinishReason::kCancelled, GenerationFigures{});
  }
}

absl::Status EngineWorker::Submit(GenerationJob job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return absl::UnavailableError("the server is shutting down");
    if (queue_.size() >= max_queued_) {
      return absl::UnavailableError(absl::StrCat("the server is busy: ", queue_.size(),
                                                 " requests are waiting (--max-queue)"));
    }
    queue_.push_back({std::move(job), Clock::now()});
    stats_.queued = queue_.size();
  }
  wake_.notify_one();
  return absl::OkStatus();
}

EngineStats EngineWorker::Stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

absl::Status EngineWorker::Finish() { return session_->Finish(); }

void EngineWorker::Loop() {
  while (true) {
    Queued next;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping
      next = std::move(queue_.front());
      queue_.pop_front();
      stats_.queued = queue_.size();
      stats_.busy = true;
      running_cancel_ = next.job.cancelled;
    }
    Run(next.job, SecondsSince(next.since));
    std::lock_guard<std::mutex> lock(mutex_);
    running_cancel_.reset();
    stats_.busy = false;
    stats_.kv_position = session_->position();
    stats_.forward = session_->transformer().stats();
    stats_.lookahead = session_->transformer().lookahead_stats();
    stats_.source_counters = session_->SourceCounters();
  }
}

void EngineWorker::Run(GenerationJob& job, double queue_seconds) {
  GenerationFigures figures{.prompt_tokens = static_cast<uint32_t>(job.prompt.size()),
                            .queue_seconds = queue_seconds};
  const ForwardStats before = session_->transformer().stats();
  auto done = [&](const absl::Status& status, FinishReason reason) {
    figures.forward = ForwardStats::Delta(session_->transformer().stats(), before);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.requests;
      if (!status.ok()) ++stats_.failed_requests;
      if (reason == FinishReason::kCancelled) ++stats_.cancelled_requests;
      stats_.prompt_tokens += figures.prompt_tokens;
      stats_.reused_prompt_tokens += figures.reused_tokens;
      stats_.completion_tokens += figures.completion_tokens;
      stats_.prefill_seconds += figures.prefill_seconds;
      stats_.decode_seconds += figures.decode_seconds;
      if (figures.completion_tokens > 1 && figures.decode_seconds > 0) {
        stats_.last_decode_tokens_per_second =
            (figures.completion_tokens - 1) / figures.decode_seconds;
      }
    }
    job.on_done(status, reason, figures);
  };
  if (job.cancelled->load()) return done(absl::OkStatus(), FinishReason::kCancelled);

  const auto prefill_start = Clock::now();
  absl::StatusOr<std::vector<float>> logits =
      cache_.BringUpTo(job.prompt, job.max_tokens, "the prompt");
  figures.prefill_seconds = SecondsSince(prefill_start);
  figures.reused_tokens = cache_.reused_tokens();
  if (!logits.ok()) {
    // A refused prompt left the KV cache as it was; a failed forward did not.
    if (!absl::IsResourceExhausted(logits.status())) cache_.Clear();
    return done(logits.status(), FinishReason::kStop);
  }
  if (job.on_prefilled) job.on_prefilled(figures);

  // A stop string ends the reply through `ended`, checked like a cancel.
  std::atomic<bool> ended{false};
  bool stop_string = false;
  auto on_token = [&](int32_t id) -> absl::Status {
    ++figures.completion_tokens;
    if (!job.on_token(id)) stop_string = true;
    if (stop_string || job.cancelled->load()) ended = true;
    return absl::OkStatus();
  };
  // Generate checks one flag; the cancel flag is folded into `ended` above
  // and here, before the first token.
  if (job.cancelled->load()) ended = true;
  Sampler sampler(job.sampling);
  const auto decode_start = Clock::now();
  GenerationLimits limits{.max_tokens = job.max_tokens,
                          .stop_ids = job.stop_ids,
                          .interrupted = &ended,
                          .feed_last = false};
  absl::StatusOr<Generated> generated = Generate(*session_, sampler, *logits, limits, on_token);
  figures.decode_seconds = SecondsSince(decode_start);
  if (!generated.ok()) {
    cache_.Clear();
    return done(generated.status(), FinishReason::kStop);
  }
  // Every kept token was stepped, but the last one of a reply cut by
  // max_tokens (Generate's contract).
  const bool all_stepped = generated->stopped || generated->interrupted;
  for (size_t i = 0; i < generated->ids.size(); ++i) {
    if (all_stepped || i + 1 < generated->ids.size()) cache_.Fed(generated->ids[i]);
  }
  FinishReason reason = FinishReason::kStop;
  if (job.cancelled->load()) {
    reason = FinishReason::kCancelled;
  } else if (!generated->stopped && !stop_string) {
    reason = FinishReason::kLength;
  }
  done(absl::OkStatus(), reason);
}

}  // namespace warp::computed::serve
