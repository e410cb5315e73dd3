#pragma once

// The body of OpenAI's POST /v1/responses, checked field by field as the
// Responses API documents it, then said as the chat request the rest of the
// server serves (CompletionRequest):
//   - `previous_response_id` puts that response's conversation (ResponseStore)
//     first; an id the server does not hold is refused by name;
//   - `instructions` becomes a system message (not carried to the next turn,
//     as OpenAI's is not);
//   - `input` (a string, or items: messages with text content,
//     `function_call`, `function_call_output`) becomes OpenAI-shaped chat
//     messages: consecutive function calls an assistant's tool_calls, each
//     output a "tool" message, refused when no earlier call has its call_id;
//     reasoning items are dropped (the templates drop past reasoning too);
//   - function tools become chat tools, `reasoning.effort` the templates'
//     reasoning_effort, `max_output_tokens` max_tokens;
//   - tool_choice and text.format (json_schema, json_object) constrain the
//     reply as the chat API's tool_choice and response_format do.
// What WARP does not do is refused by name: images and files, built-in tools,
// background, unknown fields.

#include <string>
#include <string_view>
#include <variant>

#include "computed/serve/api_error.h"
#include "computed/serve/completion_request.h"
#include "computed/serve/response_store.h"
#include "nlohmann/json.hpp"

namespace warp::computed::serve {

struct ResponsesRequest {
  CompletionRequest chat;               // what the engine serves
  nlohmann::ordered_json conversation;  // the input items, the previous response's first
  // What the response object repeats: instructions, tools, tool_choice,
  // temperature, top_p, max_output_tokens, previous_response_id, text,
  // reasoning, metadata, store, parallel_tool_calls.
  nlohmann::ordered_json echo;
  bool store = true;  // keep the conversation for a later previous_response_id
};

std::variant<ResponsesRequest, ApiError> ParseResponsesRequest(std::string_view body,
                                                               const ResponseStore& store);

}  // namespace warp::computed::serve
