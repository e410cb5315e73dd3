#include "computed/serve/engine_worker.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"

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

EngineWorker::EngineWorker(std::unique_ptr<Session> session, size_t max_queued,
                           DiskPromptCache* disk)
    : session_(std::move(session)),
      disk_(disk),
      max_queued_(max_queued),
      context_(session_->max_positions()),
      trained_positions_(session_->trained_positions()) {
  for (uint32_t sequence = 0; sequence < session_->sequences(); ++sequence) {
    slots_.emplace_back(*session_, sequence, disk);
  }
  running_cancel_.resize(slots_.size());
  stats_.context = context_ * session_->sequences();
  stats_.sequences = session_->sequences();
  stats_.source_counters = session_->SourceCounters();
  thread_ = std::thread([this] { Loop(); });
}

EngineWorker::~EngineWorker() {
  Shutdown();
  if (thread_.joinable()) thread_.join();
}

void EngineWorker::Shutdown() {
  std::deque<Queued> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    dropped.swap(queue_);
    stats_.queued = 0;
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

absl::Status EngineWorker::Finish() {
  // The worker may still be in a pass whose routes --learn merges.
  Shutdown();
  if (thread_.joinable()) thread_.join();
  return session_->Finish();
}

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
    if (AnyRunning()) Step();
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
  if (disk_ != nullptr) stats_.prompt_cache = disk_->stats();
}

void EngineWorker::End(Slot& slot, const absl::Status& status, FinishReason reason) {
  Running& run = *slot.running;
  GenerationFigures& figures = run.figures;
  if (figures.completion_tokens > 0) figures.decode_seconds = SecondsSince(run.decode_start);
  // A failed forward leaves the KV cache unknown; a refused prompt left it as it was.
  if (!status.ok() && !absl::IsResourceExhausted(status)) slot.cache.Clear();
  // The reply's end: the prompt and the reply, what an agent's next turn starts with.
  if (status.ok() && figures.completion_tokens > 0) slot.cache.SaveToDisk();
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
      stats_.time_per_output_token.Observe(figures.decode_seconds /
                                           (figures.completion_tokens - 1));
    }
    if (figures.completion_tokens > 0) {
      stats_.time_to_first_token.Observe(figures.queue_seconds + figures.prefill_seconds);
    }
    stats_.queue_wait.Observe(figures.queue_seconds);
    // A remote store's counters may cost a call: read per request, not per step.
    stats_.source_counters = session_->SourceCounters();
    stats_.governor_shrinks = session_->governor_shrinks();
    stats_.governor_grows = session_->governor_grows();
    if (!session_->usage().entries.empty()) {
      stats_.usage = std::make_shared<const UsageTable>(session_->usage());
    }
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
  run.prefill_start = Clock::now();
  absl::StatusOr<size_t> kept = slot.cache.Keep(run.job.prompt, run.job.max_tokens, "the prompt");
  if (!kept.ok()) return End(slot, kept.status(), FinishReason::kStop);
  run.figures.reused_tokens = static_cast<uint32_t>(*kept);
  run.pending.assign(run.job.prompt.begin() + *kept, run.job.prompt.end());
}

