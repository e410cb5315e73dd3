#include "computed/serve/responses_request.h"

#include <limits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/json_depth.h"
#include "computed/serve/request_fields.h"

namespace warp::computed::serve {
namespace {

using Json = nlohmann::ordered_json;

// Fields WARP reads, or that change nothing here.
const std::set<std::string> kKnownFields = {"model",
                                            "input",
                                            "instructions",
                                            "tools",
                                            "tool_choice",
                                            "max_output_tokens",
                                            "temperature",
                                            "top_p",
                                            "text",
                                            "reasoning",
                                            "stream",
                                            "previous_response_id",
                                            "store",
                                            "metadata",
                                            "user",
                                            "parallel_tool_calls",
                                            "truncation",
                                            "service_tier",
                                            "include",
                                            "prompt_cache_key",
                                            "safety_identifier",
                                            "background"};
const std::set<std::string> kRoles = {"user", "assistant", "system", "developer"};

class ResponsesParser {
 public:
  ResponsesParser(const Json& body, const ResponseStore& store, ResponsesRequest& out)
      : body_(body), store_(store), out_(out), fields_(body) {}

  std::optional<ApiError> Run() {
    if (!body_.is_object()) return BadRequest("", "the request body must be a JSON object");
    for (const auto& [key, value] : body_.items()) {
      if (!kKnownFields.contains(key)) {
        return BadRequest(key, absl::StrCat(key, ": not a field WARP serves"));
      }
    }
    CompletionRequest& chat = out_.chat;
    chat.endpoint = Endpoint::kChat;
    chat.messages = Json::array();
    if (auto e = fields_.String("model", &chat.model, /*required=*/false)) return e;
    if (const Json* background = fields_.Find("background");
        background != nullptr && *background != false) {
      return BadRequest("background", "background: true is not supported");
    }
    if (auto e = Previous()) return e;
    if (auto e = Instructions()) return e;
    if (auto e = Input()) return e;
    if (auto e = Messages()) return e;
    if (auto e = Tools()) return e;
    if (auto e = Format()) return e;
    if (auto e = fields_.MaxTokens("max_output_tokens", &chat.max_tokens)) return e;
    chat.sampling.temperature = 1.0f;
    if (auto e = fields_.Number("temperature", 0, 2, false, &chat.sampling.temperature)) return e;
    if (auto e = fields_.Number("top_p", 0, 1, true, &chat.sampling.top_p)) return e;
    if (auto e = fields_.Bool("stream", &chat.stream)) return e;
    if (auto e = fields_.Bool("store", &out_.store)) return e;
    if (const Json* reasoning = fields_.Find("reasoning")) {
      if (!reasoning->is_object()) return BadRequest("reasoning", "reasoning must be an object");
      if (const auto effort = reasoning->find("effort");
          effort != reasoning->end() && !effort->is_null()) {
        if (!effort->is_string() || (*effort != "minimal" && *effort != "low" &&
                                     *effort != "medium" && *effort != "high")) {
          return BadRequest(
              "reasoning.effort",
              "reasoning.effort must be \"minimal\", \"low\", \"medium\" or \"high\"");
        }
        chat.template_kwargs["reasoning_effort"] = *effort;
      }
    }
    for (const char* key :
         {"instructions", "tools", "tool_choice", "temperature", "top_p", "max_output_tokens",
          "previous_response_id", "text", "reasoning", "metadata", "parallel_tool_calls"}) {
      const Json* value = fields_.Find(key);
      out_.echo[key] = value != nullptr ? *value : Json(nullptr);
    }
    out_.echo["store"] = out_.store;
    return std::nullopt;
  }

 private:
  std::optional<ApiError> Previous() {
    out_.conversation = Json::array();
    const Json* previous = fields_.Find("previous_response_id");
    if (previous == nullptr) return std::nullopt;
    if (!previous->is_string()) {
      return BadRequest("previous_response_id", "previous_response_id must be a string");
    }
    std::optional<Json> conversation = store_.Get(previous->get<std::string>());
    if (!conversation) {
      return BadRequest(
          "previous_response_id",
          absl::StrCat("previous_response_id: no response \"", previous->get<std::string>(),
                       "\" is held (the server keeps the last ", store_.capacity(),
                       " stored responses in memory, none from before a restart)"));
    }
    out_.conversation = *std::move(conversation);
    return std::nullopt;
  }

