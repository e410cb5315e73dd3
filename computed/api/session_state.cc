#include "computed/api/session_state.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "computed/run/generation.h"
#include "computed/text/tokenizer.h"

namespace warp::api {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Errors the engine reports before it touches the KV cache; any other one
// may come from mid-forward and leaves the cache unknown.
bool LeavesStateIntact(const absl::Status& status) {
  return absl::IsOutOfRange(status) || absl::IsResourceExhausted(status) ||
         absl::IsInvalidArgument(status);
}

}  // namespace

absl::StatusOr<std::unique_ptr<SessionState>> SessionState::Open(
    std::shared_ptr<const ModelState> model) {
  WARP_ASSIGN_OR_RETURN(std::unique_ptr<computed::Session> session,
                        computed::Session::Open(model->session_options()));
  WARP_ASSIGN_OR_RETURN(std::shared_ptr<computed::DiskPromptCache> disk,
                        model->PromptCache(session->state_key()));
  auto state =
      std::unique_ptr<SessionState>(new SessionState(std::move(model), std::move(session)));
  state->disk_ = std::move(disk);
  return state;
}

absl::Status SessionState::CheckUsable() const {
  if (broken_.ok()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("an earlier error left the session's context unknown (",
                   std::string(broken_.message()), "); call warp_session_reset"));
}

absl::Status SessionState::Prefill(std::span<const int32_t> ids) {
  WARP_RETURN_IF_ERROR(CheckUsable());
  if (ids.empty()) return absl::InvalidArgumentError("num_ids is 0: nothing to prefill");
  const uint32_t vocab = model_->vocab_size();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || static_cast<uint32_t>(ids[i]) >= vocab) {
      return absl::OutOfRangeError(absl::StrCat("ids[", i, "]: token ", ids[i],
                                                " is outside the model's vocabulary of ", vocab));
    }
  }
  const uint64_t needed = uint64_t{session_->position()} + unfed_.size() + ids.size();
  if (needed > session_->max_positions()) {
    return absl::OutOfRangeError(
        absl::StrCat("the context holds ", session_->position() + unfed_.size(), " of its ",
                     session_->max_positions(), " positions; ", ids.size(),
                     " more tokens do not fit (options.context_positions)"));
  }
  if (disk_ != nullptr && history_.empty() && unfed_.empty()) {
    ids = LoadFromDisk(ids);
    if (ids.empty()) return absl::OkStatus();  // all of it loaded; generate recomputes the logits
  }
  WARP_RETURN_IF_ERROR(Feed(ids));
  SaveToDisk();
  return absl::OkStatus();
}

std::span<const int32_t> SessionState::LoadFromDisk(std::span<const int32_t> ids) {
  std::optional<computed::DiskPromptCache::Hit> hit = disk_->Lookup(ids, 0);
  if (!hit) return ids;
  if (absl::Status loaded = session_->transformer().LoadSequence(hit->state); !loaded.ok()) {
    disk_->Refuse(hit->ids, loaded);  // logged and removed; the session was left empty
    return ids;
  }
  history_ = std::move(hit->ids);
  logits_.clear();
  disk_tokens_ += history_.size();
  return ids.subspan(history_.size());
}

void SessionState::SaveToDisk() {
  if (disk_ != nullptr && !history_.empty() && session_->position() == history_.size() &&
      !disk_->Holds(history_)) {
    disk_->Store(history_, session_->transformer().SaveSequence());
  }
}

absl::Status SessionState::Feed(std::span<const int32_t> ids, bool count) {
  std::vector<int32_t> tokens = unfed_;
  tokens.insert(tokens.end(), ids.begin(), ids.end());
  const Clock::time_point start = Clock::now();
  absl::StatusOr<std::vector<float>> logits = session_->PrefillLast(tokens);
  if (count) prefill_seconds_ += SecondsSince(start);
  if (!logits.ok()) {
    if (!LeavesStateIntact(logits.status())) broken_ = logits.status();
    return logits.status();
  }
  if (count) prefill_tokens_ += tokens.size();
  history_.insert(history_.end(), tokens.begin(), tokens.end());
  logits_ = *std::move(logits);
  unfed_.clear();
  return absl::OkStatus();
}

absl::StatusOr<GenerateOutcome> SessionState::Generate(const GenerateRequest& request,
                                                       const TokenSink& sink) {
  WARP_RETURN_IF_ERROR(CheckUsable());
  cancelled_.store(false);
  if (!unfed_.empty()) {
    WARP_RETURN_IF_ERROR(Feed({}, /*count=*/false));
  } else if (logits_.empty()) {
    WARP_RETURN_IF_ERROR(RestoreLogits());
  }
  // Each kept token but the last is run, and the last is run by the next call.
  const uint32_t room = session_->max_positions() - session_->position();
  const uint32_t max_tokens = std::min(request.max_tokens, room);
  if (max_tokens == 0) {
    return GenerateOutcome{.stop_reason =
                               request.max_tokens == 0 ? WARP_STOP_LENGTH : WARP_STOP_CONTEXT_FULL};
  }
  WARP_ASSIGN_OR_RETURN(GenerateOutcome outcome, Decode(request, max_tokens, sink));
  SaveToDisk();  // the prompt and the reply: what a next turn starts with
  if (outcome.stop_reason == WARP_STOP_LENGTH && max_tokens < request.max_tokens) {
    outcome.stop_reason = WARP_STOP_CONTEXT_FULL;
  }
  return outcome;
}

