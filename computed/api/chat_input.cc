#include "computed/api/chat_input.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/json_depth.h"
#include "common/status.h"

namespace warp::api {
namespace {

using json = nlohmann::ordered_json;

// Variables apply_chat_template sets itself, and where they come from here.
constexpr std::pair<const char*, const char*> kReservedVariables[] = {
    {"messages", "messages_json"},
    {"tools", "tools_json"},
    {"documents", "apply_chat_template (not supported)"},
    {"add_generation_prompt", "the add_generation_prompt argument"},
};

// `text` parsed; InvalidArgument naming `argument` and nlohmann's position.
absl::StatusOr<json> ParseJson(std::string_view text, const char* argument) {
  WARP_RETURN_IF_ERROR(CheckJsonDepth(text, argument));
  try {  // nlohmann reports the position only through its exception
    return json::parse(text);
  } catch (const json::exception& error) {  // parse_error, or out_of_range (1e400)
    return absl::InvalidArgumentError(absl::StrCat(argument, ": not valid JSON: ", error.what()));
  }
}

absl::StatusOr<json> ParseTools(const char* text) {
  WARP_ASSIGN_OR_RETURN(json tools, ParseJson(text, "tools_json"));
  if (!tools.is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tools_json: expected a JSON array of tool definitions, got ", tools.type_name()));
  }
  for (size_t i = 0; i < tools.size(); ++i) {
    if (!tools[i].is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tools_json: [", i, "]: expected an object (a tool definition such as ",
          "{\"type\": \"function\", \"function\": {...}}), got ", tools[i].type_name()));
    }
  }
  return tools;
}

absl::StatusOr<json> ParseKwargs(const char* text) {
  WARP_ASSIGN_OR_RETURN(json kwargs, ParseJson(text, "template_kwargs_json"));
  if (!kwargs.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("template_kwargs_json: expected a JSON object such as ",
                     "{\"enable_thinking\": false}, got ", kwargs.type_name()));
  }
  for (const auto& [name, source] : kReservedVariables) {
    if (kwargs.contains(name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "template_kwargs_json: \"", name, "\" is not a template kwarg; it comes from ", source));
    }
  }
  return kwargs;
}

}  // namespace

absl::StatusOr<json> ParseMessages(std::string_view text) {
  WARP_ASSIGN_OR_RETURN(json value, ParseJson(text, "messages_json"));
  if (value.is_object() && value.contains("messages")) value = value["messages"];
  if (!value.is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat("messages_json: expected a list of {\"role\", \"content\"} messages or ",
                     "{\"messages\": [...]}, got ", value.type_name()));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    const json& message = value[i];
    if (!message.is_object() || !message.contains("role") || !message["role"].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "messages_json: messages[", i, "]: expected an object with a string \"role\""));
    }
  }
  return value;
}

absl::StatusOr<json> ParseTemplateContext(const char* tools_json,
                                          const char* template_kwargs_json) {
  json context = json::object();
  if (template_kwargs_json != nullptr) {
    WARP_ASSIGN_OR_RETURN(context, ParseKwargs(template_kwargs_json));
  }
  if (tools_json != nullptr) {
    WARP_ASSIGN_OR_RETURN(context["tools"], ParseTools(tools_json));
  }
  return context;
}

}  // namespace warp::api
