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
      max_queued_(max_queued),
      context_(session_->max_positions()),
      trained_positions_(session_->trained_positions()) {
  for (uint32_t sequence = 0; sequence < session_->sequences(); ++sequence) {
    slots_.emplace_back(*session_, sequence);
  }
  running_cancel_.resize(slots_.size());
  stats_.context = context_ * session_->sequences();
  stats_.sequences = session_->sequences();
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
    for (const auto& cancel : running_cancel_) {
      if (cancel) cancel->store(true);  // ends before its next token
    }
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
    // Requests about to take a free sequence are not waiting.
    const size_t free = slots_.size() - stats_.running;
    if (queue_.size() >= max_queued_ + free) {
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

bool EngineWorker::AnyRunning() const {
  for (const Slot& slot : slots_) {
    if (slot.running) return true;
  }
  return false;
}

EngineWorker::Slot* EngineWorker::PickSlot(const std::vector<int32_t>& prompt) {
  Slot* best = nullptr;
  size_t best_shared = 0;
  for (Slot& slot : slots_) {
    if (slot.running) continue;
    const size_t shared = slot.cache.SharedPrefix(prompt);
    if (best == nullptr || shared > best_shared ||
        (shared == best_shared && slot.last_used < best->last_used)) {
      best = &slot;
      best_shared = shared;
    }
  }
  return best;
}

void EngineWorker::Loop() {
  while (true) {
    std::optional<Queued> next;
    Slot* slot = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty() || AnyRunning(); });
      if (queue_.empty() && !AnyRunning()) return;  // stopping
      // One request starts per iteration, between decode steps of the others.
      if (!queue_.empty() && (slot = PickSlot(queue_.front().job.prompt)) != nullptr) {
        next = std::move(queue_.front());
        queue_.pop_front();
        stats_.queued = queue_.size();
        running_cancel_[slot->cache.sequence()] = next->job.cancelled;
        ++stats_.running;
      }
    }
    ++steps_;
    if (next) Start(*std::move(next), *slot);
    if (AnyRunning()) DecodeStep();
    std::lock_guard<std::mutex> lock(mutex_);
    PublishEngineStats();
  }
}

void EngineWorker::PublishEngineStats() {
  stats_.kv_position = 0;
  for (uint32_t sequence = 0; sequence < session_->sequences(); ++sequence) {
    stats_.kv_position += session_->position(sequence);
  }
  stats_.forward = session_->transformer().stats();
  stats_.lookahead = session_->transformer().lookahead_stats();
}

void EngineWorker::End(Slot& slot, const absl::Status& status, FinishReason reason) {
  Running& run = *slot.running;
  GenerationFigures& figures = run.figures;
  if (figures.completion_tokens > 0) figures.decode_seconds = SecondsSince(run.decode_start);
  // A failed forward leaves the KV cache unknown; a refused prompt left it as it was.
  if (!status.ok() && !absl::IsResourceExhausted(status)) slot.cache.Clear();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_cancel_[slot.cache.sequence()].reset();
    --stats_.running;
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
    // A remote store's counters may cost a call: read per request, not per step.
    stats_.source_counters = session_->SourceCounters();
  }
  GenerationJob job = std::move(run.job);
  slot.running.reset();
  slot.last_used = steps_;
  job.on_done(status, reason, figures);
}

void EngineWorker::Start(Queued queued, Slot& slot) {
  const GenerationFigures figures{.prompt_tokens = static_cast<uint32_t>(queued.job.prompt.size()),
                                  .queue_seconds = SecondsSince(queued.since)};
  const Sampler sampler(queued.job.sampling);
  slot.running.emplace(
      Running{.job = std::move(queued.job), .figures = figures, .sampler = sampler});
  Running& run = *slot.running;
  if (run.job.cancelled->load()) return End(slot, absl::OkStatus(), FinishReason::kCancelled);
  const ForwardStats before = session_->transformer().stats();
  const auto prefill_start = Clock::now();
  absl::StatusOr<std::vector<float>> logits =
      slot.cache.BringUpTo(run.job.prompt, run.job.max_tokens, "the prompt");
  run.figures.prefill_seconds = SecondsSince(prefill_start);
  run.figures.reused_tokens = slot.cache.reused_tokens();
  run.figures.forward += ForwardStats::Delta(session_->transformer().stats(), before);
  if (!logits.ok()) return End(slot, logits.status(), FinishReason::kStop);
  run.logits = *std::move(logits);
  if (run.job.on_prefilled) run.job.on_prefilled(run.figures);
  run.decode_start = Clock::now();
}

void EngineWorker::DecodeStep() {
  // As Generate (computed/run/generation.h): before each token a cancel or a
  // stop string ends the reply; a stop id is neither kept nor stepped; the
  // token that reaches max_tokens is kept but not stepped.
  std::vector<Session::SequenceToken> batch;
  std::vector<Slot*> stepped;
  for (Slot& slot : slots_) {
    if (!slot.running) continue;
    Running& run = *slot.running;
    if (run.job.cancelled->load()) {
      End(slot, absl::OkStatus(), FinishReason::kCancelled);
      continue;
    }
    const int32_t next = run.sampler.Sample(run.logits);
    if (run.job.stop_ids.contains(next)) {
      End(slot, absl::OkStatus(), FinishReason::kStop);
      continue;
    }
    ++run.figures.completion_tokens;
    run.stop_string = !run.job.on_token(next);
    if (run.job.cancelled->load()) {
      End(slot, absl::OkStatus(), FinishReason::kCancelled);
    } else if (run.stop_string) {
      End(slot, absl::OkStatus(), FinishReason::kStop);
    } else if (run.figures.completion_tokens == run.job.max_tokens) {
      End(slot, absl::OkStatus(), FinishReason::kLength);
    } else {
      batch.push_back({.sequence = slot.cache.sequence(), .token = next});
      stepped.push_back(&slot);
    }
  }
  if (batch.empty()) return;
  const ForwardStats before = session_->transformer().stats();
  absl::StatusOr<std::vector<std::vector<float>>> logits = session_->StepBatch(batch);
  const ForwardStats step = ForwardStats::Delta(session_->transformer().stats(), before);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.decode_steps;
    stats_.decode_step_requests += batch.size();
  }
  for (size_t i = 0; i < stepped.size(); ++i) {
    Running& run = *stepped[i]->running;
    run.figures.forward += step;
    run.figures.most_batched =
        std::max(run.figures.most_batched, static_cast<uint32_t>(batch.size()));
    if (!logits.ok()) {
      End(*stepped[i], logits.status(), FinishReason::kStop);
      continue;
    }
    stepped[i]->cache.Fed(batch[i].token);
    run.logits = std::move((*logits)[i]);
  }
}

}  // namespace warp::computed::serve
