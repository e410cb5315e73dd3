#pragma once

// ApiError: a request the server refuses, as the OpenAI API reports it — an
// HTTP status and the body {"error": {"message", "type", "param", "code"}}
// that the `openai` client libraries turn into their exceptions — or as
// Anthropic's does.

#include <string>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace warp::computed::serve {

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the request field at fault; empty: none
  std::string code;   // e.g. "invalid_api_key", "context_length_exceeded"; empty: none

  nlohmann::json ToJson() const;
  // Anthropic's shape: {"type": "error", "error": {"type", "message"}}, the
  // type from the HTTP status (invalid_request_error, authentication_error,
  // not_found_error, request_too_large, rate_limit_error, overloaded_error,
  // api_error).
  nlohmann::json ToAnthropicJson() const;
};

// 400 invalid_request_error naming `param`.
ApiError BadRequest(std::string param, std::string message);
// The status of an engine call, as a reply: InvalidArgument and
// OutOfRange 400, ResourceExhausted 400 context_length_exceeded (what OpenAI
// answers for a prompt too long), NotFound 404, Unavailable 503, the rest 500
// server_error.
ApiError FromStatus(const absl::Status& status);

}  // namespace warp::computed::serve