std::optional<Transformer::SequenceChunk> EngineWorker::NextChunk(Slot& slot, int32_t& sampled) {
  Running& run = *slot.running;
  const uint32_t sequence = slot.cache.sequence();
  if (run.job.cancelled->load()) {
    End(slot, absl::OkStatus(), FinishReason::kCancelled);
    return std::nullopt;
  }
  if (!run.pending.empty()) {
    // As PromptCache::BringUpTo: the last prompt token alone, after a
    // checkpoint (a recurrent layer can return only there).
    std::span<const int32_t> pending = run.pending;
    if (pending.size() == 1) {
      session_->Checkpoint(sequence);
      return Transformer::SequenceChunk{.sequence = sequence, .tokens = pending};
    }
    size_t n = pending.size() - 1;
    if (session_->prefill_chunk() > 0) n = std::min<size_t>(n, session_->prefill_chunk());
    // Never the prompt's end (its last token is held back): no logits.
    return Transformer::SequenceChunk{
        .sequence = sequence, .tokens = pending.first(n), .logits = Transformer::Logits::kNone};
  }
  // As Generate (computed/run/generation.h): a stop id is neither kept nor
  // stepped; a stop string, a cancel or max_tokens ends the reply after the
  // token, unstepped.
  sampled = run.sampler.Sample(run.logits);
  constrain::TokenConstraint* constraint = run.job.constraint.get();
  if (constraint != nullptr && !constraint->Allows(sampled)) {
    // Only then the mask (token_constraint.h): an allowed sample stays.
    if (!constraint->Mask(run.logits)) {
      const absl::Status why = constraint->Refusal();
      End(slot,
          absl::Status(why.code(), absl::StrCat(why.message(), " (after ",
                                                run.figures.completion_tokens, " tokens)")),
          FinishReason::kStop);
      return std::nullopt;
    }
    sampled = run.sampler.Sample(run.logits);
  }
  if (run.job.stop_ids.contains(sampled)) {
    End(slot, absl::OkStatus(), FinishReason::kStop);
    return std::nullopt;
  }
  if (constraint != nullptr) {
    if (absl::Status accepted = constraint->Accept(sampled); !accepted.ok()) {
      End(slot, accepted, FinishReason::kStop);
      return std::nullopt;
    }
  }
  ++run.figures.completion_tokens;
  const bool stop_string = !run.job.on_token(sampled);
  // A grammar matched in full with no end token to sample (ignore_eos) ends here.
  const bool grammar_done =
      constraint != nullptr && constraint->finished() && run.job.stop_ids.empty();
  if (run.job.cancelled->load()) {
    End(slot, absl::OkStatus(), FinishReason::kCancelled);
  } else if (stop_string || grammar_done) {
    End(slot, absl::OkStatus(), FinishReason::kStop);
  } else if (run.figures.completion_tokens == run.job.max_tokens) {
    End(slot, absl::OkStatus(), FinishReason::kLength);
  } else {
    return Transformer::SequenceChunk{.sequence = sequence, .tokens = {&sampled, 1}};
  }
  return std::nullopt;
}

void EngineWorker::Step() {
  std::vector<Transformer::SequenceChunk> batch;
  std::vector<Slot*> stepped;
  std::vector<int32_t> sampled(slots_.size());  // each decoding slot's token
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (!slots_[i].running) continue;
    std::optional<Transformer::SequenceChunk> chunk = NextChunk(slots_[i], sampled[i]);
    if (!chunk) continue;
    batch.push_back(*chunk);
    stepped.push_back(&slots_[i]);
  }
  if (batch.empty()) return;
  const ForwardStats before = session_->transformer().stats();
  absl::StatusOr<std::vector<std::vector<float>>> logits = session_->ForwardBatch(batch);
  const ForwardStats step = ForwardStats::Delta(session_->transformer().stats(), before);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.steps;
    stats_.step_requests += batch.size();
  }
  for (size_t i = 0; i < stepped.size(); ++i) {
    Slot& slot = *stepped[i];
    Running& run = *slot.running;
    run.figures.forward += step;
    run.figures.most_batched =
        std::max(run.figures.most_batched, static_cast<uint32_t>(batch.size()));
    if (!logits.ok()) {
      End(slot, logits.status(), FinishReason::kStop);
      continue;
    }
    for (int32_t id : batch[i].tokens) slot.cache.Fed(id);
    run.logits = std::move((*logits)[i]);
    if (run.pending.empty()) continue;  // decoding
    run.pending.erase(run.pending.begin(), run.pending.begin() + batch[i].tokens.size());
    // The prompt's end, and with --prefill-chunk each chunk's: a prefix the
    // next prompt (or this one, after a restart) may start with. The last
    // token goes alone after a checkpoint; the chunk before it is no boundary.
    if (run.pending.empty() || (session_->prefill_chunk() > 0 && run.pending.size() > 1)) {
      slot.cache.SaveToDisk();
    }
    if (!run.pending.empty()) continue;
    run.figures.prefill_seconds = SecondsSince(run.prefill_start);
    if (run.job.on_prefilled) run.job.on_prefilled(run.figures);
    run.decode_start = Clock::now();
  }
}

}  // namespace warp::computed::serve
