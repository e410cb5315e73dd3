#include "computed/serve/messages_request.h"

#include <limits>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "computed/serve/request_fields.h"

namespace warp::computed::serve {
namespace {

using Json = nlohmann::ordered_json;

constexpr size_t kMaxStopSequences = 16;

// Top-level fields of a Messages request that WARP reads or may ignore.
const std::set<std::string> kKnownFields = {
    "model",          "messages", "system",   "max_tokens",  "temperature",
    "top_p",          "top_k",    "stream",   "tools",       "tool_choice",
    "stop_sequences", "metadata", "thinking", "service_tier"};
// Fields count_tokens takes.
const std::set<std::string> kCountFields = {"model", "messages",    "system",
                                            "tools", "tool_choice", "thinking"};

class MessagesParser {
 public:
  MessagesParser(const Json& body, bool count_tokens, CompletionRequest& out)
      : body_(body), count_tokens_(count_tokens), out_(out), fields_(body) {}

  std::optional<ApiError> Run() {
    if (!body_.is_object()) return BadRequest("", "the request body must be a JSON object");
    for (const auto& [key, value] : body_.items()) {
      if (!(count_tokens_ ? kCountFields : kKnownFields).contains(key)) {
        return BadRequest(key, absl::StrCat(key, ": not a field WARP serves",
                                            count_tokens_ ? " in count_tokens" : ""));
      }
    }
    const Json* model = Find("model");
    if (model == nullptr || !model->is_string()) {
      return BadRequest("model", "model is required (a string; any name serves the one model)");
    }
    out_.model = model->get<std::string>();
    if (auto e = System()) return e;
    if (auto e = Messages()) return e;
    if (auto e = Tools()) return e;
    if (auto e = Thinking()) return e;
    if (count_tokens_) return std::nullopt;
    if (auto e = MaxTokens()) return e;
    if (auto e = Sampling()) return e;
    if (auto e = StopSequences()) return e;
    if (const Json* stream = Find("stream")) {
      if (!stream->is_boolean()) return BadRequest("stream", "stream must be a boolean");
      out_.stream = stream->get<bool>();
    }
    if (const Json* metadata = Find("metadata"); metadata != nullptr && !metadata->is_object()) {
      return BadRequest("metadata", "metadata must be an object");
    }
    return std::nullopt;
  }

 private:
  const Json* Find(const std::string& key) const { return fields_.Find(key); }

  // A text block list's text, or the error naming `at`.
  static std::optional<ApiError> TextOf(const Json& content, const std::string& at,
                                        std::string* text) {
    if (content.is_string()) {
      *text = content.get<std::string>();
      return std::nullopt;
    }
    if (!content.is_array()) {
      return BadRequest(at, absl::StrCat(at, " must be a string or an array of text blocks"));
    }
    std::vector<std::string> parts;
    for (size_t j = 0; j < content.size(); ++j) {
      const std::string block_at = absl::StrCat(at, "[", j, "]");
      if (std::optional<ApiError> e = TextBlock(content[j], block_at, &parts)) return e;
    }
    *text = absl::StrJoin(parts, "\n");
    return std::nullopt;
  }

  static std::optional<ApiError> TextBlock(const Json& block, const std::string& at,
                                           std::vector<std::string>* parts) {
    if (!block.is_object() || block.value("type", "") != "text" || !block.contains("text") ||
        !block["text"].is_string()) {
      return BadRequest(at, absl::StrCat(at, " must be {\"type\": \"text\", \"text\": STRING}"));
    }
    parts->push_back(block["text"].get<std::string>());
    return std::nullopt;
  }

  std::optional<ApiError> System() {
    const Json* system = Find("system");
    if (system == nullptr) return std::nullopt;
    std::string text;
    if (auto e = TextOf(*system, "system", &text)) return e;
    out_.messages.push_back({{"role", "system"}, {"content", text}});
    return std::nullopt;
  }

  std::optional<ApiError> Messages() {
    const Json* messages = nullptr;
    if (auto e = fields_.NonEmptyArray("messages", &messages)) return e;
    for (size_t i = 0; i < messages->size(); ++i) {
      if (auto e = Message((*messages)[i], absl::StrCat("messages[", i, "]"))) return e;
    }
    return std::nullopt;
  }

