#include "computed/serve/request_fields.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/json_depth.h"

namespace warp::computed::serve {

absl::StatusOr<nlohmann::ordered_json> ParseRequestBody(std::string_view body) {
  if (absl::Status depth = CheckJsonDepth(body, "the request body"); !depth.ok()) return depth;
  try {
    return nlohmann::ordered_json::parse(body);
  } catch (const nlohmann::ordered_json::exception&
               error) {  // nlohmann reports syntax errors only this way
    return absl::InvalidArgumentError(
        absl::StrCat("the request body is not valid JSON: ", error.what()));
  }
}

const RequestFields::Json* RequestFields::Find(const std::string& key) const {
  const auto it = body_.find(key);
  return it == body_.end() || it->is_null() ? nullptr : &*it;
}

std::optional<ApiError> RequestFields::String(const std::string& key, std::string* out,
                                              bool required) const {
  const Json* value = Find(key);
  if (value == nullptr) {
    if (required) return BadRequest(key, absl::StrCat(key, " is required"));
    return std::nullopt;
  }
  if (!value->is_string()) return BadRequest(key, absl::StrCat(key, " must be a string"));
  *out = value->get<std::string>();
  return std::nullopt;
}

std::optional<ApiError> RequestFields::Bool(const std::string& key, bool* out) const {
  const Json* value = Find(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_boolean()) return BadRequest(key, absl::StrCat(key, " must be a boolean"));
  *out = value->get<bool>();
  return std::nullopt;
}

std::optional<ApiError> RequestFields::Number(const std::string& key, double low, double high,
                                              bool open_low, float* out) const {
  const Json* value = Find(key);
  if (value == nullptr) return std::nullopt;
  const double x = value->is_number() ? value->get<double>() : std::nan("");
  if (!std::isfinite(x) || x < low || x > high || (open_low && x == low)) {
    return BadRequest(key, absl::StrCat(key, " must be a number in ", open_low ? "(" : "[", low,
                                        ", ", high, "]"));
  }
  *out = static_cast<float>(x);
  return std::nullopt;
}

std::optional<ApiError> RequestFields::MaxTokens(const std::string& key,
                                                 std::optional<uint32_t>* out) const {
  const Json* value = Find(key);
  if (value == nullptr) return std::nullopt;
  if (!value->is_number_integer() || (!value->is_number_unsigned() && value->get<int64_t>() < 1) ||
      (value->is_number_unsigned() && value->get<uint64_t>() < 1)) {
    return BadRequest(key, absl::StrCat(key, " must be an integer of at least 1"));
  }
  if (value->is_number_unsigned() &&
      value->get<uint64_t>() > std::numeric_limits<uint32_t>::max()) {
    return BadRequest(key, absl::StrCat(key, " is ", value->get<uint64_t>(), "; at most ",
                                        std::numeric_limits<uint32_t>::max(),
                                        " (and the context bounds the reply)"));
  }
  *out = static_cast<uint32_t>(value->get<int64_t>());
  return std::nullopt;
}

std::optional<ApiError> RequestFields::NonEmptyArray(const std::string& key,
                                                     const Json** out) const {
  *out = Find(key);
  if (*out == nullptr) return BadRequest(key, absl::StrCat(key, " is required"));
  if (!(*out)->is_array() || (*out)->empty()) {
    return BadRequest(key, absl::StrCat(key, " must be a non-empty array"));
  }
  return std::nullopt;
}

std::optional<ApiError> RequestFields::TopK(uint32_t* out) const {
  const Json* top_k = Find("top_k");
  if (top_k == nullptr) return std::nullopt;
  if (!top_k->is_number_integer() || top_k->get<int64_t>() < 0 ||
      top_k->get<int64_t>() > std::numeric_limits<uint32_t>::max()) {
    return BadRequest("top_k", "top_k must be an integer of at least 0 (0: off)");
  }
  *out = static_cast<uint32_t>(top_k->get<int64_t>());
  return std::nullopt;
}

std::variant<nlohmann::ordered_json, ApiError> ParseOutputFormat(const nlohmann::ordered_json& format,
                                                                 const std::string& field,
                                                                 bool schema_nested) {
  using Json = nlohmann::ordered_json;
  const std::string type = format.is_object() && format.contains("type") && format["type"].is_string()
                               ? format["type"].get<std::string>()
                               : "";
  if (type == "text") return Json();
  if (type == "json_object") return Json{{"type", "json_object"}};
  if (type != "json_schema") {
    return BadRequest(field, absl::StrCat(field,
                                          " must be {\"type\": \"text\"}, {\"type\": "
                                          "\"json_object\"} or {\"type\": \"json_schema\", ...}"));
  }
  const Json* holder = &format;
  std::string at = field;
  if (schema_nested) {
    const auto nested = format.find("json_schema");
    if (nested == format.end() || !nested->is_object()) {
      return BadRequest(field + ".json_schema", absl::StrCat(field, ".json_schema must be an object"));
    }
    holder = &*nested;
    at += ".json_schema";
  }
  const auto schema = holder->find("schema");
  if (schema == holder->end() || !(schema->is_object() || schema->is_boolean())) {
    return BadRequest(at + ".schema", absl::StrCat(at, ".schema must be a JSON schema object"));
  }
  return Json{{"type", "json_schema"}, {"schema", *schema}};
}

}  // namespace warp::computed::serve
