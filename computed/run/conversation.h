#pragma once

// A chat whose history stays in the session's KV cache. Each turn renders the
// whole conversation with the chat template, tokenizes it and hands it to a
// PromptCache, which prefills only what the KV cache does not hold — so a turn
// costs its new tokens, and a template that re-renders earlier turns
// differently (e.g. dropping reasoning) still gets exactly its own prompt.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "computed/run/model_text.h"
#include "computed/run/prompt_cache.h"
#include "computed/run/session.h"

namespace warp::computed {

// Thread-compatible.
class Conversation {
 public:
  // `text` must have a chat template; both must outlive the conversation.
  // `template_context` (tools, template kwargs) is passed to every render.
  // `disk` (may be null; it must outlive the conversation): the prompt cache
  // on disk its turns load from and save to.
  Conversation(Session& session, const ModelText& text,
               nlohmann::ordered_json template_context = nlohmann::ordered_json::object(),
               DiskPromptCache* disk = nullptr);

  void Add(std::string role, std::string content);
  // Takes back the last message (a turn that was refused before any of it
  // reached the KV cache).
  void RemoveLast();

  // Renders the history plus the assistant cue and brings the KV cache up to
  // it; returns the logits of the last position. `reserve` positions must
  // remain free for the reply: ResourceExhausted, with the KV cache as it
  // was, when they do not.
  absl::StatusOr<std::vector<float>> Prepare(uint32_t reserve);

  // A reply token now in the KV cache (fed by the decode loop).
  void Fed(int32_t id) { cache_.Fed(id); }
  // After a reply: its state goes to the disk cache, for the next turn.
  void SaveToDisk() { cache_.SaveToDisk(); }

  uint32_t reused_tokens() const { return cache_.reused_tokens(); }  // of the last Prepare
  uint32_t new_tokens() const { return cache_.new_tokens(); }
  uint32_t disk_tokens() const { return cache_.disk_tokens(); }

 private:
  PromptCache cache_;
  const ModelText& text_;
  const nlohmann::ordered_json template_context_;
  nlohmann::ordered_json messages_ = nlohmann::ordered_json::array();
};

}  // namespace warp::computed