  std::optional<ApiError> Message(const Json& m, const std::string& at) {
    if (!m.is_object()) return BadRequest(at, absl::StrCat(at, " must be an object"));
    const std::string role =
        m.contains("role") && m["role"].is_string() ? m["role"].get<std::string>() : "";
    if (role != "user" && role != "assistant") {
      return BadRequest(at + ".role", absl::StrCat(at, ".role must be \"user\" or \"assistant\""));
    }
    const auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
      return BadRequest(at + ".content", absl::StrCat(at, ".content is required"));
    }
    if (content->is_string()) {
      out_.messages.push_back({{"role", role}, {"content", *content}});
      return std::nullopt;
    }
    if (!content->is_array()) {
      return BadRequest(at + ".content",
                        absl::StrCat(at, ".content must be a string or an array of blocks"));
    }
    std::vector<std::string> texts, thinking;
    Json tool_calls = Json::array();
    Json tool_results = Json::array();  // "tool" messages, before the user's text
    for (size_t j = 0; j < content->size(); ++j) {
      const Json& block = (*content)[j];
      const std::string block_at = absl::StrCat(at, ".content[", j, "]");
      const std::string type =
          block.is_object() && block.contains("type") && block["type"].is_string()
              ? block["type"].get<std::string>()
              : "";
      if (type == "text") {
        if (auto e = TextBlock(block, block_at, &texts)) return e;
      } else if (type == "tool_use" && role == "assistant") {
        if (!block.contains("id") || !block["id"].is_string() || !block.contains("name") ||
            !block["name"].is_string() || !block.contains("input") || !block["input"].is_object()) {
          return BadRequest(block_at, absl::StrCat(block_at,
                                                   " must be {\"type\": \"tool_use\", \"id\": "
                                                   "STRING, \"name\": STRING, \"input\": OBJECT}"));
        }
        tool_use_ids_.insert(block["id"].get<std::string>());
        tool_calls.push_back(
            {{"id", block["id"]},
             {"type", "function"},
             {"function", {{"name", block["name"]}, {"arguments", block["input"].dump()}}}});
      } else if (type == "tool_result" && role == "user") {
        const auto id = block.find("tool_use_id");
        if (id == block.end() || !id->is_string()) {
          return BadRequest(block_at + ".tool_use_id",
                            absl::StrCat(block_at, ".tool_use_id must be a string"));
        }
        if (!tool_use_ids_.contains(id->get<std::string>())) {
          return BadRequest(block_at + ".tool_use_id",
                            absl::StrCat(block_at, ".tool_use_id: no tool_use block with id \"",
                                         id->get<std::string>(), "\" comes before it"));
        }
        std::string text;
        if (block.contains("content") && !block["content"].is_null()) {
          if (auto e = TextOf(block["content"], block_at + ".content", &text)) return e;
        }
        tool_results.push_back({{"role", "tool"}, {"tool_call_id", *id}, {"content", text}});
      } else if (type == "thinking" && role == "assistant") {
        if (!block.contains("thinking") || !block["thinking"].is_string()) {
          return BadRequest(block_at, absl::StrCat(block_at, ".thinking must be a string"));
        }
        thinking.push_back(block["thinking"].get<std::string>());
      } else if (type == "redacted_thinking" && role == "assistant") {
        // Encrypted elsewhere; nothing for a local template to show.
      } else if (type == "image" || type == "document") {
        return BadRequest(block_at, absl::StrCat(block_at, ": ", type,
                                                 " blocks are not supported (WARP serves text "
                                                 "models)"));
      } else {
        return BadRequest(block_at, absl::StrCat(block_at, ": a ", role,
                                                 " message cannot hold a block of type \"",
                                                 type.empty() ? "(none)" : type, "\""));
      }
    }
    for (Json& result : tool_results) out_.messages.push_back(std::move(result));
    if (role == "user" && texts.empty() && !tool_results.empty()) return std::nullopt;
    Json message = {{"role", role}, {"content", absl::StrJoin(texts, "\n")}};
    if (!thinking.empty()) message["reasoning_content"] = absl::StrJoin(thinking, "\n");
    if (!tool_calls.empty()) message["tool_calls"] = std::move(tool_calls);
    out_.messages.push_back(std::move(message));
    return std::nullopt;
  }

