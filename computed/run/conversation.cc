#include "computed/run/conversation.h"

#include <algorithm>
#include <span>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/status.h"

namespace warp::computed {

Conversation::Conversation(Session& session, const ModelText& text,
                           nlohmann::ordered_json template_context)
    : session_(session), text_(text), template_context_(std::move(template_context)) {
  WARP_CHECK(text_.chat_template.has_value());
}

void Conversation::Add(std::string role, std::string content) {
  messages_.push_back({{"role", std::move(role)}, {"content", std::move(content)}});
}

void Conversation::RemoveLast() {
  if (!messages_.empty()) messages_.erase(messages_.end() - 1);
}

absl::StatusOr<std::vector<float>> Conversation::Prepare(uint32_t reserve) {
  WARP_ASSIGN_OR_RETURN(std::string prompt,
                        text_.chat_template->RenderOrdered(
                            messages_, /*add_generation_prompt=*/true, template_context_));
  WARP_ASSIGN_OR_RETURN(std::vector<int32_t> ids, text_.tokenizer->Encode(prompt));
  if (ids.empty()) return absl::InvalidArgumentError("the chat template rendered an empty prompt");
  if (session_.trained_positions() > 0 && ids.size() > session_.trained_positions()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the conversation needs ", ids.size(), " positions; the model was trained on at most ",
        session_.trained_positions(), " (max_position_embeddings)"));
  }
  if (ids.size() + reserve > session_.max_positions()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the conversation needs ", ids.size(), " positions plus ", reserve,
        " for the reply; the context holds ", session_.max_positions(), " (--context)"));
  }
  // Keep at least the last prompt token to recompute: its logits start the reply.
  const size_t limit = std::min(in_cache_.size(), ids.size() - 1);
  size_t shared = 0;
  while (shared < limit && in_cache_[shared] == ids[shared]) ++shared;
  // A sliding-window layer may no longer hold what precedes `shared`: it says
  // where it can continue from, and that much more is prefilled.
  shared = session_.Rewind(static_cast<uint32_t>(shared));
  in_cache_.assign(ids.begin(), ids.end());
  reused_ = static_cast<uint32_t>(shared);
  new_ = static_cast<uint32_t>(ids.size() - shared);
  // A recurrent layer can only return to a checkpoint: take one before the
  // last prompt token, which the next turn keeps (or recomputes) at the least.
  std::span<const int32_t> rest = std::span(ids).subspan(shared);
  if (rest.size() > 1) {
    WARP_RETURN_IF_ERROR(session_.PrefillLast(rest.first(rest.size() - 1)).status());
    rest = rest.last(1);
  }
  session_.Checkpoint();
  return session_.PrefillLast(rest);
}

}  // namespace warp::computed
