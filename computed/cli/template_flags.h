#pragma once

// The chat-template options shared by `computed template`, `run` and `chat`,
// parsed in one place so the three commands render a conversation the same way:
//
//   --chat-template FILE    a .jinja file, or a tokenizer_config.json (its
//                           chat_template and special tokens), rendered instead
//                           of the model's own template, or with no model at all
//   --tools FILE.json       a JSON array of OpenAI-style tool definitions,
//                           passed to the template as `tools`
//   --template-kwargs JSON  a JSON object whose keys become template variables,
//                           e.g. {"enable_thinking": false}
//
// As transformers' apply_chat_template(messages, tools=..., **kwargs): the
// kwargs are laid over the special-token variables (bos_token, ...), so they
// may replace them, but not messages, tools, documents or add_generation_prompt.

#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "computed/run/model_text.h"
#include "nlohmann/json.hpp"

namespace warp::computed {

struct TemplateFlags {
  std::string chat_template;    // --chat-template FILE
  std::string tools;            // --tools FILE.json
  std::string template_kwargs;  // --template-kwargs JSON (the text itself)

  bool given() const {
    return !chat_template.empty() || !tools.empty() || !template_kwargs.empty();
  }
};

void AddTemplateFlags(CLI::App* cmd, TemplateFlags& flags);

// Applies the flags to `text` before rendering: --chat-template replaces
// text.chat_template (a .jinja file sees text.special_tokens), and the
// returned object is the extra render context ({"tools": [...]} and the
// --template-kwargs) for ChatTemplate::RenderOrdered. Errors name the flag and file:
// a missing or unparsable file, tools that are not a JSON array of objects,
// kwargs that are not a JSON object or set a reserved variable, and
// --tools/--template-kwargs with no chat template to pass them to.
absl::StatusOr<nlohmann::ordered_json> ApplyTemplateFlags(const TemplateFlags& flags,
                                                          ModelText& text);

}  // namespace warp::computed
