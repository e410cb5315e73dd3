#pragma once

// CompletionRequest: the body of POST /v1/chat/completions or
// /v1/completions, checked field by field as the OpenAI API documents them.
// What WARP does not do (n > 1, logprobs, logit_bias, penalties) is refused
// by name rather than silently ignored; fields that change nothing here
// (user, metadata, store) pass.
// Two extensions other servers share: chat_template_kwargs and ignore_eos.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "computed/engine/sampler.h"
#include "computed/serve/api_error.h"
#include "nlohmann/json.hpp"

namespace warp::computed::serve {

enum class Endpoint { kChat, kText };

struct CompletionRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;                   // echoed back; any name serves the one model
  nlohmann::ordered_json messages;     // kChat: [{"role", "content", ...}], as sent
  std::string prompt;                  // kText
  nlohmann::ordered_json tools;        // kChat: null or the array, passed to the template
  nlohmann::ordered_json tool_choice;  // null, "none", "auto", "required" or a function
  bool parallel_tool_calls = true;     // a forced reply may call more than one tool
  // The reply's form (reply_grammar.h): null, {"type": "json_object"} or
  // {"type": "json_schema", "schema": S}; from output_format_field.
  nlohmann::ordered_json output_format;
  std::string output_format_field = "response_format";
  nlohmann::ordered_json template_kwargs =
      nlohmann::ordered_json::object();  // chat_template_kwargs
  std::optional<uint32_t>
      max_tokens;                 // max_tokens / max_completion_tokens; unset: the context's rest
  SamplerOptions sampling;        // OpenAI's defaults: temperature 1, top_p 1
  bool seeded = false;            // a seed was given (else the server draws one)
  std::vector<std::string> stop;  // up to 4 strings that end the reply, not included
  bool ignore_eos = false;        // an extension (vLLM, llama-server): generate past end-of-text
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
};

// The request, or the 400 naming the field at fault ("messages[2].role").
std::variant<CompletionRequest, ApiError> ParseCompletionRequest(std::string_view body,
                                                                 Endpoint endpoint);

}  // namespace warp::computed::serve
