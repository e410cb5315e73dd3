#include "computed/serve/api_error.h"

#include <utility>

namespace warp::computed::serve {

nlohmann::json ApiError::ToJson() const {
  nlohmann::json error = {{"message", message}, {"type", type}};
  error["param"] = param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param);
  error["code"] = code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code);
  return {{"error", error}};
}

nlohmann::json ApiError::ToAnthropicJson() const {
  const char* anthropic_type = "api_error";
  switch (http_status) {
    case 400: anthropic_type = "invalid_request_error"; break;
    case 401: anthropic_type = "authentication_error"; break;
    case 403: anthropic_type = "permission_error"; break;
    case 404: anthropic_type = "not_found_error"; break;
    case 408: anthropic_type = "timeout_error"; break;
    case 413: anthropic_type = "request_too_large"; break;
    case 429: anthropic_type = "rate_limit_error"; break;
    case 503:
    case 529: anthropic_type = "overloaded_error"; break;
  }
  return {{"type", "error"}, {"error", {{"type", anthropic_type}, {"message", message}}}};
}

ApiError BadRequest(std::string param, std::string message) {
  return ApiError{.http_status = 400, .message = std::move(message), .param = std::move(param)};
}

ApiError FromStatus(const absl::Status& status) {
  ApiError error{.message = std::string(status.message())};
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      error.http_status = 400;
      break;
    case absl::StatusCode::kResourceExhausted:
      error.http_status = 400;
      error.code = "context_length_exceeded";
      break;
    case absl::StatusCode::kNotFound:
      error.http_status = 404;
      error.type = "not_found_error";
      break;
    case absl::StatusCode::kUnavailable:
      error.http_status = 503;
      error.type = "server_error";
      break;
    default:
      error.http_status = 500;
      error.type = "server_error";
  }
  return error;
}

}  // namespace warp::computed::serve
