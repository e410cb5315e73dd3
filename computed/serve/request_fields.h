#pragma once

// The field checks the request parsers of every API share (OpenAI chat and
// completions, Anthropic Messages, OpenAI Responses): each refusal is a 400
// naming the field. A null field is an absent one.
//
// Thread-compatible.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "absl/status/statusor.h"
#include "computed/serve/api_error.h"
#include "nlohmann/json.hpp"

namespace warp::computed::serve {

// A response_format (chat: the schema under "json_schema") or text.format
// (Responses: the schema beside "type") named `field`, as
// CompletionRequest::output_format: null for text, {"type": "json_object"} or
// {"type": "json_schema", "schema": S}.
std::variant<nlohmann::ordered_json, ApiError> ParseOutputFormat(const nlohmann::ordered_json& format,
                                                                 const std::string& field,
                                                                 bool schema_nested);

// The body as JSON: InvalidArgument if it nests too deep or does not parse.
absl::StatusOr<nlohmann::ordered_json> ParseRequestBody(std::string_view body);

class RequestFields {
 public:
  using Json = nlohmann::ordered_json;

  // REQUIRES: `body` outlives this.
  explicit RequestFields(const Json& body) : body_(body) {}

  const Json* Find(const std::string& key) const;
  std::optional<ApiError> String(const std::string& key, std::string* out, bool required) const;
  std::optional<ApiError> Bool(const std::string& key, bool* out) const;
  // A finite number in [low, high]; low excluded when `open_low`.
  std::optional<ApiError> Number(const std::string& key, double low, double high, bool open_low,
                                 float* out) const;
  // An integer in [1, 2^32 - 1].
  std::optional<ApiError> MaxTokens(const std::string& key, std::optional<uint32_t>* out) const;
  // A required, non-empty array.
  std::optional<ApiError> NonEmptyArray(const std::string& key, const Json** out) const;
  // top_k: an integer in [0, 2^32 - 1] (0: off).
  std::optional<ApiError> TopK(uint32_t* out) const;

 private:
  const Json& body_;
};

}  // namespace warp::computed::serve
