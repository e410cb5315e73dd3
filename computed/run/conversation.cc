#include "computed/run/conversation.h"

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/status.h"

namespace warp::computed {

Conversation::Conversation(Session& session, const ModelText& text,
                           nlohmann::ordered_json template_context, DiskPromptCache* disk)
    : cache_(session, /*sequence=*/0, disk), text_(text), template_context_(std::move(template_context)) {
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
  return cache_.BringUpTo(ids, reserve, "the conversation");
}

}  // namespace warp::computed
