#pragma once

// The chat template of a model release and the special-token strings it
// references, rendered as transformers(.js) apply_chat_template does with
// tokenize=False. The render context is:
//   messages               the conversation, [{"role": ..., "content": ...}, ...]
//   add_generation_prompt  bool
//   tools, documents       null (no tool or RAG documents passed)
//   bos_token, eos_token, unk_token, sep_token, pad_token, cls_token,
//   mask_token             those the release defines (strings), and
//   additional_special_tokens  a list of strings, as transformers'
//                          special_tokens_map passes them
//   + any extra variables the caller passes (enable_thinking, date_string...)
//
// Immutable after Load; Render is safe from any number of threads.

#include <filesystem>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "computed/chat/jinja_template.h"
#include "nlohmann/json.hpp"

namespace warp::chat {

class ChatTemplate {
 public:
  // Reads tokenizer_config.json: "chat_template" may be a string or a list of
  // {"name", "template"} (the "default" one is used). A chat_template.jinja
  // next to the file takes precedence, as in transformers. bos_token/eos_token/... may
  // be strings or {"content": ...} objects. NotFound (naming the file) when
  // there is no chat template.
  static absl::StatusOr<ChatTemplate> Load(const std::filesystem::path& tokenizer_config_json);

  // From a standalone template (a .jinja file) plus the special tokens, e.g.
  // {"bos_token": "<s>", "eos_token": {"content": "</s>"}}, for containers.
  static absl::StatusOr<ChatTemplate> FromSource(std::string source, std::string origin,
                                                 nlohmann::json special_tokens);

  // The special-token variables of a tokenizer_config.json object `config`:
  // {"bos_token": "<s>", "additional_special_tokens": ["<a>"], ...}, with
  // AddedToken objects reduced to their content and unset (null) ones left
  // out. InvalidArgument naming `origin` and the key for any other shape.
  static absl::StatusOr<nlohmann::json> SpecialTokensOf(const nlohmann::json& config,
                                                        std::string_view origin);

  // messages: [{"role": ..., "content": ...}, ...].
  absl::StatusOr<std::string> Render(const nlohmann::json& messages,
                                     bool add_generation_prompt) const;
  // Same, with `extra_context` (an object) merged over the default context.
  absl::StatusOr<std::string> Render(const nlohmann::json& messages, bool add_generation_prompt,
                                     const nlohmann::json& extra_context) const;

  // Same, keeping the key order of the objects in `messages` and
  // `extra_context`, as transformers renders the dicts it is given: a tool
  // definition printed with tojson keeps its file's order (Render's
  // nlohmann::json sorts the keys).
  absl::StatusOr<std::string> RenderOrdered(const nlohmann::ordered_json& messages,
                                            bool add_generation_prompt,
                                            const nlohmann::ordered_json& extra_context) const;

  // The context Render passes to the template (see the file comment).
  nlohmann::json MakeContext(const nlohmann::json& messages, bool add_generation_prompt,
                             const nlohmann::json& extra_context = nlohmann::json::object()) const;

  const std::string& source() const { return template_.source(); }
  // {"bos_token": "<s>", ...}: only the tokens the release defines.
  const nlohmann::json& special_tokens() const { return special_tokens_; }
  const JinjaTemplate& jinja() const { return template_; }

 private:
  ChatTemplate(JinjaTemplate jinja, nlohmann::json special_tokens)
      : template_(std::move(jinja)), special_tokens_(std::move(special_tokens)) {}

  JinjaTemplate template_;
  nlohmann::json special_tokens_;
};

}  // namespace warp::chat