  std::optional<ApiError> Tools() {
    if (const Json* tools = Find("tools")) {
      if (!tools->is_array()) return BadRequest("tools", "tools must be an array");
      Json functions = Json::array();
      for (size_t i = 0; i < tools->size(); ++i) {
        const Json& tool = (*tools)[i];
        const std::string at = absl::StrCat("tools[", i, "]");
        if (tool.is_object() && tool.contains("type") && tool["type"] != "custom") {
          return BadRequest(at + ".type",
                            absl::StrCat(at, ": server tools (type ", tool["type"].dump(),
                                         ") are not supported; declare a client tool"));
        }
        if (!tool.is_object() || !tool.contains("name") || !tool["name"].is_string() ||
            !tool.contains("input_schema") || !tool["input_schema"].is_object()) {
          return BadRequest(at, absl::StrCat(at,
                                             " must be {\"name\": STRING, \"description\": "
                                             "STRING, \"input_schema\": OBJECT}"));
        }
        Json function = {{"name", tool["name"]}};
        if (tool.contains("description")) function["description"] = tool["description"];
        function["parameters"] = tool["input_schema"];
        functions.push_back({{"type", "function"}, {"function", std::move(function)}});
      }
      if (!functions.empty()) out_.tools = std::move(functions);
    }
    if (const Json* choice = Find("tool_choice")) {
      const std::string type =
          choice->is_object() && choice->contains("type") && (*choice)["type"].is_string()
              ? (*choice)["type"].get<std::string>()
              : "";
      if (type == "auto" || type == "none") {
        out_.tool_choice = type;
      } else if (type == "any") {
        out_.tool_choice = "required";
      } else if (type == "tool" && choice->contains("name") && (*choice)["name"].is_string()) {
        out_.tool_choice = {{"type", "function"}, {"function", {{"name", (*choice)["name"]}}}};
      } else {
        return BadRequest("tool_choice",
                          "tool_choice must be {\"type\": \"auto\" | \"none\" | \"any\"} or "
                          "{\"type\": \"tool\", \"name\": STRING}");
      }
      if (const auto disable = choice->find("disable_parallel_tool_use"); disable != choice->end()) {
        if (!disable->is_boolean()) {
          return BadRequest("tool_choice",
                            "tool_choice.disable_parallel_tool_use must be a boolean");
        }
        out_.parallel_tool_calls = !disable->get<bool>();
      }
    }
    return std::nullopt;
  }

  std::optional<ApiError> Thinking() {
    const Json* thinking = Find("thinking");
    if (thinking == nullptr) return std::nullopt;
    const std::string type =
        thinking->is_object() && thinking->contains("type") && (*thinking)["type"].is_string()
            ? (*thinking)["type"].get<std::string>()
            : "";
    if (type == "enabled") {
      const auto budget = thinking->find("budget_tokens");
      if (budget == thinking->end() || !budget->is_number_integer() || budget->get<int64_t>() < 1) {
        return BadRequest("thinking.budget_tokens",
                          "thinking.budget_tokens must be an integer of at least 1");
      }
      out_.template_kwargs["enable_thinking"] = true;
    } else if (type == "disabled") {
      out_.template_kwargs["enable_thinking"] = false;
    } else {
      return BadRequest("thinking",
                        "thinking must be {\"type\": \"enabled\", \"budget_tokens\": "
                        "N} or {\"type\": \"disabled\"}");
    }
    return std::nullopt;
  }

  std::optional<ApiError> MaxTokens() {
    if (Find("max_tokens") == nullptr) return BadRequest("max_tokens", "max_tokens is required");
    return fields_.MaxTokens("max_tokens", &out_.max_tokens);
  }

  std::optional<ApiError> Sampling() {
    out_.sampling.temperature = 1.0f;  // Anthropic's default
    if (auto e = fields_.Number("temperature", 0, 1, false, &out_.sampling.temperature)) return e;
    if (auto e = fields_.Number("top_p", 0, 1, true, &out_.sampling.top_p)) return e;
    if (auto e = fields_.TopK(&out_.sampling.top_k)) return e;
    return std::nullopt;
  }

  std::optional<ApiError> StopSequences() {
    const Json* stops = Find("stop_sequences");
    if (stops == nullptr) return std::nullopt;
    if (!stops->is_array() || stops->size() > kMaxStopSequences) {
      return BadRequest("stop_sequences", absl::StrCat("stop_sequences must be an array of up to ",
                                                       kMaxStopSequences, " strings"));
    }
    for (size_t i = 0; i < stops->size(); ++i) {
      const Json& stop = (*stops)[i];
      if (!stop.is_string() || stop.get<std::string>().empty()) {
        const std::string at = absl::StrCat("stop_sequences[", i, "]");
        return BadRequest(at, absl::StrCat(at, " must be a non-empty string"));
      }
      out_.stop.push_back(stop.get<std::string>());
    }
    return std::nullopt;
  }

  const Json& body_;
  const bool count_tokens_;
  CompletionRequest& out_;
  const RequestFields fields_;
  std::set<std::string> tool_use_ids_;  // of the assistant turns so far
};

}  // namespace

std::variant<CompletionRequest, ApiError> ParseMessagesRequest(std::string_view body,
                                                               bool count_tokens) {
  absl::StatusOr<Json> json = ParseRequestBody(body);
  if (!json.ok()) return BadRequest("", std::string(json.status().message()));
  CompletionRequest request;
  request.endpoint = Endpoint::kChat;
  request.messages = Json::array();
  if (std::optional<ApiError> error = MessagesParser(*json, count_tokens, request).Run()) {
    return *std::move(error);
  }
  return request;
}

}  // namespace warp::computed::serve