  std::optional<ApiError> Instructions() {
    const Json* instructions = fields_.Find("instructions");
    if (instructions == nullptr) return std::nullopt;
    if (!instructions->is_string()) {
      return BadRequest("instructions", "instructions must be a string");
    }
    out_.chat.messages.push_back({{"role", "system"}, {"content", *instructions}});
    return std::nullopt;
  }

  // This request's input, appended to the conversation.
  std::optional<ApiError> Input() {
    const Json* input = fields_.Find("input");
    if (input == nullptr) return BadRequest("input", "input is required");
    first_new_ = out_.conversation.size();
    if (input->is_string()) {
      out_.conversation.push_back({{"type", "message"}, {"role", "user"}, {"content", *input}});
      return std::nullopt;
    }
    if (!input->is_array() || input->empty()) {
      return BadRequest("input", "input must be a string or a non-empty array of items");
    }
    for (const Json& item : *input) out_.conversation.push_back(item);
    return std::nullopt;
  }

  // The whole conversation as chat messages; items of this request are
  // named by their place in `input`.
  std::optional<ApiError> Messages() {
    std::set<std::string> call_ids;
    const Json& items = out_.conversation;
    for (size_t i = 0; i < items.size(); ++i) {
      const Json& item = items[i];
      const std::string at = i >= first_new_ ? absl::StrCat("input[", i - first_new_, "]")
                                             : absl::StrCat("the previous response's item ", i);
      if (!item.is_object()) return BadRequest(at, absl::StrCat(at, " must be an object"));
      const std::string type = item.value("type", item.contains("role") ? "message" : "");
      if (type == "message") {
        if (auto e = Message(item, at)) return e;
      } else if (type == "function_call") {
        if (!item.contains("call_id") || !item["call_id"].is_string() || !item.contains("name") ||
            !item["name"].is_string() || !item.contains("arguments") ||
            !item["arguments"].is_string()) {
          return BadRequest(at, absl::StrCat(at,
                                             " must be {\"type\": \"function_call\", \"call_id\": "
                                             "STRING, \"name\": STRING, \"arguments\": STRING}"));
        }
        call_ids.insert(item["call_id"].get<std::string>());
        Json call = {{"id", item["call_id"]},
                     {"type", "function"},
                     {"function", {{"name", item["name"]}, {"arguments", item["arguments"]}}}};
        Json& messages = out_.chat.messages;
        // Calls right after an assistant turn (or after each other) are its tool_calls.
        if (messages.empty() || messages.back()["role"] != "assistant") {
          messages.push_back({{"role", "assistant"}, {"content", ""}});
        }
        messages.back()["tool_calls"].push_back(std::move(call));
      } else if (type == "function_call_output") {
        const auto id = item.find("call_id");
        if (id == item.end() || !id->is_string() || !item.contains("output") ||
            !item["output"].is_string()) {
          return BadRequest(at, absl::StrCat(at,
                                             " must be {\"type\": \"function_call_output\", "
                                             "\"call_id\": STRING, \"output\": STRING}"));
        }
        if (!call_ids.contains(id->get<std::string>())) {
          return BadRequest(at + ".call_id",
                            absl::StrCat(at, ".call_id: no function_call with call_id \"",
                                         id->get<std::string>(), "\" comes before it"));
        }
        out_.chat.messages.push_back(
            {{"role", "tool"}, {"tool_call_id", *id}, {"content", item["output"]}});
      } else if (type == "reasoning") {
        // Past reasoning: the chat templates drop it from earlier turns too.
      } else {
        return BadRequest(at + ".type", absl::StrCat(at, ": items of type \"", type,
                                                     "\" are not supported (message, "
                                                     "function_call, function_call_output)"));
      }
    }
    if (out_.chat.messages.empty()) return BadRequest("input", "input holds no message");
    return std::nullopt;
  }

