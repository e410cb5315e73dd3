#pragma once

// The body of Anthropic's POST /v1/messages (and /v1/messages/count_tokens),
// checked field by field as the Messages API documents it, then said as the
// chat request the rest of the server serves (CompletionRequest):
//   - `system` and each message's content blocks become OpenAI-shaped
//     messages, what the chat templates take: text blocks joined by "\n",
//     an assistant's tool_use blocks its tool_calls (input as the arguments'
//     JSON), thinking blocks its reasoning_content, each tool_result block a
//     "tool" message with its tool_call_id;
//   - tools ({name, description, input_schema}) become functions;
//   - thinking {type: enabled|disabled} becomes the templates' enable_thinking;
//   - stop_sequences become stop strings;
//   - tool_choice any becomes "required", tool a named function
//     (reply_grammar.h), disable_parallel_tool_use parallel_tool_calls false.
// What WARP does not do is refused by name: image and document blocks, server
// tools, unknown fields.

#include <string_view>
#include <variant>

#include "computed/serve/api_error.h"
#include "computed/serve/completion_request.h"

namespace warp::computed::serve {

// `count_tokens`: the body of /v1/messages/count_tokens (no max_tokens, no
// sampling, no stream). The error names the field ("messages[1].content[0]").
std::variant<CompletionRequest, ApiError> ParseMessagesRequest(std::string_view body,
                                                               bool count_tokens);

}  // namespace warp::computed::serve