absl::Status SessionState::RestoreLogits() {
  if (history_.empty()) {
    return absl::FailedPreconditionError("nothing to generate from: prefill a prompt first");
  }
  // A recurrent layer may only go back to a checkpoint: run from there.
  const uint32_t from = session_->Rewind(static_cast<uint32_t>(history_.size() - 1));
  std::vector<int32_t> tokens(history_.begin() + from, history_.end());
  history_.resize(from);
  return Feed(tokens, /*count=*/false);
}

absl::StatusOr<GenerateOutcome> SessionState::Decode(const GenerateRequest& request,
                                                     uint32_t max_tokens, const TokenSink& sink) {
  const computed::ModelText* text = model_->text();
  computed::GenerationLimits limits{.max_tokens = max_tokens, .interrupted = &cancelled_};
  if (text != nullptr && !request.ignore_eos) limits.stop_ids = text->stop_ids;
  std::optional<text::StreamingDecoder> decoder;
  if (text != nullptr) decoder.emplace(*text->tokenizer, /*skip_special_tokens=*/true);
  computed::Sampler sampler(request.sampling);
  std::vector<int32_t> ids;   // kept: each one run but the last
  bool refused = false;       // on_token failed: the last id was kept but not run
  bool sink_stopped = false;  // ... because the sink asked
  auto on_token = [&](int32_t id) -> absl::Status {
    ids.push_back(id);
    std::string piece;
    if (decoder) {
      absl::StatusOr<std::string> decoded = decoder->Push(id);
      if (!decoded.ok()) {
        refused = true;
        return decoded.status();
      }
      piece = *std::move(decoded);
    }
    if (sink(id, piece)) {
      refused = sink_stopped = true;
      return absl::CancelledError("stopped by the token callback");
    }
    return absl::OkStatus();
  };
  const Clock::time_point start = Clock::now();
  absl::StatusOr<computed::Generated> generated =
      computed::Generate(*session_, sampler, logits_, limits, on_token);
  decode_seconds_ += SecondsSince(start);
  const auto kept = static_cast<uint32_t>(ids.size());
  decode_tokens_ += kept;
  if (decoder) {
    const std::string rest = decoder->Flush();
    if (!rest.empty()) sink(WARP_NO_TOKEN, rest);
  }
  if (kept > 0) logits_.clear();  // a step ran (or its token waits in unfed_)
  if (!generated.ok()) {
    if (!refused) {
      broken_ = generated.status();
      return broken_;
    }
    history_.insert(history_.end(), ids.begin(), ids.end() - 1);
    unfed_ = {ids.back()};
    if (!sink_stopped) return generated.status();
    return GenerateOutcome{.num_tokens = kept, .stop_reason = WARP_STOP_CALLBACK};
  }
  GenerateOutcome outcome{.num_tokens = kept, .stop_reason = WARP_STOP_LENGTH};
  history_.insert(history_.end(), ids.begin(), ids.end());
  if (generated->stopped) {
    outcome.stop_reason = WARP_STOP_EOS;
  } else if (generated->interrupted) {
    outcome.stop_reason = WARP_STOP_CANCELLED;
  } else {  // ended by length: the last token was not run
    history_.pop_back();
    unfed_ = {ids.back()};
  }
  return outcome;
}

absl::Status SessionState::Reset() {
  session_->Rewind(0);
  history_.clear();
  unfed_.clear();
  logits_.clear();
  broken_ = absl::OkStatus();
  return absl::OkStatus();
}

warp_stats SessionState::Stats() const {
  const computed::ForwardStats& forward = session_->transformer().stats();
  warp_stats stats{};
  stats.struct_size = sizeof(warp_stats);
  stats.position = session_->position();
  stats.max_positions = session_->max_positions();
  stats.budget_bytes = session_->budget().budget_bytes;
  stats.cache_bytes = session_->budget().cache_bytes;
  stats.prefill_tokens = prefill_tokens_;
  stats.prefill_seconds = prefill_seconds_;
  stats.decode_tokens = decode_tokens_;
  stats.decode_seconds = decode_seconds_;
  stats.expert_hits = forward.CountOf(Served::kCache);
  stats.expert_misses = forward.CountOf(Served::kDisk);
  stats.lookahead_hits = forward.CountOf(Served::kLookahead);
  stats.prompt_cache_tokens = disk_tokens_;
  stats.expert_miss_bytes = forward.BytesOf(Served::kDisk);
  return stats;
}

}  // namespace warp::api