  std::optional<ApiError> Message(const Json& item, const std::string& at) {
    const std::string role =
        item.contains("role") && item["role"].is_string() ? item["role"].get<std::string>() : "";
    if (!kRoles.contains(role)) {
      return BadRequest(at + ".role",
                        absl::StrCat(at, ".role must be user, assistant, system or developer"));
    }
    const auto content = item.find("content");
    if (content == item.end() || !(content->is_string() || content->is_array())) {
      return BadRequest(at + ".content",
                        absl::StrCat(at, ".content must be a string or an array of parts"));
    }
    std::string text;
    if (content->is_string()) {
      text = content->get<std::string>();
    } else {
      std::vector<std::string> parts;
      for (size_t j = 0; j < content->size(); ++j) {
        const Json& part = (*content)[j];
        const std::string part_at = absl::StrCat(at, ".content[", j, "]");
        const std::string type = part.is_object() ? part.value("type", "") : "";
        if ((type != "input_text" && type != "output_text") || !part.contains("text") ||
            !part["text"].is_string()) {
          return BadRequest(part_at,
                            absl::StrCat(part_at, ": parts of type \"", type,
                                         "\" are not supported (input_text, output_text: WARP "
                                         "serves text models)"));
        }
        parts.push_back(part["text"].get<std::string>());
      }
      text = absl::StrJoin(parts, "\n");
    }
    out_.chat.messages.push_back({{"role", role}, {"content", text}});
    return std::nullopt;
  }

  std::optional<ApiError> Tools() {
    if (const Json* tools = fields_.Find("tools")) {
      if (!tools->is_array()) return BadRequest("tools", "tools must be an array");
      Json functions = Json::array();
      for (size_t i = 0; i < tools->size(); ++i) {
        const Json& tool = (*tools)[i];
        const std::string at = absl::StrCat("tools[", i, "]");
        const std::string type = tool.is_object() ? tool.value("type", "") : "";
        if (type != "function") {
          return BadRequest(at + ".type",
                            absl::StrCat(at, ": tools of type \"", type,
                                         "\" are not supported (function tools only)"));
        }
        if (!tool.contains("name") || !tool["name"].is_string()) {
          return BadRequest(at + ".name", absl::StrCat(at, ".name must be a string"));
        }
        Json function = {{"name", tool["name"]}};
        if (tool.contains("description")) function["description"] = tool["description"];
        if (tool.contains("parameters") && !tool["parameters"].is_null()) {
          function["parameters"] = tool["parameters"];
        }
        functions.push_back({{"type", "function"}, {"function", std::move(function)}});
      }
      if (!functions.empty()) out_.chat.tools = std::move(functions);
    }
    if (const Json* choice = fields_.Find("tool_choice")) {
      if (*choice == "auto" || *choice == "none" || *choice == "required") {
        out_.chat.tool_choice = *choice;
      } else if (choice->is_object() && choice->value("type", "") == "function" &&
                 choice->contains("name") && (*choice)["name"].is_string()) {
        out_.chat.tool_choice = {{"type", "function"},
                                 {"function", {{"name", (*choice)["name"]}}}};
      } else {
        return BadRequest("tool_choice",
                          "tool_choice must be \"auto\", \"none\", \"required\" or "
                          "{\"type\": \"function\", \"name\": STRING}");
      }
    }
    if (auto e = fields_.Bool("parallel_tool_calls", &out_.chat.parallel_tool_calls)) return e;
    return std::nullopt;
  }

  std::optional<ApiError> Format() {
    const Json* text = fields_.Find("text");
    if (text == nullptr) return std::nullopt;
    if (!text->is_object()) return BadRequest("text", "text must be an object");
    const auto format = text->find("format");
    if (format == text->end() || format->is_null()) return std::nullopt;
    std::variant<Json, ApiError> parsed =
        ParseOutputFormat(*format, "text.format", /*schema_nested=*/false);
    if (ApiError* error = std::get_if<ApiError>(&parsed)) return *error;
    out_.chat.output_format = std::get<Json>(std::move(parsed));
    out_.chat.output_format_field = "text.format";
    return std::nullopt;
  }

  const Json& body_;
  const ResponseStore& store_;
  ResponsesRequest& out_;
  const RequestFields fields_;
  size_t first_new_ = 0;  // the conversation's first item of this request's input
};

}  // namespace

std::variant<ResponsesRequest, ApiError> ParseResponsesRequest(std::string_view body,
                                                               const ResponseStore& store) {
  absl::StatusOr<Json> json = ParseRequestBody(body);
  if (!json.ok()) return BadRequest("", std::string(json.status().message()));
  ResponsesRequest request;
  if (std::optional<ApiError> error = ResponsesParser(*json, store, request).Run()) {
    return *std::move(error);
  }
  return request;
}

}  // namespace warp::computed::serve
