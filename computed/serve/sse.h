#pragma once

// JSON as the server writes it, and server-sent events: one place for both,
// so that a model's invalid UTF-8 (half a character) is replaced, never
// thrown on, in every body and event of every API.
//
// Thread-safe: pure functions.

#include <string>

#include "nlohmann/json.hpp"

namespace warp::computed::serve {

// `json` as text (nlohmann::json or ordered_json).
template <typename Json = nlohmann::json>
std::string Dump(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// "data: JSON\n\n" (OpenAI's chat and completion streams).
template <typename Json = nlohmann::json>
std::string SseEvent(const Json& data) {
  return "data: " + Dump(data) + "\n\n";
}

// "event: TYPE\ndata: JSON\n\n", TYPE being data's "type" (Anthropic's and
// the Responses API's streams).
template <typename Json = nlohmann::json>
std::string NamedSseEvent(const Json& data) {
  return "event: " + data.value("type", std::string("message")) + "\ndata: " + Dump(data) + "\n\n";
}

}  // namespace warp::computed::serve
