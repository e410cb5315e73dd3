#include "computed/serve/api_error.h"

#include <utility>

namespace warp::computed::serve {

nlohmann::json ApiError::ToJson() const {
  nlohmann::json error = {{"message", message}, {"type", type}};
  error["param"] = param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param);
  error["code"] = code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code);
  return {{"error", error}};
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
